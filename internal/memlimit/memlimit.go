package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Fraction is the part of the container's memory limit given to the Go
// runtime. The runtime's limit counts the memory it has mapped and not
// released (heap, stacks, its own structures), not all that the kernel
// charges to the container: the pages of the binary itself, kernel memory
// held for the process, the page cache of the files it reads. And it is
// soft: the heap may pass it until the next collection ends. A tenth of
// the limit is left for those, 25.6 MiB at the 256 MiB the manifests ship;
// the benchmark prints what the operator's RSS holds beyond what the limit
// counts, against which the tenth is checked.
const Fraction = 0.9

// DefaultRoot is where the cgroup file system is mounted in a container.
// A container runtime mounts the container's own cgroup there (under cgroup
// v2 through a private cgroup namespace, the default of containerd and
// CRI-O), so the files under it hold the container's limit. Outside a
// container they hold the host's, usually none.
const DefaultRoot = "/sys/fs/cgroup"

// The files that hold the container's memory limit, under the root: cgroup
// v2's, then cgroup v1's memory controller's.
const (
	v2File = "memory.max"
	v1File = "memory/memory.limit_in_bytes"
)

// noLimitAbove is where a limit stops being one. cgroup v1 says "no limit"
// with the largest page-aligned int64 (9223372036854771712); no machine a
// Kubernetes node runs on has an exbibyte.
const noLimitAbove = 1 << 60

// Limit returns the memory limit that the contents of the cgroup files say,
// and whether there is one. v2 is memory.max's content and v1 is
// memory.limit_in_bytes', each "" when the file does not exist; v2 wins
// when both exist. "max", an unparsable or zero value, or one at or above
// an exbibyte is no limit.
func Limit(v2, v1 string) (uint64, bool) {
	content := v1
	if v2 != "" {
		content = v2
	}
	content = strings.TrimSpace(content)
	if content == "" || content == "max" {
		return 0, false
	}
	limit, err := strconv.ParseUint(content, 10, 64)
	if err != nil || limit == 0 || limit >= noLimitAbove {
		return 0, false
	}
	return limit, true
}

// GoLimit is the Go runtime's memory limit for a container limit: Fraction
// of it.
func GoLimit(containerLimit uint64) int64 {
	return int64(math.Floor(float64(containerLimit) * Fraction))
}

// Result says what Apply did.
type Result struct {
	// ContainerLimit is the container's memory limit, 0 when it has none.
	ContainerLimit uint64
	// GoLimit is the limit set, 0 when none was.
	GoLimit int64
	// Skipped says why no limit was set, "" when one was.
	Skipped string
}

// Apply sets the Go runtime's memory limit to Fraction of the limit the
// cgroup files under root say, unless GOMEMLIMIT is set in the environment
// (getenv reads it): then the runtime has already applied it, and a person
// chose it. It sets nothing when the container has no limit.
func Apply(root string, getenv func(string) string) (Result, error) {
	if v := getenv("GOMEMLIMIT"); v != "" {
		return Result{Skipped: "GOMEMLIMIT is set (" + v + ")"}, nil
	}
	v2, err := readLimitFile(filepath.Join(root, v2File))
	if err != nil {
		return Result{}, err
	}
	v1, err := readLimitFile(filepath.Join(root, v1File))
	if err != nil {
		return Result{}, err
	}
	limit, ok := Limit(v2, v1)
	if !ok {
		return Result{Skipped: "the container has no memory limit"}, nil
	}
	goLimit := GoLimit(limit)
	debug.SetMemoryLimit(goLimit)
	return Result{ContainerLimit: limit, GoLimit: goLimit}, nil
}

// readLimitFile returns the content of the file at path, "" when it does
// not exist.
func readLimitFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the container's memory limit: %w", err)
	}
	return string(b), nil
}
