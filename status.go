package main

import (
	"errors"
	"fmt"
	"regexp"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	robotac "github.com/robot-operator/robot-operator/pkg/generated/applyconfiguration/robot/v1alpha1"
)

// nameTakenError is a Deployment with the Robot's deployment name that the
// Robot does not control. The operator never modifies or adopts it.
type nameTakenError struct {
	name  string
	owner string // the Deployment's controller, if any, as "Kind/name"
}

func (e *nameTakenError) Error() string {
	msg := fmt.Sprintf("Deployment %q already exists and is not controlled by this Robot", e.name)
	if e.owner != "" {
		msg += " (it is controlled by " + e.owner + ")"
	}
	return msg + "; the operator leaves it alone: delete it, or recreate the Robot with another spec.deploymentName"
}

// earlierRobotError is a Deployment with the Robot's deployment name that an
// earlier Robot of the same name controls: that Robot was deleted, and the
// garbage collector has not deleted its Deployment yet.
type earlierRobotError struct{ name string }

func (e *earlierRobotError) Error() string {
	return fmt.Sprintf("waiting for the garbage collector to delete Deployment %q of an earlier Robot of the same name", e.name)
}

// maxMessageLength bounds condition messages well inside the API's limit, so
// a long error never makes the status write itself fail.
const maxMessageLength = 1024

// conditionReason matches what metav1.Condition accepts as a reason.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// computeStatus returns the status that describes robot, given its
// Deployment (nil when there is none the Robot controls), the error of the
// sync that just ran, and the current time. It is a pure function: the same
// inputs always give the same status, and conditions keep their
// lastTransitionTime unless their status changes.
func computeStatus(robot *robotv1alpha1.Robot, deployment *appsv1.Deployment, syncErr error, now metav1.Time) robotv1alpha1.RobotStatus {
	status := robotv1alpha1.RobotStatus{
		ObservedGeneration: robot.Generation,
		DeploymentName:     deploymentName(robot),
		Selector:           selectorString(robot),
		Conditions:         append([]metav1.Condition(nil), robot.Status.Conditions...),
	}
	if deployment != nil {
		status.Replicas = deployment.Status.Replicas
		status.UpdatedReplicas = deployment.Status.UpdatedReplicas
		status.ReadyReplicas = deployment.Status.ReadyReplicas
		status.AvailableReplicas = deployment.Status.AvailableReplicas
	}

	ready := readyCondition(deployment, syncErr)
	available, progressing := mirroredCondition(deployment, appsv1.DeploymentAvailable), mirroredCondition(deployment, appsv1.DeploymentProgressing)
	if deployment == nil {
		// Nothing to mirror: say why, in the Ready condition's words.
		available.Reason, available.Message = ready.Reason, ready.Message
		progressing.Reason, progressing.Message = ready.Reason, ready.Message
	}
	for _, condition := range []metav1.Condition{ready, available, progressing} {
		condition.ObservedGeneration = robot.Generation
		condition.LastTransitionTime = now
		if len(condition.Message) > maxMessageLength {
			condition.Message = condition.Message[:maxMessageLength-3] + "..."
		}
		meta.SetStatusCondition(&status.Conditions, condition)
	}
	return status
}

// observed reports whether the Deployment controller has caught up with
// deployment's latest spec, so that its status and conditions describe it.
func observed(deployment *appsv1.Deployment) bool {
	return deployment.Status.ObservedGeneration >= deployment.Generation
}

