package drift

import (
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	"k8s.io/utils/ptr"
)

// TestSpecComparisonSkippedOnlyWhileSpecsAreUnchanged: once the specs have
// matched, status-only updates skip the comparison of specs, but another
// writer's change to the spec (which raises the Deployment's generation) is
// still seen.
func TestSpecComparisonSkippedOnlyWhileSpecsAreUnchanged(t *testing.T) {
	robot := robottest.NewRobot("test", 2)
	desired, err := workload.NewDeployment(robot)
	if err != nil {
		t.Fatal(err)
	}
	checks := &SpecChecks{}
	deployment := liveDeployment(t, robot)
	if drift := checks.Drift(desired, deployment); drift != "" {
		t.Fatalf("drift %q for the Deployment as applied", drift)
	}
	if !checks.unchanged(deployment.UID, deployment.Generation, desired.Annotations[workload.AnnotationSpecHash]) {
		t.Fatal("a matching spec was not remembered: every status update would compare specs again")
	}
	scaled := deployment.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](5)
	scaled.Generation++
	if drift := checks.Drift(desired, scaled); !strings.Contains(drift, "spec.replicas is 5") {
		t.Errorf("drift %q after another writer scaled the Deployment, want spec.replicas named", drift)
	}
}
