package robotctl

import (
	"strings"
	"testing"
)

// TestDiff: a revision's spec against the current one, as YAML in a
// unified diff from the current spec; nothing for the current revision;
// an error for a revision the Robot does not have.
func TestDiff(t *testing.T) {
	robot, revisions := threeSpecs(t)
	f := newFixture(robot, revisions...)

	code, stdout, stderr := f.run(t, "diff", "web", "1")
	want := strings.Join([]string{
		"--- current spec",
		"+++ revision 1",
		"@@ -1,7 +1,4 @@",
		"-env:",
		"-- name: LOG_LEVEL",
		"-  value: debug",
		"-image: registry.example/web:1.28",
		"+image: registry.example/web:1.27",
		" placement: {}",
		"-replicas: 3",
		"+replicas: 1",
		" resources: {}",
		"",
	}, "\n")
	if code != 0 || stdout != want || stderr != "" {
		t.Errorf("diff web 1: exit code %d, stderr %q, stdout:\n%s\nwant 0 and:\n%s", code, stderr, stdout, want)
	}

	code, stdout, stderr = f.run(t, "diff", "web", "3")
	if code != 0 || stdout != "" || stderr != "" {
		t.Errorf("diff web 3, the current spec: exit code %d, stdout %q, stderr %q; want 0 and nothing", code, stdout, stderr)
	}

	for _, tc := range []struct{ revision, want string }{
		{"4", "error: Robot shop/web has no revision 4 (its revisions: 1, 2, 3)\n"},
		{"two", `error: revision "two": give a revision's number, as kubectl robot history lists them` + "\n"},
		{"0", `error: revision "0": give a revision's number, as kubectl robot history lists them` + "\n"},
	} {
		code, stdout, stderr = f.run(t, "diff", "web", tc.revision)
		if code != 1 || stdout != "" || stderr != tc.want {
			t.Errorf("diff web %s: exit code %d, stdout %q, stderr %q; want 1, nothing, and %q", tc.revision, code, stdout, stderr, tc.want)
		}
	}
	if writes := f.writes(); len(writes) > 0 {
		t.Errorf("diff wrote %v", writes)
	}
}

// TestUnifiedDiff: only the changed lines and three of context around them.
func TestUnifiedDiff(t *testing.T) {
	from := `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}`
	to := `{"a":1,"b":2,"c":3,"d":4,"e":50,"f":6,"g":7,"h":8,"i":9}`
	got, err := UnifiedDiff([]byte(from), []byte(to), "x", "y")
	if err != nil {
		t.Fatal(err)
	}
	want := "--- x\n+++ y\n@@ -2,7 +2,7 @@\n b: 2\n c: 3\n d: 4\n-e: 5\n+e: 50\n f: 6\n g: 7\n h: 8\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
