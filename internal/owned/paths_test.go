package owned

import (
	"testing"

	"github.com/robot-operator/robot-operator/internal/policy"
)

// TestPathsWaitForTheGatewayAPIAnswer: until discovery has answered once
// whether the Gateway API is there, the paths have not synced, so that no
// worker starts and no Robot that asks for a route is told, on a guess,
// that the cluster has none. A definite "not there" is an answer too.
func TestPathsWaitForTheGatewayAPIAnswer(t *testing.T) {
	for _, there := range []bool{true, false} {
		f := newPolicyFixture(t, policyRobot())
		found := &Discovery{}
		f.sources.RoutesFound = found
		paths := f.paths(t, policy.Policy{})
		if paths.HasSynced() {
			t.Errorf("synced before discovery answered")
		}
		found.SetAvailable(there)
		if !paths.HasSynced() {
			t.Errorf("not synced once discovery answered that the Gateway API is there: %v", there)
		}
	}
}
