package status

import (
	"errors"

	"github.com/robot-operator/robot-operator/internal/outcome"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// heldReasons are the Synced reasons of a part of the Robot beside its
// Deployment (its Service, its PodDisruptionBudget) that the operator may
// not or cannot make until a person acts: a name someone else holds, or
// what the administrator's flags refuse. The Deployment runs all the same,
// but the Robot is not as it asks: Ready says so, and the Robot is Stalled.
var heldReasons = map[string]bool{
	robotv1beta1.ReasonServiceNameTaken:            true,
	robotv1beta1.ReasonServiceTypeNotAllowed:       true,
	robotv1beta1.ReasonServiceMetadataNotAllowed:   true,
	robotv1beta1.ReasonLoadBalancerClassNotAllowed: true,
	robotv1beta1.ReasonDisruptionBudgetNameTaken:   true,
	robotv1beta1.ReasonDisruptionBudgetNotAllowed:  true,
}

// withHeld makes Ready=False, with the Synced reason and message, when the
// workload is Ready but syncErr says a part of the Robot waits on a person
// (heldReasons). A Robot whose workload is not Ready keeps the workload's
// reason, which says more; this one comes once the pods run. A failure
// that is retried leaves Ready alone: it usually passes by itself.
func withHeld(robot *robotv1beta1.Robot, status *robotv1beta1.RobotStatus, syncErr error, now metav1.Time) {
	if syncErr == nil || errors.Is(syncErr, outcome.ErrGatewayAPIMissing) {
		return
	}
	f := outcome.Classify(syncErr)
	if !heldReasons[f.Reason] {
		return
	}
	ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		return
	}
	message := failureMessage(syncErr, f)
	if len(message) > maxMessageLength {
		message = truncate(message, maxMessageLength-3) + "..."
	}
	// Ready was False before, for this or for anything else: it keeps its
	// lastTransitionTime, so that an unchanged status writes nothing.
	transition := now
	if previous := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionReady); previous != nil && previous.Status == metav1.ConditionFalse {
		transition = previous.LastTransitionTime
	}
	ready.Status, ready.Reason, ready.Message, ready.LastTransitionTime = metav1.ConditionFalse, f.Reason, message, transition
}