// readyCondition summarizes, for a person, whether the Robot runs as asked.
func readyCondition(deployment *appsv1.Deployment, syncErr error) metav1.Condition {
	notReady := func(reason, format string, args ...any) metav1.Condition {
		return metav1.Condition{Type: robotv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	var nameTaken *nameTakenError
	var earlier *earlierRobotError
	var invalid *invalidSpecError
	switch {
	case errors.As(syncErr, &earlier):
		return notReady(robotv1alpha1.ReasonRolloutInProgress, "%s", earlier.Error())
	case errors.As(syncErr, &nameTaken):
		return notReady(robotv1alpha1.ReasonDeploymentNameTaken, "%s", nameTaken.Error())
	case errors.As(syncErr, &invalid):
		return notReady(robotv1alpha1.ReasonInvalidSpec, "%s", invalid.Error())
	case syncErr != nil:
		return notReady(robotv1alpha1.ReasonSyncFailed, "%s (retrying)", syncErr.Error())
	case deployment == nil:
		return notReady(robotv1alpha1.ReasonRolloutInProgress, "waiting for the Deployment to be created")
	case !observed(deployment):
		return notReady(robotv1alpha1.ReasonRolloutInProgress, "waiting for the Deployment controller to observe generation %d of Deployment %q", deployment.Generation, deployment.Name)
	}
	if progressing := deploymentCondition(deployment, appsv1.DeploymentProgressing); progressing != nil && progressing.Reason == robotv1alpha1.ReasonProgressDeadlineExceeded {
		return notReady(robotv1alpha1.ReasonProgressDeadlineExceeded, "%s", progressing.Message)
	}
	desired, s := ptr.Deref(deployment.Spec.Replicas, 1), deployment.Status
	switch {
	case s.UpdatedReplicas > desired:
		return notReady(robotv1alpha1.ReasonRolloutInProgress, "scaling down from %d to %d replicas", s.UpdatedReplicas, desired)
	case s.UpdatedReplicas < desired:
		return notReady(robotv1alpha1.ReasonRolloutInProgress, "%d of %d replicas run the current spec", s.UpdatedReplicas, desired)
	case s.Replicas > s.UpdatedReplicas:
		return notReady(robotv1alpha1.ReasonRolloutInProgress, "%d old replicas are pending termination", s.Replicas-s.UpdatedReplicas)
	case s.AvailableReplicas < s.UpdatedReplicas:
		return notReady(robotv1alpha1.ReasonRolloutInProgress, "%d of %d updated replicas are available", s.AvailableReplicas, s.UpdatedReplicas)
	}
	return metav1.Condition{
		Type:    robotv1alpha1.ConditionReady,
		Status:  metav1.ConditionTrue,
		Reason:  robotv1alpha1.ReasonRolloutComplete,
		Message: fmt.Sprintf("%d of %d replicas are available", s.AvailableReplicas, desired),
	}
}

// mirroredCondition copies one of the Deployment's conditions, once the
// Deployment controller has observed its latest spec; until then the
// condition is Unknown.
func mirroredCondition(deployment *appsv1.Deployment, conditionType appsv1.DeploymentConditionType) metav1.Condition {
	condition := metav1.Condition{Type: string(conditionType), Status: metav1.ConditionUnknown, Reason: robotv1alpha1.ReasonDeploymentNotObserved}
	switch c := deploymentCondition(deployment, conditionType); {
	case deployment == nil:
	case !observed(deployment):
		condition.Message = fmt.Sprintf("the Deployment controller has not observed generation %d of Deployment %q yet", deployment.Generation, deployment.Name)
	case c == nil:
		condition.Message = fmt.Sprintf("Deployment %q has no %s condition yet", deployment.Name, conditionType)
	default:
		condition.Status = metav1.ConditionStatus(c.Status)
		condition.Message = c.Message
		if conditionReason.MatchString(c.Reason) {
			condition.Reason = c.Reason
		} else {
			condition.Reason = string(conditionType)
		}
	}
	return condition
}

func deploymentCondition(deployment *appsv1.Deployment, conditionType appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	if deployment == nil {
		return nil
	}
	for i := range deployment.Status.Conditions {
		if deployment.Status.Conditions[i].Type == conditionType {
			return &deployment.Status.Conditions[i]
		}
	}
	return nil
}

// statusApplyConfiguration is the status the operator applies for robot: all
// of the fields it computes, and only its own conditions, so that a condition
// another controller sets on the Robot is left to that controller.
func statusApplyConfiguration(robot *robotv1alpha1.Robot, status *robotv1alpha1.RobotStatus) *robotac.RobotApplyConfiguration {
	ac := robotac.RobotStatus().
		WithObservedGeneration(status.ObservedGeneration).
		WithDeploymentName(status.DeploymentName).
		WithReplicas(status.Replicas).
		WithUpdatedReplicas(status.UpdatedReplicas).
		WithReadyReplicas(status.ReadyReplicas).
		WithAvailableReplicas(status.AvailableReplicas).
		WithSelector(status.Selector)
	for _, c := range status.Conditions {
		if !ownCondition(c.Type) {
			continue
		}
		ac.WithConditions(metav1ac.Condition().
			WithType(c.Type).
			WithStatus(c.Status).
			WithObservedGeneration(c.ObservedGeneration).
			WithLastTransitionTime(c.LastTransitionTime).
			WithReason(c.Reason).
			WithMessage(c.Message))
	}
	return robotac.Robot(robot.Name, robot.Namespace).WithStatus(ac)
}

func ownCondition(conditionType string) bool {
	switch conditionType {
	case robotv1alpha1.ConditionReady, robotv1alpha1.ConditionAvailable, robotv1alpha1.ConditionProgressing:
		return true
	}
	return false
}

// needsAttention reports whether a Ready reason is one a person must act on;
// the operator records a Warning event when a Robot enters it.
func needsAttention(reason string) bool {
	switch reason {
	case robotv1alpha1.ReasonDeploymentNameTaken, robotv1alpha1.ReasonInvalidSpec, robotv1alpha1.ReasonProgressDeadlineExceeded:
		return true
	}
	return false
}
