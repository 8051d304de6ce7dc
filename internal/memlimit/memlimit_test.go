package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		v2, v1 string
		want   uint64
		wantOK bool
	}{
		{"v2 limit", "268435456\n", "", 256 << 20, true},
		{"v2 without a limit", "max\n", "", 0, false},
		{"v1 limit", "", "536870912\n", 512 << 20, true},
		{"v1 without a limit: the largest page-aligned int64", "", "9223372036854771712\n", 0, false},
		{"v2 wins over v1", "268435456", "536870912", 256 << 20, true},
		{"v2 without a limit wins over a v1 limit", "max", "536870912", 0, false},
		{"neither file", "", "", 0, false},
		{"an exbibyte is no limit", "1152921504606846976", "", 0, false},
		{"just under an exbibyte is one", "1152921504606846975", "", 1<<60 - 1, true},
		{"zero", "0", "", 0, false},
		{"not a number", "lots", "", 0, false},
		{"negative", "-1", "", 0, false},
		{"spaces around", "  1048576 \n", "", 1 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Limit(tc.v2, tc.v1)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("Limit(%q, %q) = %d, %v; want %d, %v", tc.v2, tc.v1, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestGoLimit(t *testing.T) {
	for _, tc := range []struct {
		limit uint64
		want  int64
	}{
		{256 << 20, 224 << 20}, // 32 MiB set aside: more than a tenth
		{320 << 20, 288 << 20}, // where a tenth and 32 MiB are equal
		{1 << 30, 966367641},   // a tenth set aside: 0.9 × 1073741824 = 966367641.6
		{64 << 20, 32 << 20},   // 32 MiB set aside: half
		{40 << 20, 20 << 20},   // never less than half
		{MinContainerLimit, MinContainerLimit / 2},
		// Under the floor no limit is set: the runtime held at a few
		// bytes would collect without end.
		{MinContainerLimit - 1, 0},
		{4096, 0},
		{10, 0},
		{1, 0},
	} {
		if got := GoLimit(tc.limit); got != tc.want {
			t.Errorf("GoLimit(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}

// cgroupRoot makes a cgroup root with the given files (path → content).
func cgroupRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for path, content := range files {
		path = filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// keepMemoryLimit restores the process's memory limit after the test.
func keepMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
}

func TestApply(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		name        string
		files       map[string]string
		getenv      func(string) string
		want        Result
		wantRuntime int64 // the runtime's limit after Apply; 0: unchanged
	}{
		{"cgroup v2", map[string]string{v2File: "268435456\n"}, noEnv,
			Result{ContainerLimit: 256 << 20, GoLimit: 224 << 20}, 224 << 20},
		{"cgroup v1", map[string]string{v1File: "536870912\n"}, noEnv,
			Result{ContainerLimit: 512 << 20, GoLimit: 483183820}, 483183820},
		{"no limit", map[string]string{v2File: "max\n"}, noEnv,
			Result{Skipped: "the container has no memory limit"}, 0},
		{"no cgroup files", nil, noEnv,
			Result{Skipped: "the container has no memory limit"}, 0},
		{"just under the warning", map[string]string{v2File: "100663295\n"}, noEnv,
			Result{ContainerLimit: WarnBelow - 1, GoLimit: WarnBelow - 1 - Reserve, Warning: tooSmallWarning}, WarnBelow - 1 - Reserve},
		{"at the warning", map[string]string{v2File: "100663296\n"}, noEnv,
			Result{ContainerLimit: WarnBelow, GoLimit: 64 << 20}, 64 << 20},
		{"64 MiB", map[string]string{v2File: "67108864\n"}, noEnv,
			Result{ContainerLimit: 64 << 20, GoLimit: 32 << 20, Warning: tooSmallWarning}, 32 << 20},
		{"under the floor", map[string]string{v2File: "33554431\n"}, noEnv,
			Result{ContainerLimit: MinContainerLimit - 1, Skipped: "the container's memory limit is under 32 MiB, too small to hold the runtime under",
				Warning: tooSmallWarning}, 0},
		{"one byte", map[string]string{v2File: "1\n"}, noEnv,
			Result{ContainerLimit: 1, Skipped: "the container's memory limit is under 32 MiB, too small to hold the runtime under",
				Warning: tooSmallWarning}, 0},
		{"GOMEMLIMIT set", map[string]string{v2File: "268435456\n"},
			func(name string) string {
				if name == "GOMEMLIMIT" {
					return "100MiB"
				}
				return ""
			},
			Result{Skipped: "GOMEMLIMIT is set (100MiB)"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keepMemoryLimit(t)
			debug.SetMemoryLimit(math.MaxInt64)
			got, err := Apply(cgroupRoot(t, tc.files), tc.getenv)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Apply() = %+v, want %+v", got, tc.want)
			}
			want := tc.wantRuntime
			if want == 0 {
				want = math.MaxInt64
			}
			if runtime := debug.SetMemoryLimit(-1); runtime != want {
				t.Errorf("the runtime's memory limit is %d, want %d", runtime, want)
			}
		})
	}
}

func TestApplyUnreadable(t *testing.T) {
	keepMemoryLimit(t)
	// A directory where the file should be cannot be read.
	root := cgroupRoot(t, map[string]string{v2File + "/x": ""})
	if _, err := Apply(root, func(string) string { return "" }); err == nil {
		t.Error("Apply read a memory.max that is a directory without an error")
	}
}
