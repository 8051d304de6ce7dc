package robotctl

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestHistory: the revisions the Robot controls, oldest first whatever the
// order they are listed in, each with what it changed and the current one
// marked; another Robot's revisions of the same name left out.
func TestHistory(t *testing.T) {
	robot, revisions := threeSpecs(t)
	// A revision of an earlier Robot named web, deleted and made again: it
	// has the label, but another controller.
	earlier := robot.DeepCopy()
	earlier.UID, earlier.Spec.Image = types.UID("earlier-uid"), "registry.example/old:1"
	stale := revisionOf(t, earlier, 7)
	f := newFixture(robot, revisions[2], stale, revisions[0], revisions[1])

	code, stdout, stderr := f.run(t, "history", "web")
	want := strings.Join([]string{
		"REVISION  CREATED               CURRENT  CHANGE",
		"1         2026-11-28T14:02:00Z           first recorded spec",
		"2         2026-11-28T14:03:00Z           image registry.example/web:1.27 → 1.28",
		"3         2026-11-28T14:04:00Z  *        replicas 1 → 3; env LOG_LEVEL added",
		"",
	}, "\n")
	if code != 0 || stdout != want || stderr != "" {
		t.Errorf("exit code %d, stderr %q, stdout:\n%s\nwant 0 and:\n%s", code, stderr, stdout, want)
	}
	if writes := f.writes(); len(writes) > 0 {
		t.Errorf("history wrote %v", writes)
	}
}

// TestHistoryBeforeTheOperatorRecords: a Robot whose spec changed since the
// operator last recorded it has no current revision, and says why.
func TestHistoryBeforeTheOperatorRecords(t *testing.T) {
	robot, revisions := threeSpecs(t)
	robot.Spec.Image = image3
	f := newFixture(robot, revisions...)
	code, stdout, _ := f.run(t, "history", "web")
	if code != 0 || strings.Contains(stdout, "*") || !strings.Contains(stdout, "The Robot's current spec (generation 3) is in no revision yet") {
		t.Errorf("exit code %d, stdout:\n%s\nwant 0, no revision marked current, and a line saying the spec is not recorded yet", code, stdout)
	}
}

// TestHistoryErrors: a Robot that does not exist and one with no history
// say so, and fail.
func TestHistoryErrors(t *testing.T) {
	robot, _ := threeSpecs(t)
	for _, tc := range []struct {
		name string
		f    *fixture
		want string
	}{
		{"no Robot", newFixture(nil), "error: Robot shop/web not found\n"},
		{"no history", newFixture(robot), "error: Robot shop/web has no history: no ControllerRevision it controls"},
	} {
		code, stdout, stderr := tc.f.run(t, "history", "web")
		if code != 1 || stdout != "" || !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("%s: exit code %d, stdout %q, stderr %q; want 1, nothing, and %q", tc.name, code, stdout, stderr, tc.want)
		}
	}
}
