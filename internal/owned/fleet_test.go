package owned

import (
	"errors"
	"testing"

	"github.com/robot-operator/robot-operator/internal/fleet"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// earlierRelease is robot's Deployment as an earlier release of the
// operator applied it at the Robot's generation: a pod template this
// release would change (its spec hash differs), with the Robot Synced.
func earlierRelease(t *testing.T, robot *robotv1beta1.Robot) *appsv1.Deployment {
	deployment := liveDeployment(t, robot)
	deployment.Annotations[workload.AnnotationSpecHash] = "an-earlier-release"
	deployment.Annotations[workload.AnnotationGeneration] = "1"
	deployment.ManagedFields = []metav1.ManagedFieldsEntry{robottest.Applied, robottest.StatusByOthers}
	converged(robot, Objects{Deployment: deployment})
	return deployment
}

// addRolling puts deployments in the cache as they are, and in the API
// server as an apply of a new template leaves them: a generation the
// Deployment controller has yet to observe.
func addRolling(t *testing.T, f *policyFixture, deployments ...*appsv1.Deployment) {
	for _, deployment := range deployments {
		applied := deployment.DeepCopy()
		applied.Status.ObservedGeneration = 0
		if err := f.kube.Tracker().Add(applied); err != nil {
			t.Fatal(err)
		}
		f.cacheOnly(t, deployment)
	}
}

// applyBudgeted is the apply of robot's Deployment onto the one of uid,
// marked as a change rolled under the fleet budget.
func applyBudgeted(t *testing.T, robot *robotv1beta1.Robot, uid types.UID) core.Action {
	desired, err := (*Config)(nil).desiredDeployment(robot)
	if err != nil {
		t.Fatal(err)
	}
	workload.MarkBudgeted(desired).WithUID(uid)
	return core.NewPatchAction(robottest.DeploymentsResource, robot.Namespace, *desired.Name, types.ApplyPatchType, robottest.MustJSON(t, desired))
}

// TestFleetBudgetHoldsChangesNotFromTheSpec: with a budget of one, the
// first of two Robots whose template the operator would change, with
// neither spec changed, rolls it; the second waits, writes nothing, and
// says so while Ready stays True. The first's rollout done, its slot goes to
// the second, which is queued and rolls. A change of a waiting Robot's own
// spec goes through at once.
func TestFleetBudgetHoldsChangesNotFromTheSpec(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	first, second := robottest.NewRobot("first", 1), robottest.NewRobot("second", 1)
	first.UID, second.UID = "uid-first", "uid-second"
	firstDeployment, secondDeployment := earlierRelease(t, first), earlierRelease(t, second)
	f := newPolicyFixture(t, first)
	if err := f.robots.Add(second); err != nil {
		t.Fatal(err)
	}
	addRolling(t, f, firstDeployment, secondDeployment)
	var woken []string
	f.sources.Fleet = fleet.New(1, func(r fleet.Robot) { woken = append(woken, r.Name) })
	paths := f.paths(t, policy.Policy{})

	objects, err := paths.Sync(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	f.check(t, applyBudgeted(t, first, firstDeployment.UID))
	f.cacheOnly(t, objects.Deployment)

	objects, err = paths.Sync(ctx, second)
	var waiting *outcome.FleetBudgetError
	if !errors.As(err, &waiting) {
		t.Fatalf("the second Robot's sync: %v; want it waiting for the budget", err)
	}
	f.check(t)
	got := f.statusOf(second, objects, err)
	if synced := meta.FindStatusCondition(got.Conditions, robotv1beta1.ConditionSynced); synced.Reason != robotv1beta1.ReasonWaitingForFleetBudget {
		t.Errorf("Synced = %v; want %s", synced, robotv1beta1.ReasonWaitingForFleetBudget)
	}
	if !meta.IsStatusConditionTrue(got.Conditions, robotv1beta1.ConditionReady) {
		t.Errorf("a waiting Robot whose pods run is not Ready: %v", meta.FindStatusCondition(got.Conditions, robotv1beta1.ConditionReady))
	}
	// The status said once is kept, whatever the numbers are now.
	second.Status = got
	if _, err := paths.Sync(ctx, second); err == nil || err.Error() != meta.FindStatusCondition(got.Conditions, robotv1beta1.ConditionSynced).Message {
		t.Errorf("the second sync of a waiting Robot says %v; want the message it first said", err)
	}

	// The first rollout is not over: nothing frees. Then it is.
	if _, err := paths.Sync(ctx, first); err != nil || len(woken) != 0 {
		t.Fatalf("a sync of the first Robot, its rollout under way: %v, woken %v; want nothing freed", err, woken)
	}
	done := firstRolledOut(t, f, first)
	if _, err := paths.Sync(ctx, first); err != nil {
		t.Fatal(err)
	}
	if len(woken) != 1 || woken[0] != "second" {
		t.Fatalf("woken %v once the first Robot's rollout is done (%v); want the second", woken, done)
	}
	f.check(t)
	if _, err := paths.Sync(ctx, second); err != nil {
		t.Fatal(err)
	}
	f.check(t, applyBudgeted(t, second, secondDeployment.UID))
}

// firstRolledOut puts in the cache robot's Deployment as the API server
// holds it after the apply, rolled out by the Deployment controller.
func firstRolledOut(t *testing.T, f *policyFixture, robot *robotv1beta1.Robot) *appsv1.Deployment {
	obj, exists, err := f.deployments.GetByKey(robot.Namespace + "/" + robot.Name)
	if err != nil || !exists {
		t.Fatalf("the cache has no Deployment of %s: %v", robot.Name, err)
	}
	done := obj.(*appsv1.Deployment).DeepCopy()
	done.Status.ObservedGeneration = done.Generation
	done.ResourceVersion = "100"
	if err := f.deployments.Update(done); err != nil {
		t.Fatal(err)
	}
	return done
}

// TestFleetBudgetNeverHoldsTheSpec: a Robot waiting for the budget whose
// own spec changes is applied at once, with the change it waited for, and
// leaves the line.
func TestFleetBudgetNeverHoldsTheSpec(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	first, second := robottest.NewRobot("first", 1), robottest.NewRobot("second", 1)
	first.UID, second.UID = "uid-first", "uid-second"
	firstDeployment, secondDeployment := earlierRelease(t, first), earlierRelease(t, second)
	f := newPolicyFixture(t, first)
	if err := f.robots.Add(second); err != nil {
		t.Fatal(err)
	}
	addRolling(t, f, firstDeployment, secondDeployment)
	budget := fleet.New(1, func(fleet.Robot) {})
	f.sources.Fleet = budget
	paths := f.paths(t, policy.Policy{})
	if _, err := paths.Sync(ctx, first); err != nil {
		t.Fatal(err)
	}
	objects, err := paths.Sync(ctx, second)
	if err == nil {
		t.Fatal("the second Robot did not wait")
	}
	f.kube.ClearActions()
	second.Status = f.statusOf(second, objects, err)

	second.Spec.Image = "registry.example/other:2"
	second.Generation = 2
	if _, err := paths.Sync(ctx, second); err != nil {
		t.Fatalf("a waiting Robot whose spec changed: %v; want it applied", err)
	}
	f.check(t, applyDeployment(t, second, secondDeployment.UID))
	if rolling, waiting := budget.Counts(); rolling != 1 || waiting != 0 {
		t.Errorf("budget: %d rolling, %d waiting; want the first rolling, none waiting", rolling, waiting)
	}
}

// TestPausedRobotLeavesTheLine: a Robot waiting for the budget that is
// paused waits no more, and takes its place in line again once unpaused.
func TestPausedRobotLeavesTheLine(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	first, second := robottest.NewRobot("first", 1), robottest.NewRobot("second", 1)
	first.UID, second.UID = "uid-first", "uid-second"
	firstDeployment, secondDeployment := earlierRelease(t, first), earlierRelease(t, second)
	f := newPolicyFixture(t, first)
	if err := f.robots.Add(second); err != nil {
		t.Fatal(err)
	}
	addRolling(t, f, firstDeployment, secondDeployment)
	budget := fleet.New(1, func(fleet.Robot) {})
	f.sources.Fleet = budget
	paths := f.paths(t, policy.Policy{})
	if _, err := paths.Sync(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := paths.Sync(ctx, second); err == nil {
		t.Fatal("the second Robot did not wait")
	}
	second = robottest.Paused(second, "true")
	if _, err := paths.Sync(ctx, second); err == nil {
		t.Fatal("a paused Robot synced")
	}
	if rolling, waiting := budget.Counts(); rolling != 1 || waiting != 0 {
		t.Errorf("budget: %d rolling, %d waiting once the waiting Robot is paused; want 1, 0", rolling, waiting)
	}
}
