package owned

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// budgetFixture is a fixture of robot, converged, with its Deployment, and
// budget in the caches and the API server when not nil; its paths are
// those of mode.
func budgetFixture(t *testing.T, mode policy.DisruptionBudgets, robot *robotv1beta1.Robot, budget *policyv1.PodDisruptionBudget) (*policyFixture, *Paths) {
	f := serviceFixture(t, robot, Objects{Deployment: liveDeployment(t, robot)}).withBudgets()
	if budget != nil {
		f.add(t, budget)
	}
	return f, f.paths(t, policy.Policy{DisruptionBudgets: mode})
}

// TestDisruptionBudgetCreated: a Robot of two replicas gets a budget that
// lets one pod go at a time, with a plain create, and says so in an Event;
// once the budget is there, a sync writes nothing.
func TestDisruptionBudgetCreated(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 2)
	f, paths := budgetFixture(t, policy.DisruptionBudgetsDefault, robot, nil)
	objects, err := paths.Sync(ctx, robot)
	f.check(t, createBudget(t, robot))
	f.statusUnchanged(t, robot, objects, err)
	if events := f.events(); fmt.Sprint(events) != fmt.Sprint([]string{corev1.EventTypeNormal + " " + writer.EventCreated + ` Created PodDisruptionBudget "test"`}) {
		t.Errorf("events %q, want the budget's creation", events)
	}

	converge, paths := budgetFixture(t, policy.DisruptionBudgetsDefault, robot, liveBudget(t, robot))
	objects, err = paths.Sync(ctx, robot)
	converge.unchanged(t, robot, objects, err)
}

// TestDisruptionBudgetPutBackAndDeleted: a budget someone loosened is put
// back; a Robot scaled to one replica has its budget deleted, with a UID
// precondition; someone else's budget of that name is never written.
func TestDisruptionBudgetPutBackAndDeleted(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 2)
	loosened := liveBudget(t, robot)
	loosened.Spec.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	f, paths := budgetFixture(t, policy.DisruptionBudgetsDefault, robot, loosened)
	objects, err := paths.Sync(ctx, robot)
	f.check(t, applyBudget(t, robot, loosened.UID))
	f.statusUnchanged(t, robot, objects, err)
	if events := f.events(); fmt.Sprint(events) != fmt.Sprint([]string{corev1.EventTypeNormal + " " + EventDisruptionBudgetUpdated + ` Updated PodDisruptionBudget "test": spec.maxUnavailable is "100%"; the Robot asks for 1`}) {
		t.Errorf("events %q, want the budget's update", events)
	}

	single := robot.DeepCopy()
	single.Spec.Replicas = ptr.To[int32](1)
	single.Generation++
	budget := liveBudget(t, robot)
	g, paths := budgetFixture(t, policy.DisruptionBudgetsDefault, single, budget)
	objects, err = paths.Sync(ctx, single)
	// The delete carries a UID precondition.
	g.check(t, deleteBudget(budget))
	g.statusUnchanged(t, single, objects, err)

	robot = robottest.NewRobot("test", 2)
	h, paths := budgetFixture(t, policy.DisruptionBudgetsDefault, robot, nil)
	foreign := liveBudget(t, robot)
	foreign.OwnerReferences = nil
	h.cacheOnly(t, foreign)
	// Nothing is written to the budget; the status says whose it is.
	objects, err = paths.Sync(ctx, robot)
	for _, action := range robottest.FilterInformerActions(h.kube.Actions()) {
		if action.GetResource() == budgetsResource {
			t.Errorf("%s to someone else's budget", robottest.Describe(action))
		}
	}
	synced := meta.FindStatusCondition(h.statusOf(robot, objects, err).Conditions, robotv1beta1.ConditionSynced)
	if synced == nil || synced.Reason != robotv1beta1.ReasonDisruptionBudgetNameTaken {
		t.Errorf("Synced %v, want DisruptionBudgetNameTaken", synced)
	}
}

// TestDisruptionBudgetsOptIn: with -disruption-budgets=opt-in a Robot of
// two replicas that sets no spec.disruptionBudget gets none, and the one it
// had is deleted; a Robot that sets one gets it.
func TestDisruptionBudgetsOptIn(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 2)
	budget := liveBudget(t, robot)
	f, paths := budgetFixture(t, policy.DisruptionBudgetsOptIn, robot, nil)
	objects, err := paths.Sync(ctx, robot)
	f.unchanged(t, robot, objects, err)

	had, paths := budgetFixture(t, policy.DisruptionBudgetsOptIn, robot, budget)
	objects, err = paths.Sync(ctx, robot)
	had.check(t, deleteBudget(budget))
	had.statusUnchanged(t, robot, objects, err)

	asks := robottest.NewRobot("test", 1)
	asks.Spec.DisruptionBudget = &robotv1beta1.RobotDisruptionBudget{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	g, paths := budgetFixture(t, policy.DisruptionBudgetsOptIn, asks, nil)
	objects, err = paths.Sync(ctx, asks)
	g.check(t, createBudget(t, asks))
	g.statusUnchanged(t, asks, objects, err)
}

