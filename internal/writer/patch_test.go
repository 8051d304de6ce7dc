package writer

import (
	"maps"
	"testing"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestClaimPatch: the patch applies only to the Deployment as it was read.
func TestClaimPatch(t *testing.T) {
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42", ManagedFields: []metav1.ManagedFieldsEntry{robottest.OthersInCache, robottest.CreatedInCache}}}
	patch, err := ClaimPatch(deployment, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},` +
		`{"op":"test","path":"/metadata/managedFields/1/manager","value":"robot-operator"},` +
		`{"op":"test","path":"/metadata/managedFields/1/operation","value":"Update"},` +
		`{"op":"replace","path":"/metadata/managedFields/1/operation","value":"Apply"}]`
	if string(patch) != want {
		t.Errorf("patch\n%s\nwant\n%s", patch, want)
	}
	deployment.ManagedFields = []metav1.ManagedFieldsEntry{robottest.AppliedInCache, robottest.OthersInCache, robottest.CreatedInCache}
	if patch, err = ClaimPatch(deployment, 2); err != nil {
		t.Fatal(err)
	}
	want = `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},` +
		`{"op":"test","path":"/metadata/managedFields/2/manager","value":"robot-operator"},` +
		`{"op":"test","path":"/metadata/managedFields/2/operation","value":"Update"},` +
		`{"op":"remove","path":"/metadata/managedFields/2"}]`
	if string(patch) != want {
		t.Errorf("with an Apply entry already: patch\n%s\nwant\n%s", patch, want)
	}
}

// TestRecreatePatch: a patch only for a Robot that asks for Recreate while
// its Deployment still has a rollingUpdate, and one that applies only to
// the Deployment as it was read.
func TestRecreatePatch(t *testing.T) {
	recreate := &robotv1beta1.RobotStrategy{Type: robotv1beta1.StrategyRecreate}
	rolling := &robotv1beta1.RobotStrategy{Type: robotv1beta1.StrategyRollingUpdate}
	for _, tt := range []struct {
		name     string
		was, now *robotv1beta1.RobotStrategy // the Robot's when its Deployment was stored, and now
		want     string                      // "" for no patch
	}{
		{name: "no strategy"},
		{name: "RollingUpdate to no strategy", was: rolling},
		{name: "Recreate to RollingUpdate", was: recreate, now: rolling},
		{name: "Recreate, stored", was: recreate, now: recreate},
		{name: "no strategy to Recreate", now: recreate,
			want: `[{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"replace","path":"/spec/strategy","value":{"type":"Recreate"}}]`},
		{name: "RollingUpdate to Recreate", was: rolling, now: recreate,
			want: `[{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"replace","path":"/spec/strategy","value":{"type":"Recreate"}}]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.NewRobot("test", 1)
			robot.Spec.Strategy = tt.was
			current := liveDeployment(t, robot)
			robottest.APIServerDefaults(current)
			robot.Spec.Strategy = tt.now
			desired, err := workload.NewDeployment(robot)
			if err != nil {
				t.Fatal(err)
			}
			patch, err := RecreatePatch(desired, current)
			if err != nil {
				t.Fatal(err)
			}
			if string(patch) != tt.want {
				t.Errorf("patch %s, want %s", patch, tt.want)
			}
		})
	}
	// What the patch leaves is what the Robot asks for.
	robot := robottest.NewRobot("test", 1)
	current := liveDeployment(t, robot)
	robottest.APIServerDefaults(current)
	current.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	robot.Spec.Strategy = recreate
	desired, err := workload.NewDeployment(robot)
	if err != nil {
		t.Fatal(err)
	}
	// The apply that follows the patch sets the spec hash annotation: the
	// spec is what the patch must leave as the Robot asks.
	maps.Copy(current.Annotations, desired.Annotations)
	if got := drift.DeploymentDrift(desired, current); got != "" {
		t.Errorf("drift after the patch: %s", got)
	}
}

func liveDeployment(t *testing.T, robot *robotv1beta1.Robot) *appsv1.Deployment {
	desired, err := workload.NewDeployment(robot)
	return robottest.LiveDeploymentOf(t, desired, err)
}
