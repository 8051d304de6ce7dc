package events

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestOnce: a Warning is fresh the first time it holds, not at the syncs
// after, and fresh again once it stopped holding and holds again; each
// Robot has its own, and a deleted Robot's are forgotten.
func TestOnce(t *testing.T) {
	var once Once[string]
	for i, step := range []struct {
		uid     types.UID
		current []string
		fresh   []string
	}{
		{"a", []string{"paused=maybe"}, []string{"paused=maybe"}},
		{"a", []string{"paused=maybe"}, nil},
		{"b", []string{"paused=maybe"}, []string{"paused=maybe"}},
		{"a", []string{"paused=maybe", "budget=x"}, []string{"budget=x"}},
		{"a", []string{"paused=yes", "budget=x"}, []string{"paused=yes"}},
		{"a", nil, nil},
		{"a", []string{"paused=yes"}, []string{"paused=yes"}},
	} {
		if fresh := once.Fresh(step.uid, step.current); !slices.Equal(fresh, step.fresh) {
			t.Errorf("step %d, %s holds %q: fresh %q, want %q", i, step.uid, step.current, fresh, step.fresh)
		}
	}
	once.Forget("b")
	if fresh := once.Fresh("b", []string{"paused=maybe"}); len(fresh) != 1 {
		t.Errorf("after Forget: fresh %q, want the value again", fresh)
	}
}
