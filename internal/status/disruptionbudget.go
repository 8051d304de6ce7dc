package status

import (
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// WithDisruptionBudget makes status, Diagnosed's for robot, say when the
// Robot's PodDisruptionBudget holds node drains: Ready's message (which
// Stalled repeats) gets a sentence naming the budget. It says so only while
// the Robot is Stalled, when its pods that are not ready will not become so
// without a change, so the block lasts. A budget at 0 while a pod starts or
// is replaced is not worth a status write. The reason stays the cause of
// the block (Unschedulable, say), so kstatus reads the Robot as before.
// budget is the Robot's budget as cached, nil when it has none.
func WithDisruptionBudget(robot *robotv1beta1.Robot, status *robotv1beta1.RobotStatus, budget *policyv1.PodDisruptionBudget, now metav1.Time) {
	blocked := budgetBlocks(budget)
	if blocked == "" {
		return
	}
	ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || !stalledReasons[ready.Reason] {
		return
	}
	suffix := "; " + blocked
	if len(ready.Message)+len(suffix) > maxMessageLength {
		ready.Message = truncate(ready.Message, maxMessageLength-len(suffix)-3) + "..."
	}
	ready.Message += suffix
	// Only the messages change: the conditions keep their transition times.
	setProgress(status, robot.Status.Conditions, robot.Generation, now)
}

// budgetBlocks returns, when budget lets no pod of the Robot be evicted
// although some could be, what a person should read about it; "" when it
// does not block, or its status is not about its current spec.
func budgetBlocks(budget *policyv1.PodDisruptionBudget) string {
	if budget == nil {
		return ""
	}
	s := budget.Status
	if s.ObservedGeneration < budget.Generation || s.DisruptionsAllowed > 0 || s.ExpectedPods == 0 {
		return ""
	}
	// Under AlwaysAllow a pod that is not ready may go whatever the
	// budget says: with none healthy, nothing is held. Under the other
	// policies an unhealthy pod is held too while the budget has no room.
	alwaysAllow := budget.Spec.UnhealthyPodEvictionPolicy != nil && *budget.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow
	if s.CurrentHealthy == 0 && alwaysAllow {
		return ""
	}
	return fmt.Sprintf("PodDisruptionBudget %q allows no eviction (%d of %d pods healthy, %d must stay): a drain of a node that runs one of them waits",
		budget.Name, s.CurrentHealthy, s.ExpectedPods, s.DesiredHealthy)
}
