package fleet

import (
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// FromSpec reports whether a change of current, robot's Deployment, that
// the operator would apply comes from the Robot's spec: the Robot's
// generation moved since the operator last wrote its Deployment as it asked.
// Otherwise the change comes from elsewhere (the operator's release, a
// referenced object), and rolls under the budget.
//
// The generation last written for is the larger of two records: the
// Deployment's AnnotationGeneration, written with every create and apply;
// and the Robot's status, when it says its Deployment held what that
// generation asks for (Synced, or waiting for the budget, which only a
// Deployment as the spec asks can). The status covers a generation that
// asked for no change of the Deployment (the stamp stays behind), and a
// Deployment of a release that wrote no stamp. When neither knows the
// Robot's generation, the change is the spec's: it goes through.
func FromSpec(robot *robotv1beta1.Robot, current *appsv1.Deployment) bool {
	written, _ := workload.AppliedGeneration(current.Annotations)
	if reported, ok := reportedGeneration(robot.Status); ok && reported > written {
		written = reported
	}
	return written != robot.Generation
}

// reportedGeneration returns the generation whose spec status says the
// Deployment held: Synced True, or waiting for the budget.
func reportedGeneration(s robotv1beta1.RobotStatus) (int64, bool) {
	synced := meta.FindStatusCondition(s.Conditions, robotv1beta1.ConditionSynced)
	if synced == nil || synced.ObservedGeneration != s.ObservedGeneration {
		return 0, false
	}
	if synced.Status == metav1.ConditionTrue || synced.Reason == robotv1beta1.ReasonWaitingForFleetBudget {
		return s.ObservedGeneration, true
	}
	return 0, false
}

// Waiting returns the message robot's status gives, when it already says
// that the Robot waits for the budget at its generation: a waiting Robot's
// status is written once, not each time the numbers change.
func Waiting(robot *robotv1beta1.Robot) (string, bool) {
	synced := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced)
	if synced == nil || synced.Reason != robotv1beta1.ReasonWaitingForFleetBudget ||
		synced.ObservedGeneration != robot.Generation || robot.Status.ObservedGeneration != robot.Generation {
		return "", false
	}
	return synced.Message, true
}

// RolloutDone reports whether deployment's rollout is over: the Deployment
// controller observed its spec, every replica runs its template, no old one
// is left, and every one is available. A Robot's slot frees then.
func RolloutDone(deployment *appsv1.Deployment) bool {
	if deployment == nil {
		return true
	}
	want, s := ptr.Deref(deployment.Spec.Replicas, 1), deployment.Status
	return s.ObservedGeneration >= deployment.Generation && s.UpdatedReplicas == want &&
		s.Replicas == want && s.AvailableReplicas >= want
}

// Holders returns the Robots whose Deployments, of deployments, roll a
// change the budget let through: marked so by the operator's last apply
// (AnnotationBudgetedRollout), and not done yet. A restarted leader gives
// them their slots back before it syncs any Robot.
func Holders(deployments []*appsv1.Deployment) []Robot {
	var holders []Robot
	for _, deployment := range deployments {
		ref := metav1.GetControllerOf(deployment)
		if ref == nil || ref.Kind != "Robot" || deployment.Annotations[workload.AnnotationBudgetedRollout] != "true" || RolloutDone(deployment) {
			continue
		}
		holders = append(holders, Robot{UID: ref.UID, Namespace: deployment.Namespace, Name: ref.Name})
	}
	return holders
}
