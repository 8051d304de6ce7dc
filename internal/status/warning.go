package status

import (
	"github.com/robot-operator/robot-operator/internal/outcome"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// oncePerReason are the Synced reasons whose message changes while the
// same trouble lasts, and warn once until it ends: a field conflict's
// carries the API server's answer and the fields the other writer holds at
// each retry, fewer as it takes them back.
var oncePerReason = map[string]bool{robotv1beta1.ReasonFieldConflict: true}

// NewWarning returns the condition a Warning event should repeat when a
// Robot's status goes from before to after, or nil: a sync failure a person
// must act on, or a rollout past its progress deadline, each once per new
// reason or message (a field conflict once per reason); or a new reason why the pods do not run, once per
// reason.
func NewWarning(before, after robotv1beta1.RobotStatus) *metav1.Condition {
	entered := func(conditionType string, warns func(string) bool) *metav1.Condition {
		now := meta.FindStatusCondition(after.Conditions, conditionType)
		if now == nil || now.Status == metav1.ConditionTrue || !warns(now.Reason) {
			return nil
		}
		was := meta.FindStatusCondition(before.Conditions, conditionType)
		if was != nil && was.Reason == now.Reason && (was.Message == now.Message || oncePerReason[now.Reason]) {
			return nil
		}
		return now
	}
	if synced := entered(robotv1beta1.ConditionSynced, outcome.WarnsOnEntry); synced != nil {
		return synced
	}
	if ready := entered(robotv1beta1.ConditionReady, warnsOnCause); ready != nil {
		// Once per cause, not per message: a kubelet's message changes at
		// every back-off (ErrImagePull, then ImagePullBackOff).
		if was := meta.FindStatusCondition(before.Conditions, robotv1beta1.ConditionReady); was == nil || was.Reason != ready.Reason {
			return ready
		}
		return nil
	}
	return entered(robotv1beta1.ConditionReady, func(reason string) bool { return reason == robotv1beta1.ReasonProgressDeadlineExceeded })
}
