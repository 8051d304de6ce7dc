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

// Fraction and Reserve set what of the container's memory limit is left
// outside the Go runtime's: the larger of a tenth of it and Reserve.
//
// The runtime's limit counts the memory it has mapped and not released
// (heap, stacks, its own structures); it is soft (the heap may pass it
// until the next collection ends), and it does not count what else the
// kernel charges to the container: kernel memory held for the process, and
// the file-backed pages, the binary's above all. The benchmark measured the
// operator's file-backed resident pages at 28.9 MiB, and its anonymous ones
// within what the runtime counts (docs/benchmarks.md): a tenth of a
// 256 MiB limit would leave less than the binary's pages,
// which the kernel would then have to drop and read again. Hence Reserve,
// 32 MiB; above 320 MiB the tenth is the larger.
const (
	Fraction = 0.9
	Reserve  = 32 << 20
)

// MinContainerLimit is the smallest container limit the runtime is held
// under. Below it the operator cannot run at all (its binary's pages alone
// take about 30 MiB), and the runtime held at what is left, a few bytes for
// a memory.max of 1, would collect without end: no limit is set, and the
// kernel's OOM kill, which a person sees, ends the process instead.
const MinContainerLimit = 32 << 20

// WarnBelow is the container limit under which Apply warns: the operator
// runs, but its collector runs far more often than it should, and a burst
// of Robots may have it OOM-killed.
const WarnBelow = 96 << 20

// tooSmallWarning is Result.Warning for a limit under WarnBelow.
const tooSmallWarning = "the container's memory limit is under 96 MiB: the collector runs often, and the operator may be OOM-killed; " +
	"give it at least 128 MiB (the manifests ask for 256 MiB)"

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

// GoLimit is the Go runtime's memory limit for a container limit: what is
// left of it once the larger of a tenth and Reserve is set aside, but never
// less than half of it, where the runtime would collect without end. It is 0,
// no limit, for a container limit under MinContainerLimit.
func GoLimit(containerLimit uint64) int64 {
	if containerLimit < MinContainerLimit {
		return 0
	}
	limit := min(math.Floor(float64(containerLimit)*Fraction), float64(containerLimit)-Reserve)
	return int64(max(limit, math.Floor(float64(containerLimit)/2)))
}

// Result says what Apply did.
type Result struct {
	// ContainerLimit is the container's memory limit, 0 when it has none.
	ContainerLimit uint64
	// GoLimit is the limit set, 0 when none was.
	GoLimit int64
	// Skipped says why no limit was set, "" when one was.
	Skipped string
	// Warning, when set, is what a person should be told about the
	// container's limit: it is too small.
	Warning string
}

// Apply sets the Go runtime's memory limit to GoLimit of the limit the
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
	result := Result{ContainerLimit: limit}
	if limit < WarnBelow {
		result.Warning = tooSmallWarning
	}
	result.GoLimit = GoLimit(limit)
	if result.GoLimit == 0 {
		result.Skipped = "the container's memory limit is under 32 MiB, too small to hold the runtime under"
		return result, nil
	}
	debug.SetMemoryLimit(result.GoLimit)
	return result, nil
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