// TestDisruptionBudgetsOff: with -disruption-budgets=off the budget the
// operator made is deleted. A Robot that leaves its budget to the default
// stays Synced; one that asks for a budget says it is refused one, with one
// Warning, and stays Ready.
func TestDisruptionBudgetsOff(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 2)
	budget := liveBudget(t, robot)
	f, paths := budgetFixture(t, policy.DisruptionBudgetsOff, robot, budget)
	objects, err := paths.Sync(ctx, robot)
	f.check(t, deleteBudget(budget))
	f.statusUnchanged(t, robot, objects, err)

	asks := robottest.NewRobot("test", 2)
	asks.Spec.DisruptionBudget = &robotv1beta1.RobotDisruptionBudget{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	budget = liveBudget(t, asks)
	g, paths := budgetFixture(t, policy.DisruptionBudgetsOff, asks, budget)
	objects, err = paths.Sync(ctx, asks)
	if failure := outcome.Classify(err); err == nil || failure.Retry != outcome.RetryOnChange {
		t.Fatalf("sync: %v, classified %+v; want an error retried on change only", err, failure)
	}
	g.check(t, deleteBudget(budget))
	written := g.statusOf(asks, objects, err)
	synced := meta.FindStatusCondition(written.Conditions, robotv1beta1.ConditionSynced)
	if synced.Reason != robotv1beta1.ReasonDisruptionBudgetNotAllowed || !strings.Contains(synced.Message, "-disruption-budgets=off") {
		t.Errorf("Synced %s: %s, want %s naming the flag", synced.Reason, synced.Message, robotv1beta1.ReasonDisruptionBudgetNotAllowed)
	}
	// The Deployment runs, but the Robot lacks the budget it asks for
	// until a person changes it or the operator's flags: not Ready, and
	// Stalled, so that kstatus does not call it Current.
	if ready := meta.FindStatusCondition(written.Conditions, robotv1beta1.ConditionReady); ready.Status != metav1.ConditionFalse || ready.Reason != robotv1beta1.ReasonDisruptionBudgetNotAllowed {
		t.Errorf("Ready %s (%s), want False %s", ready.Status, ready.Reason, robotv1beta1.ReasonDisruptionBudgetNotAllowed)
	}
	if !meta.IsStatusConditionTrue(written.Conditions, robotv1beta1.ConditionStalled) {
		t.Errorf("not Stalled: %v", written.Conditions)
	}
	if events := append(g.events(), warned(asks.Status, written)...); len(events) != 2 || !slices.ContainsFunc(events, func(e string) bool {
		return strings.HasPrefix(e, corev1.EventTypeWarning+" "+robotv1beta1.ReasonDisruptionBudgetNotAllowed)
	}) {
		t.Errorf("events %q, want the budget's deletion and one %s warning", events, robotv1beta1.ReasonDisruptionBudgetNotAllowed)
	}
}

// TestDisruptionBudgetUnmanaged: a budget annotated
// robot.dev/disruption-budget: unmanaged is out of the operator's hands. A
// loosened one is not put back; one the Robot, or the switch, no longer
// asks for is not deleted.
func TestDisruptionBudgetUnmanaged(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	unmanaged := func(robot *robotv1beta1.Robot) *policyv1.PodDisruptionBudget {
		budget := liveBudget(t, robot)
		budget.Annotations[workload.AnnotationDisruptionBudget] = workload.DisruptionBudgetUnmanaged
		budget.Spec.MaxUnavailable = ptr.To(intstr.FromString("100%"))
		return budget
	}
	for _, tt := range []struct {
		name  string
		mode  policy.DisruptionBudgets
		robot *robotv1beta1.Robot
	}{
		{"loosened", policy.DisruptionBudgetsDefault, robottest.NewRobot("test", 2)},
		{"one replica", policy.DisruptionBudgetsDefault, robottest.NewRobot("test", 1)},
		{"off", policy.DisruptionBudgetsOff, robottest.NewRobot("test", 2)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			budget := unmanaged(robottest.NewRobot("test", 2))
			f, paths := budgetFixture(t, tt.mode, tt.robot, budget)
			objects, err := paths.Sync(ctx, tt.robot)
			f.unchanged(t, tt.robot, objects, err)
		})
	}

	// Handed back, it is the operator's again.
	robot := robottest.NewRobot("test", 2)
	budget := unmanaged(robot)
	budget.Annotations[workload.AnnotationDisruptionBudget] = "managed"
	f, paths := budgetFixture(t, policy.DisruptionBudgetsDefault, robot, budget)
	objects, err := paths.Sync(ctx, robot)
	f.check(t, applyBudget(t, robot, budget.UID))
	f.statusUnchanged(t, robot, objects, err)
}
