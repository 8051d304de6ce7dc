package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// stalledReasons are the reasons of a Ready=False that no waiting will
// cure: each needs a change to the Robot, its image, its namespace or the
// cluster. A Robot with one, or with one of heldReasons, is Stalled
// (kstatus: Failed); with any other reason it is Reconciling (kstatus:
// InProgress).
var stalledReasons = map[string]bool{
	robotv1beta1.ReasonImagePullFailed:          true,
	robotv1beta1.ReasonCrashLoop:                true,
	robotv1beta1.ReasonUnschedulable:            true,
	robotv1beta1.ReasonConfigMissing:            true,
	robotv1beta1.ReasonReadinessProbeFailing:    true,
	robotv1beta1.ReasonQuotaExceeded:            true,
	robotv1beta1.ReasonPodSecurityRejected:      true,
	robotv1beta1.ReasonReplicaFailure:           true,
	robotv1beta1.ReasonProgressDeadlineExceeded: true,
	robotv1beta1.ReasonInvalidSpec:              true,
	robotv1beta1.ReasonDeploymentNameTaken:      true,
	robotv1beta1.ReasonRouteNotAllowed:          true,
	robotv1beta1.ReasonGracePeriodNotAllowed:    true,
	robotv1beta1.ReasonGatewayAPIMissing:        true,
	robotv1beta1.ReasonRouteNameTaken:           true,
	robotv1beta1.ReasonGatewayNotFound:          true,
	// Only a release that knows the Robot's fields, or a Robot without
	// them, ends it.
	robotv1beta1.ReasonNewerAPI: true,
}

// setProgress sets Reconciling and Stalled from the Ready condition, the
// abnormal-true conditions that kstatus reads (Flux's and kpt's health
// checks): a Robot is Reconciling on its way to Ready, Stalled when it will
// not get there without a change, and neither once it is Ready. Each takes
// Ready's reason and message, so a tool that shows only them says why.
//
// Ready may pass through several reasons in one sync (Compute's, then the
// diagnosis', the route's), each followed by setProgress: so a condition's
// lastTransitionTime is the one stored (stored, the Robot's conditions as
// read) whenever its status there is the same, whatever the steps between,
// and an unchanged Robot writes no status.
func setProgress(status *robotv1beta1.RobotStatus, stored []metav1.Condition, generation int64, now metav1.Time) {
	ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
	if ready == nil {
		return
	}
	setProgressStalled(status, stored, generation, now, stalledReasons[ready.Reason] || heldReasons[ready.Reason])
}

// setProgressStalled is setProgress told whether Ready=False waits on a
// person, for a reason that is not the operator's own (a Gateway's refusal
// of the route, in the Gateway's words).
func setProgressStalled(status *robotv1beta1.RobotStatus, stored []metav1.Condition, generation int64, now metav1.Time, stuck bool) {
	ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
	if ready == nil {
		return
	}
	reconciling, stalled := metav1.ConditionFalse, metav1.ConditionFalse
	switch {
	case ready.Status == metav1.ConditionTrue:
	case stuck:
		stalled = metav1.ConditionTrue
	default:
		reconciling = metav1.ConditionTrue
	}
	for _, c := range []metav1.Condition{
		{Type: robotv1beta1.ConditionReconciling, Status: reconciling},
		{Type: robotv1beta1.ConditionStalled, Status: stalled},
	} {
		c.Reason, c.Message = ready.Reason, ready.Message
		c.ObservedGeneration = generation
		c.LastTransitionTime = now
		if previous := meta.FindStatusCondition(stored, c.Type); previous != nil && previous.Status == c.Status {
			c.LastTransitionTime = previous.LastTransitionTime
		}
		meta.SetStatusCondition(&status.Conditions, c)
	}
}
