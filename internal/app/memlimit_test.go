package app

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// TestRunSetsMemoryLimit: Run sets the Go runtime's memory limit from the
// container's before anything else, so it is set even when the cluster
// cannot be reached; and leaves it alone when told to.
func TestRunSetsMemoryLimit(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("268435456\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	kubeconfig := filepath.Join(t.TempDir(), "missing-kubeconfig")

	for _, tc := range []struct {
		name       string
		fromCgroup bool
		want       int64
	}{
		{"on", true, 224 << 20}, // 256 MiB less 32 MiB
		{"off", false, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			err := Run(t.Context(), Options{Kubeconfig: kubeconfig, MemoryLimitFromCgroup: tc.fromCgroup, CgroupRoot: root}, nil)
			if err == nil {
				t.Fatal("Run with a missing kubeconfig returned no error")
			}
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("the Go memory limit is %d after Run, want %d", got, tc.want)
			}
		})
	}
}
