package status

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robot-operator/robot-operator/internal/podsummary"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// This file says, on the Robot, why its pods do not run. The operator caches
// the pods and ReplicaSets of the Deployments it manages (selected by label
// on the server, so other pods cost nothing), stripped down to what the
// diagnosis reads, and a change to either queues its Robot. The diagnosis is
// a pure function of the Deployment, its ReplicaSets, its pods and the time;
// it is consulted only while the Robot is not Ready because replicas are
// missing or unavailable, and it gives a cause only from hard signals, so
// that a rollout that is merely slow reads as RolloutInProgress and costs no
// write more than before.

// readinessGrace is how long a started container may stay not ready before
// the Robot says that its readiness probe keeps failing: an application
// that takes a few seconds to warm up is slow, not broken.
const readinessGrace = 30 * time.Second

// podCause is why a Robot's pods do not run: a Ready reason and its message.
type podCause struct {
	reason  string
	message string
}

// Diagnosed is Compute with the Ready condition saying why the
// pods do not run, when the Robot is not Ready for want of available
// replicas and pods (or the Deployment) show a cause. deployment must be
// controlled by robot; pods are the cached pods that carry robot's name, and
// replicaSets the cached ReplicaSets that control them (others may be there
// too). Only the pods of deployment's current ReplicaSet are read. The
// second result, when positive, is when to look again: a cause that only
// time may reveal (a readiness probe failing for long enough) has no event
// of its own.
//
// A Robot whose pods run but a part of which waits on a person (its
// Service's name taken, say) is not Ready either (held.go). The conditions
// Reconciling and Stalled follow the Ready condition it settles on
// (progress.go).
func Diagnosed(robot *robotv1beta1.Robot, deployment *appsv1.Deployment, service *corev1.Service,
	replicaSets []*podsummary.ReplicaSet, pods []*podsummary.Pod, syncErr error, now metav1.Time) (robotv1beta1.RobotStatus, time.Duration) {
	status, recheck := diagnoseStatus(robot, deployment, service, replicaSets, pods, syncErr, now)
	withHeld(robot, &status, syncErr, now)
	setProgress(&status, robot.Status.Conditions, robot.Generation, now)
	return status, recheck
}

// diagnoseStatus is Diagnosed but for Reconciling and Stalled, which follow
// the Ready condition it settles on.
func diagnoseStatus(robot *robotv1beta1.Robot, deployment *appsv1.Deployment, service *corev1.Service,
	replicaSets []*podsummary.ReplicaSet, pods []*podsummary.Pod, syncErr error, now metav1.Time) (robotv1beta1.RobotStatus, time.Duration) {
	status := Compute(robot, deployment, service, syncErr, now)
	ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || deployment == nil ||
		(ready.Reason != robotv1beta1.ReasonRolloutInProgress && ready.Reason != robotv1beta1.ReasonProgressDeadlineExceeded) {
		return status, 0
	}
	cause, recheck := diagnose(deployment, replicaSets, pods, now.Time)
	if cause != nil && cause.reason == betweenCrashes {
		// A container runs again after an exit with an error. Only a
		// crash loop the kubelet reported before goes on: the Robot
		// does not flip its reason at every restart of a real crash
		// loop, and a single exit is not called one.
		cause = nil
		if previous := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionReady); previous != nil &&
			previous.Status == metav1.ConditionFalse && previous.Reason == robotv1beta1.ReasonCrashLoop {
			cause = &podCause{reason: previous.Reason, message: previous.Message}
		}
	}
	if cause == nil {
		return status, recheck
	}
	// Still False: the condition keeps its lastTransitionTime.
	ready.Reason, ready.Message = cause.reason, cause.message
	if len(ready.Message) > maxMessageLength {
		ready.Message = truncate(ready.Message, maxMessageLength-3) + "..."
	}
	return status, recheck
}

