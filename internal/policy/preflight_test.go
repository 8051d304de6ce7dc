package policy

import (
	"strings"
	"testing"
)

// TestPreflightFlags: the check is on by default, at its default rate;
// -preflight=false turns it off whatever the rate; a rate that lets no check
// through is refused.
func TestPreflightFlags(t *testing.T) {
	for _, tt := range []struct {
		flags   []string
		want    Preflight
		refused string
	}{
		{nil, Preflight{Enabled: true, QPS: DefaultPreflightQPS, Burst: DefaultPreflightBurst}, ""},
		{[]string{"-preflight-qps=50", "-preflight-burst=100"}, Preflight{Enabled: true, QPS: 50, Burst: 100}, ""},
		{[]string{"-preflight=false", "-preflight-qps=0"}, Preflight{QPS: 0, Burst: DefaultPreflightBurst}, ""},
		{[]string{"-preflight-qps=0"}, Preflight{}, "-preflight-qps 0"},
		{[]string{"-preflight-burst=0"}, Preflight{}, "-preflight-burst 0"},
	} {
		p, err := parse(t, tt.flags...)
		switch {
		case tt.refused != "":
			if err == nil || !strings.Contains(err.Error(), tt.refused) {
				t.Errorf("%q: %v, want an error saying %q", tt.flags, err, tt.refused)
			}
		case err != nil:
			t.Errorf("%q: %v", tt.flags, err)
		case p.Preflight != tt.want:
			t.Errorf("%q: %+v, want %+v", tt.flags, p.Preflight, tt.want)
		}
	}
}
