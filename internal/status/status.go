package status

import (
	"cmp"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	robotac "github.com/robot-operator/robot-operator/pkg/generated/applyconfiguration/robot/v1beta1"
)

// maxMessageLength bounds condition messages well inside the API's limit, so
// a long error never makes the status write itself fail.
const maxMessageLength = 1024

// maxReasonLength is the longest reason metav1.Condition accepts.
const maxReasonLength = 1024

// conditionReason matches what metav1.Condition accepts as a reason.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// Compute returns the status that describes robot, given its
// Deployment and its Service (each nil when there is none the Robot
// controls), the error of the
// sync that just ran, and the current time. It is a pure function: the same
// inputs always give the same status, and conditions keep their
// lastTransitionTime unless their status changes.
func Compute(robot *robotv1beta1.Robot, deployment *appsv1.Deployment, service *corev1.Service, syncErr error, now metav1.Time) robotv1beta1.RobotStatus {
	status := robotv1beta1.RobotStatus{
		ObservedGeneration: robot.Generation,
		DeploymentName:     workload.DeploymentName(robot),
		Selector:           workload.SelectorString(robot),
		Conditions:         append([]metav1.Condition(nil), robot.Status.Conditions...),
		// Kept until the Robot is Ready with another revision
		// (WithReadyRevision).
		LastReadyRevision: robot.Status.LastReadyRevision.DeepCopy(),
	}
	if service != nil {
		status.ServiceName = service.Name
	}
	status.Address = serviceAddress(service)
	if deployment != nil {
		status.Replicas = deployment.Status.Replicas
		status.UpdatedReplicas = deployment.Status.UpdatedReplicas
		status.ReadyReplicas = deployment.Status.ReadyReplicas
		status.AvailableReplicas = deployment.Status.AvailableReplicas
	}

	ready := readyCondition(deployment, syncErr, specApplied(robot, deployment, syncErr))
	available, progressing := mirroredCondition(deployment, appsv1.DeploymentAvailable), mirroredCondition(deployment, appsv1.DeploymentProgressing)
	if deployment == nil {
		// Nothing to mirror: say why, in the Ready condition's words.
		available.Reason, available.Message = ready.Reason, ready.Message
		progressing.Reason, progressing.Message = ready.Reason, ready.Message
	}
	for _, condition := range []metav1.Condition{ready, available, progressing, syncedCondition(syncErr)} {
		condition.ObservedGeneration = robot.Generation
		condition.LastTransitionTime = now
		if len(condition.Message) > maxMessageLength {
			condition.Message = truncate(condition.Message, maxMessageLength-3) + "..."
		}
		meta.SetStatusCondition(&status.Conditions, condition)
	}
	setProgress(&status, robot.Status.Conditions, robot.Generation, now)
	return status
}

// truncate cuts s, longer than n bytes, to at most n bytes at the start of a
// character, so that it stays UTF-8. Cut inside a character, the message
// would reach the API server with the broken character replaced: the stored
// message would never equal the one computed, and every sync would write the
// status again.
func truncate(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// observed reports whether the Deployment controller has caught up with
// deployment's latest spec, so that its status and conditions describe it.
func observed(deployment *appsv1.Deployment) bool {
	return deployment.Status.ObservedGeneration >= deployment.Generation
}

// specApplied reports whether deployment holds the spec robot asks for now:
// after a successful sync it does, and after one whose error keeps Ready
// (outcome.Failure.KeepsReady); after another failed one, only if it was
// applied before (its spec hash is the Robot's).
func specApplied(robot *robotv1beta1.Robot, deployment *appsv1.Deployment, syncErr error) bool {
	if deployment == nil || syncErr == nil || outcome.Classify(syncErr).KeepsReady {
		return deployment != nil
	}
	// The config digest is not the Robot's spec: the Deployment holds the
	// Robot's spec whatever version of its config it was applied with.
	desired, err := workload.NewDeploymentWithConfig(robot, deployment.Spec.Template.Annotations[workload.AnnotationConfigDigest])
	return err == nil && deployment.Annotations[workload.AnnotationSpecHash] == desired.Annotations[workload.AnnotationSpecHash]
}

// failureMessage is what a condition says about a failed sync.
func failureMessage(syncErr error, f outcome.Failure) string {
	if f.Retry == outcome.RetryWithBackoff {
		return syncErr.Error() + " (retrying)"
	}
	return syncErr.Error()
}

// syncedCondition says whether the sync that just ran did its job.
func syncedCondition(syncErr error) metav1.Condition {
	if syncErr == nil {
		return metav1.Condition{Type: robotv1beta1.ConditionSynced, Status: metav1.ConditionTrue, Reason: robotv1beta1.ReasonSynced,
			Message: "the Deployment holds what the Robot asks for"}
	}
	f := outcome.Classify(syncErr)
	return metav1.Condition{Type: robotv1beta1.ConditionSynced, Status: metav1.ConditionFalse, Reason: f.Reason, Message: failureMessage(syncErr, f)}
}

// ReportsPaused reports whether status says the Robot is paused: its Synced
// condition has the reason Paused. Whether a status write saw the Robot
// paused is told from it, as whether it saw the spec is told from
// observedGeneration.
func ReportsPaused(status robotv1beta1.RobotStatus) bool {
	synced := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionSynced)
	return synced != nil && synced.Reason == robotv1beta1.ReasonPaused
}