// diagnose returns why deployment's pods do not run, or nil when nothing
// says they will not (they may be merely slow). The Deployment's
// ReplicaFailure condition comes first: when the pods cannot even be
// created, none of them can tell. Then, among the pods of the Deployment's
// current ReplicaSet (the pods of earlier ones are on their way out, and
// pods that only carry the Robot's name may be a predecessor's), the first
// in name order with the most telling cause. A positive duration is when a
// cause may appear with no change to any object.
func diagnose(deployment *appsv1.Deployment, replicaSets []*podsummary.ReplicaSet, pods []*podsummary.Pod, now time.Time) (*podCause, time.Duration) {
	if !observed(deployment) {
		return nil, 0
	}
	if failure := deploymentCondition(deployment, appsv1.DeploymentReplicaFailure); failure != nil && failure.Status == corev1.ConditionTrue {
		return replicaFailureCause(failure), 0
	}
	current := currentReplicaSet(deployment, replicaSets)
	if current == nil {
		// The cache has yet to see the ReplicaSet the Deployment
		// controller made: no pod is known to be of the current template.
		// Its add event queues the Robot.
		return nil, 0
	}
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b *podsummary.Pod) int { return cmp.Compare(a.Name, b.Name) })
	var (
		best     *podCause
		rank     = len(causeRanks)
		recheck  time.Duration
		restarts bool
	)
	for _, pod := range sorted {
		if pod.DeletionTimestamp != nil || pod.ReplicaSetUID != current.UID {
			continue
		}
		cause, after := podDiagnosis(pod, &deployment.Spec.Template.Spec, now)
		if after > 0 && (recheck == 0 || after < recheck) {
			recheck = after
		}
		if cause == nil {
			continue
		}
		if cause.reason == betweenCrashes {
			restarts = true
			continue
		}
		if r := slices.Index(causeRanks, cause.reason); r < rank {
			best, rank = cause, r
		}
	}
	if best != nil {
		return best, 0
	}
	if restarts {
		return &podCause{reason: betweenCrashes}, recheck
	}
	return nil, recheck
}

// betweenCrashes is no Ready reason: diagnose returns it when the only sign
// is a container running again, not ready yet, after an exit with an error.
// That is a crash loop only if the kubelet said CrashLoopBackOff before.
const betweenCrashes = "betweenCrashes"

// causeRanks orders the pod causes from the most telling: a pod that cannot
// start at all says more than one that started and fails.
var causeRanks = []string{
	robotv1beta1.ReasonImagePullFailed,
	robotv1beta1.ReasonConfigMissing,
	robotv1beta1.ReasonUnschedulable,
	robotv1beta1.ReasonCrashLoop,
	robotv1beta1.ReasonReadinessProbeFailing,
}

// replicaFailureCause tells, from the Deployment's ReplicaFailure condition,
// what refuses the pods. The ReplicaSet controller copies the API server's
// refusal into the message; the admission plugins' wording is stable.
func replicaFailureCause(failure *appsv1.DeploymentCondition) *podCause {
	reason := robotv1beta1.ReasonReplicaFailure
	switch {
	case strings.Contains(failure.Message, "exceeded quota"):
		reason = robotv1beta1.ReasonQuotaExceeded
	case strings.Contains(failure.Message, "violates PodSecurity"):
		reason = robotv1beta1.ReasonPodSecurityRejected
	}
	return &podCause{reason: reason, message: "pods cannot be created: " + failure.Message}
}

// podDiagnosis returns the hard signal that the pod will not run as it is, or
// nil; and, for a started container not ready yet, how long until it has
// been not ready for readinessGrace. Each of its containers is read, its
// init containers and sidecars as the Robot's, and the most telling cause
// of them is the pod's. template is the pod template of the Deployment: the
// pods of the current ReplicaSet run its images.
func podDiagnosis(p *podsummary.Pod, template *corev1.PodSpec, now time.Time) (*podCause, time.Duration) {
	if p.Unschedulable != "" {
		return &podCause{robotv1beta1.ReasonUnschedulable, fmt.Sprintf("pod %s cannot be scheduled: %s", p.Name, p.Unschedulable)}, 0
	}
	var (
		best     *podCause
		rank     = len(causeRanks)
		recheck  time.Duration
		restarts bool
	)
	consider := func(c *podsummary.Container, main bool) {
		cause, after := containerDiagnosis(p, c, main, containerImage(template, c.Name), now)
		if after > 0 && (recheck == 0 || after < recheck) {
			recheck = after
		}
		switch {
		case cause == nil:
		case cause.reason == betweenCrashes:
			restarts = true
		default:
			if r := slices.Index(causeRanks, cause.reason); r < rank {
				best, rank = cause, r
			}
		}
	}
	others := p.Others()
	for i := range others {
		consider(&others[i], false)
	}
	if p.Container != nil {
		consider(p.Container, true)
	}
	switch {
	case best != nil:
		return best, 0
	case restarts:
		return &podCause{reason: betweenCrashes}, recheck
	}
	return nil, recheck
}

