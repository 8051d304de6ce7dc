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
	// The cluster refused the Robot's new pod template: only a change of
	// the Robot, of what it names, or of the cluster's rules ends it.
	robotv1beta1.ReasonChangeRejected: true,
}

// setProgress sets Reconciling and Stalled from the Ready condition, the
// abnormal-true conditions that kstatus reads (Flux's and kpt's health
// checks): a Robot is Reconciling on its way to Ready, Stalled when it will
// not get there without a change, and neither once it is Ready. As Flux's
// controllers do, each is on the Robot only while True, and removed when it
// would be False: kstatus reads its absence as False, and a status that
// does not repeat what Ready says is smaller to store and to write.
//
// The one that is True takes Ready's reason and message. kstatus makes
// that message the Robot's status message, which Flux's health checks
// print ("Robot/shop/web status: 'Failed': ..."): it must say why there,
// where Ready is not shown.
//
// Ready may pass through several reasons in one sync (Compute's, then the
// diagnosis', the route's), each followed by setProgress: so a condition's
// lastTransitionTime is the one stored (stored, the Robot's conditions as
// read) whenever it was True there too, whatever the steps between, and an
// unchanged Robot writes no status.
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
	if ready.Status == metav1.ConditionTrue {
		meta.RemoveStatusCondition(&status.Conditions, robotv1beta1.ConditionReconciling)
		meta.RemoveStatusCondition(&status.Conditions, robotv1beta1.ConditionStalled)
		return
	}
	active, other := robotv1beta1.ConditionReconciling, robotv1beta1.ConditionStalled
	if stuck {
		active, other = other, active
	}
	c := metav1.Condition{
		Type: active, Status: metav1.ConditionTrue, Reason: ready.Reason, Message: ready.Message,
		ObservedGeneration: generation, LastTransitionTime: now,
	}
	if previous := meta.FindStatusCondition(stored, active); previous != nil && previous.Status == metav1.ConditionTrue {
		c.LastTransitionTime = previous.LastTransitionTime
	}
	setInPlaceOf(&status.Conditions, c, other)
}

// setInPlaceOf sets c in conditions, in the place of the condition of type
// other, which it removes. The order of the conditions is the one stored
// however often a sync goes from Reconciling to Stalled and back before it
// settles, so that an unchanged status compares equal and writes nothing.
func setInPlaceOf(conditions *[]metav1.Condition, c metav1.Condition, other string) {
	if meta.FindStatusCondition(*conditions, c.Type) == nil {
		for i := range *conditions {
			if (*conditions)[i].Type == other {
				(*conditions)[i] = c
				return
			}
		}
		*conditions = append(*conditions, c)
		return
	}
	meta.RemoveStatusCondition(conditions, other)
	for i := range *conditions {
		if (*conditions)[i].Type == c.Type {
			(*conditions)[i] = c
		}
	}
}