// ReportsLoadBalancerClassImmutable reports whether status says, of
// generation, that the Robot's Service could not take its loadBalancerClass
// (Synced has the reason LoadBalancerClassImmutable). The status is the
// memory of the API server's refusal: the next sync of the same spec does not
// send the apply again (drift.LoadBalancerClassChange).
func ReportsLoadBalancerClassImmutable(status robotv1beta1.RobotStatus, generation int64) bool {
	synced := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionSynced)
	return synced != nil && synced.Reason == robotv1beta1.ReasonLoadBalancerClassImmutable &&
		status.ObservedGeneration == generation && synced.ObservedGeneration == generation
}

// ReadyFor reports whether status says Ready=True for generation: the
// Ready condition and the status itself both observed it.
func ReadyFor(status robotv1beta1.RobotStatus, generation int64) bool {
	c := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation && status.ObservedGeneration == generation
}

// SyncedFor reports whether status says Synced=True for generation: the
// operator has applied that generation's spec, and the status observed it.
func SyncedFor(status robotv1beta1.RobotStatus, generation int64) bool {
	c := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionSynced)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation && status.ObservedGeneration == generation
}

// readyCondition summarizes, for a person, whether the Robot runs as asked.
// It is about the workload: a failed sync makes it False only while the
// Deployment does not hold the Robot's current spec (applied is false), so
// that a failed request never makes a running Robot not Ready.
func readyCondition(deployment *appsv1.Deployment, syncErr error, applied bool) metav1.Condition {
	notReady := func(reason, format string, args ...any) metav1.Condition {
		return metav1.Condition{Type: robotv1beta1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case syncErr != nil && !applied:
		f := outcome.Classify(syncErr)
		return notReady(cmp.Or(f.ReadyReason, f.Reason), "%s", failureMessage(syncErr, f))
	case deployment == nil:
		return notReady(robotv1beta1.ReasonRolloutInProgress, "waiting for the Deployment to be created")
	case !observed(deployment):
		return notReady(robotv1beta1.ReasonRolloutInProgress, "waiting for the Deployment controller to observe generation %d of Deployment %q", deployment.Generation, deployment.Name)
	}
	if progressing := deploymentCondition(deployment, appsv1.DeploymentProgressing); progressing != nil && progressing.Reason == robotv1beta1.ReasonProgressDeadlineExceeded {
		return notReady(robotv1beta1.ReasonProgressDeadlineExceeded, "%s", progressing.Message)
	}
	desired, s := ptr.Deref(deployment.Spec.Replicas, 1), deployment.Status
	switch {
	case s.UpdatedReplicas > desired:
		return notReady(robotv1beta1.ReasonRolloutInProgress, "scaling down from %d to %d replicas", s.UpdatedReplicas, desired)
	case s.UpdatedReplicas < desired:
		return notReady(robotv1beta1.ReasonRolloutInProgress, "%d of %d replicas run the current spec", s.UpdatedReplicas, desired)
	case s.Replicas > s.UpdatedReplicas:
		return notReady(robotv1beta1.ReasonRolloutInProgress, "%d old replicas are pending termination", s.Replicas-s.UpdatedReplicas)
	case s.AvailableReplicas < s.UpdatedReplicas:
		return notReady(robotv1beta1.ReasonRolloutInProgress, "%d of %d updated replicas are available", s.AvailableReplicas, s.UpdatedReplicas)
	}
	return metav1.Condition{
		Type:    robotv1beta1.ConditionReady,
		Status:  metav1.ConditionTrue,
		Reason:  robotv1beta1.ReasonRolloutComplete,
		Message: fmt.Sprintf("%d of %d replicas are available", s.AvailableReplicas, desired),
	}
}

// mirroredCondition copies one of the Deployment's conditions, once the
// Deployment controller has observed its latest spec; until then the
// condition is Unknown.
func mirroredCondition(deployment *appsv1.Deployment, conditionType appsv1.DeploymentConditionType) metav1.Condition {
	condition := metav1.Condition{Type: string(conditionType), Status: metav1.ConditionUnknown, Reason: robotv1beta1.ReasonDeploymentNotObserved}
	switch c := deploymentCondition(deployment, conditionType); {
	case deployment == nil:
	case !observed(deployment):
		condition.Message = fmt.Sprintf("the Deployment controller has not observed generation %d of Deployment %q yet", deployment.Generation, deployment.Name)
	case c == nil:
		condition.Message = fmt.Sprintf("Deployment %q has no %s condition yet", deployment.Name, conditionType)
	default:
		// Whoever may write the Deployment's status may write any
		// string in its conditions. What the Robot's CRD would refuse
		// is not copied (the status stays Unknown, the reason is the
		// condition's type), or no status write could succeed.
		switch status := metav1.ConditionStatus(c.Status); status {
		case metav1.ConditionTrue, metav1.ConditionFalse:
			condition.Status = status
		}
		condition.Message = c.Message
		if conditionReason.MatchString(c.Reason) && len(c.Reason) <= maxReasonLength {
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

// ApplyConfiguration is the status the operator applies for robot: all
// of the fields it computes, and only its own conditions, so that a condition
// another controller sets on the Robot is left to that controller.
func ApplyConfiguration(robot *robotv1beta1.Robot, status *robotv1beta1.RobotStatus) *robotac.RobotApplyConfiguration {
	ac := robotac.RobotStatus().
		WithObservedGeneration(status.ObservedGeneration).
		WithDeploymentName(status.DeploymentName).
		WithReplicas(status.Replicas).
		WithUpdatedReplicas(status.UpdatedReplicas).
		WithReadyReplicas(status.ReadyReplicas).
		WithAvailableReplicas(status.AvailableReplicas).
		WithSelector(status.Selector)
	if status.ServiceName != "" {
		// Only when there is one, so that the status of a Robot without a
		// Service is written exactly as before the field existed.
		ac.WithServiceName(status.ServiceName)
	}
	if status.Address != nil {
		ac.WithAddress(addressApplyConfiguration(status.Address))
	}
	if last := status.LastReadyRevision; last != nil {
		ac.WithLastReadyRevision(robotac.RobotReadyRevision().WithName(last.Name).WithRevision(last.Revision).WithReadyTime(last.ReadyTime))
	}
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
	case robotv1beta1.ConditionReady, robotv1beta1.ConditionAvailable, robotv1beta1.ConditionProgressing, robotv1beta1.ConditionSynced,
		robotv1beta1.ConditionReconciling, robotv1beta1.ConditionStalled:
		return true
	}
	return false
}

// addressApplyConfiguration is address as the status apply sends it.
func addressApplyConfiguration(address *robotv1beta1.RobotAddress) *robotac.RobotAddressApplyConfiguration {
	ac := robotac.RobotAddress().WithRouteURLs(address.RouteURLs...)
	if address.URL != "" {
		ac.WithURL(address.URL)
	}
	if address.Hostname != "" {
		ac.WithHostname(address.Hostname)
	}
	for _, p := range address.Ports {
		port := robotac.RobotAddressPort().WithPort(p.Port)
		if p.Name != "" {
			port.WithName(p.Name)
		}
		if p.Protocol != "" {
			port.WithProtocol(p.Protocol)
		}
		if p.NodePort != 0 {
			port.WithNodePort(p.NodePort)
		}
		ac.WithPorts(port)
	}
	if lb := address.LoadBalancer; lb != nil {
		lbac := robotac.RobotLoadBalancerAddress()
		for _, a := range lb.Addresses {
			lbac.WithAddresses(robotac.RobotNetworkAddress().WithType(a.Type).WithValue(a.Value))
		}
		if lb.Message != "" {
			lbac.WithMessage(lb.Message)
		}
		ac.WithLoadBalancer(lbac)
	}
	return ac
}