// containerDiagnosis is podDiagnosis for one container: main says it is
// the Robot's, else it is an init container or a sidecar, which the
// messages name. image is the container's in the pod's template.
func containerDiagnosis(p *podsummary.Pod, c *podsummary.Container, main bool, image string, now time.Time) (*podCause, time.Duration) {
	// The Robot's container's messages name no container: they were
	// written when it was the pod's only one, and stay as they were.
	named := ""
	if !main {
		named = fmt.Sprintf("%s %q ", kindOf(c), c.Name)
	}
	switch c.WaitingReason {
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
		return &podCause{robotv1beta1.ReasonImagePullFailed,
			fmt.Sprintf("%scannot pull image %q (%s): %s", named, image, c.WaitingReason, c.WaitingMessage)}, 0
	case "CreateContainerConfigError":
		what := "its container"
		if !main {
			what = "its " + strings.TrimSpace(named)
		}
		return &podCause{robotv1beta1.ReasonConfigMissing,
			fmt.Sprintf("pod %s cannot start %s: %s", p.Name, what, c.WaitingMessage)}, 0
	case "CrashLoopBackOff":
		return &podCause{robotv1beta1.ReasonCrashLoop, crashMessage(kindOf(c), c)}, 0
	}
	if !main && !c.Sidecar {
		// A plain init container is never ready while it runs. Failed and
		// waiting to run again, or running again after a failure: only a
		// crash loop the kubelet reported before goes on (Diagnosed).
		if c.LastExit != nil && c.LastExit.ExitCode != 0 && (c.Running || c.WaitingReason == "") {
			return &podCause{reason: betweenCrashes}, 0
		}
		return nil, 0
	}
	if c.Ready || !c.Running || !c.Started {
		return nil, 0
	}
	since := c.StartedAt.Time
	if p.ReadySince.After(since) {
		since = p.ReadySince.Time
	}
	if wait := since.Add(readinessGrace).Sub(now); wait > 0 {
		if c.LastExit != nil && c.LastExit.ExitCode != 0 {
			// Running again after an exit with an error: the kubelet has
			// not said CrashLoopBackOff, so neither does the pod; the
			// Robot keeps a crash loop it reported before (Diagnosed).
			return &podCause{reason: betweenCrashes}, wait
		}
		return nil, wait
	}
	return &podCause{robotv1beta1.ReasonReadinessProbeFailing,
		fmt.Sprintf("%s %q of pod %s is running but not ready since %s: its readiness probe keeps failing",
			kindOf(c), c.Name, p.Name, since.UTC().Format(time.RFC3339))}, 0
}

// kindOf is what the messages call c: the Robot's container, an init
// container or a sidecar.
func kindOf(c *podsummary.Container) string {
	switch {
	case c.Name == workload.ContainerName:
		return "container"
	case c.Sidecar:
		return "sidecar"
	}
	return "init container"
}

// crashMessage says how the container, of kind, last exited. It leaves out
// the restart count and the back-off, which change at every restart, so
// that a crash loop costs one status write, not one per restart.
func crashMessage(kind string, c *podsummary.Container) string {
	last := c.LastExit
	if last == nil {
		return fmt.Sprintf("%s %q keeps exiting (CrashLoopBackOff)", kind, c.Name)
	}
	msg := fmt.Sprintf("%s %q keeps exiting (CrashLoopBackOff): last exit code %d", kind, c.Name, last.ExitCode)
	if last.Reason != "" {
		msg += " (" + last.Reason + ")"
	}
	if last.Message != "" {
		msg += ": " + last.Message
	}
	return msg
}

// containerImage is the image of the container name in template: the
// Robot's, an init container's or a sidecar's.
func containerImage(template *corev1.PodSpec, name string) string {
	for _, containers := range [][]corev1.Container{template.Containers, template.InitContainers} {
		for _, c := range containers {
			if c.Name == name {
				return c.Image
			}
		}
	}
	return ""
}

// warnsOnCause reports whether a Ready reason is a cause the diagnosis
// found: a Warning event is recorded once when the Robot enters it.
func warnsOnCause(reason string) bool {
	return slices.Contains(causeRanks, reason) || slices.Contains([]string{
		robotv1beta1.ReasonQuotaExceeded, robotv1beta1.ReasonPodSecurityRejected, robotv1beta1.ReasonReplicaFailure}, reason)
}

// currentReplicaSet returns deployment's current ReplicaSet among
// replicaSets: the one it controls of its revision, which the Deployment
// controller sets to its new ReplicaSet's. Nil when the cache has none
// (yet), or when deployment has no revision. Should two claim the revision,
// the first by name is taken, so that the result does not depend on the
// order of the cache.
func currentReplicaSet(deployment *appsv1.Deployment, replicaSets []*podsummary.ReplicaSet) *podsummary.ReplicaSet {
	revision := deployment.Annotations[podsummary.RevisionAnnotation]
	if revision == "" {
		return nil
	}
	var current *podsummary.ReplicaSet
	for _, rs := range replicaSets {
		if rs.OwnedBy(deployment.UID) && rs.Revision == revision && (current == nil || rs.Name < current.Name) {
			current = rs
		}
	}
	return current
}
