package policy

import (
	"strings"
	"testing"
)

// TestRevisionHistoryLimitFlag: 10 revisions by default, as many as the
// flag says, and never fewer than the current one.
func TestRevisionHistoryLimitFlag(t *testing.T) {
	p, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	if p.RevisionLimit() != 10 {
		t.Errorf("default limit %d, want 10", p.RevisionLimit())
	}
	if p, err := parse(t, "-revision-history-limit=3"); err != nil || p.RevisionLimit() != 3 {
		t.Errorf("-revision-history-limit=3: limit %d, err %v", p.RevisionLimit(), err)
	}
	for _, bad := range []string{"0", "-1"} {
		if _, err := parse(t, "-revision-history-limit="+bad); err == nil || !strings.Contains(err.Error(), "-revision-history-limit") {
			t.Errorf("-revision-history-limit=%s: err = %v, want one naming the flag", bad, err)
		}
	}
	if (&Policy{}).RevisionLimit() != 10 {
		t.Errorf("the zero Policy keeps %d revisions, want the default 10", (&Policy{}).RevisionLimit())
	}
}
