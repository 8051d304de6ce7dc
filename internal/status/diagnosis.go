package status

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/robot-operator/robot-operator/internal/transform"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

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
// The conditions Reconciling and Stalled follow the Ready condition it
// settles on (progress.go).
func Diagnosed(robot *robotv1beta1.Robot, deployment *appsv1.Deployment, service *corev1.Service,
	replicaSets []*ReplicaSetSummary, pods []*PodSummary, syncErr error, now metav1.Time) (robotv1beta1.RobotStatus, time.Duration) {
	status, recheck := diagnoseStatus(robot, deployment, service, replicaSets, pods, syncErr, now)
	setProgress(&status, robot.Generation, now)
	return status, recheck
}

// diagnoseStatus is Diagnosed but for Reconciling and Stalled, which follow
// the Ready condition it settles on.
func diagnoseStatus(robot *robotv1beta1.Robot, deployment *appsv1.Deployment, service *corev1.Service,
	replicaSets []*ReplicaSetSummary, pods []*PodSummary, syncErr error, now metav1.Time) (robotv1beta1.RobotStatus, time.Duration) {
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
func diagnose(deployment *appsv1.Deployment, replicaSets []*ReplicaSetSummary, pods []*PodSummary, now time.Time) (*podCause, time.Duration) {
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
	image := templateImage(deployment)
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b *PodSummary) int { return cmp.Compare(a.Name, b.Name) })
	var (
		best     *podCause
		rank     = len(causeRanks)
		recheck  time.Duration
		restarts bool
	)
	for _, pod := range sorted {
		if pod.DeletionTimestamp != nil || pod.replicaSetUID != current.UID {
			continue
		}
		cause, after := pod.diagnosis(image, now)
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

// PodSummary is what the operator caches of a pod of one of its Robots: what
// diagnose reads and what finds the Robot, nothing else. A corev1.Pod is
// 1,240 bytes before any of its fields are filled, and a pod as the API
// server sends it several kilobytes; a summary is a few hundred bytes
// (docs/diagnosis.md has the figures).
type PodSummary struct {
	// Name, Namespace, ResourceVersion and DeletionTimestamp only: the
	// informer keys and versions its objects by them.
	cachedMeta
	// Robot is the value of the pod's selector label: its Robot's name.
	Robot string
	// replicaSet and replicaSetUID name the pod's controller, its
	// ReplicaSet: the name finds it in the cache, the UID tells the pods of
	// the Deployment's current ReplicaSet. The image could not: a new
	// template may keep it, and a predecessor Robot of the same name may
	// have run it (its ReplicaSet may even have had the same name).
	replicaSet    string
	replicaSetUID types.UID
	// unschedulable is the scheduler's message when it finds no node.
	unschedulable string
	// readySince is when the pod's Ready condition last changed.
	readySince metav1.Time
	// container is the Robot container's status; nil until the kubelet
	// reports one.
	container *containerSummary
}

// containerSummary is what the diagnosis reads of the Robot container's
// status.
type containerSummary struct {
	name           string
	waitingReason  string
	waitingMessage string
	running        bool
	startedAt      metav1.Time
	started, ready bool
	// lastExit is how the container last terminated; nil if it never did.
	lastExit *corev1.ContainerStateTerminated
}

// GetObjectKind is part of runtime.Object, so that the informer and its
// handlers treat a summary as any other cached object.
func (p *PodSummary) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject is part of runtime.Object.
func (p *PodSummary) DeepCopyObject() runtime.Object {
	copied := *p
	if p.DeletionTimestamp != nil {
		copied.DeletionTimestamp = p.DeletionTimestamp.DeepCopy()
	}
	if p.container != nil {
		c := *p.container
		if c.lastExit != nil {
			c.lastExit = c.lastExit.DeepCopy()
		}
		copied.container = &c
	}
	return &copied
}

// SummarizePod is the pod informer's transform: it turns a pod into the
// PodSummary the cache keeps.
func SummarizePod(obj interface{}) (interface{}, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		// A tombstone: its object was summarized when it was cached.
		return obj, nil
	}
	summary := &PodSummary{
		cachedMeta: cachedMeta{
			Name:              pod.Name,
			Namespace:         pod.Namespace,
			ResourceVersion:   pod.ResourceVersion,
			DeletionTimestamp: pod.DeletionTimestamp,
		},
		Robot: pod.Labels[workload.LabelRobot],
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		summary.replicaSet, summary.replicaSetUID = prefixOf(pod.Name, ref.Name), ref.UID
	}
	for _, c := range pod.Status.Conditions {
		switch {
		case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable:
			summary.unschedulable = c.Message
		case c.Type == corev1.PodReady:
			summary.readySince = c.LastTransitionTime
		}
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name != workload.ContainerName {
			continue
		}
		// Constants where they can be: the cache keeps no string of its
		// own for them.
		container := &containerSummary{name: workload.ContainerName, ready: c.Ready, started: ptr.Deref(c.Started, false)}
		switch s := c.State; {
		case s.Waiting != nil:
			container.waitingReason, container.waitingMessage = transform.InternString(s.Waiting.Reason), s.Waiting.Message
		case s.Running != nil:
			container.running, container.startedAt = true, s.Running.StartedAt
		}
		if last := c.LastTerminationState.Terminated; last != nil {
			container.lastExit = &corev1.ContainerStateTerminated{ExitCode: last.ExitCode, Reason: transform.InternString(last.Reason), Message: last.Message}
		}
		summary.container = container
	}
	return summary, nil
}

// diagnosis returns the hard signal that the pod will not run as it is, or
// nil; and, for a started container not ready yet, how long until it has
// been not ready for readinessGrace. image is the Robot container's in the
// pod's template: the pods of the current ReplicaSet run the Deployment's.
func (p *PodSummary) diagnosis(image string, now time.Time) (*podCause, time.Duration) {
	if p.unschedulable != "" {
		return &podCause{robotv1beta1.ReasonUnschedulable, fmt.Sprintf("pod %s cannot be scheduled: %s", p.Name, p.unschedulable)}, 0
	}
	c := p.container
	if c == nil {
		return nil, 0
	}
	switch c.waitingReason {
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
		return &podCause{robotv1beta1.ReasonImagePullFailed,
			fmt.Sprintf("cannot pull image %q (%s): %s", image, c.waitingReason, c.waitingMessage)}, 0
	case "CreateContainerConfigError":
		return &podCause{robotv1beta1.ReasonConfigMissing,
			fmt.Sprintf("pod %s cannot start its container: %s", p.Name, c.waitingMessage)}, 0
	case "CrashLoopBackOff":
		return &podCause{robotv1beta1.ReasonCrashLoop, c.crashMessage()}, 0
	}
	if c.ready || !c.running || !c.started {
		return nil, 0
	}
	since := c.startedAt.Time
	if p.readySince.After(since) {
		since = p.readySince.Time
	}
	if wait := since.Add(readinessGrace).Sub(now); wait > 0 {
		if c.lastExit != nil && c.lastExit.ExitCode != 0 {
			// Running again after an exit with an error: the kubelet has
			// not said CrashLoopBackOff, so neither does the pod; the
			// Robot keeps a crash loop it reported before (Diagnosed).
			return &podCause{reason: betweenCrashes}, wait
		}
		return nil, wait
	}
	return &podCause{robotv1beta1.ReasonReadinessProbeFailing,
		fmt.Sprintf("container %q of pod %s is running but not ready since %s: its readiness probe keeps failing",
			c.name, p.Name, since.UTC().Format(time.RFC3339))}, 0
}

// crashMessage says how the container last exited. It leaves out the restart
// count and the back-off, which change at every restart, so that a crash loop
// costs one status write, not one per restart.
func (c *containerSummary) crashMessage() string {
	last := c.lastExit
	if last == nil {
		return fmt.Sprintf("container %q keeps exiting (CrashLoopBackOff)", c.name)
	}
	msg := fmt.Sprintf("container %q keeps exiting (CrashLoopBackOff): last exit code %d", c.name, last.ExitCode)
	if last.Reason != "" {
		msg += " (" + last.Reason + ")"
	}
	if last.Message != "" {
		msg += ": " + last.Message
	}
	return msg
}

// templateImage is the image of the Robot container in deployment's pod
// template.
func templateImage(deployment *appsv1.Deployment) string {
	for _, c := range deployment.Spec.Template.Spec.Containers {
		if c.Name == workload.ContainerName {
			return c.Image
		}
	}
	return ""
}

// ReplicaSetKey is the cache key of the pod's ReplicaSet, or "" for a pod
// no ReplicaSet controls.
func (p *PodSummary) ReplicaSetKey() string {
	if p.replicaSet == "" {
		return ""
	}
	return p.Namespace + "/" + p.replicaSet
}

// prefixOf returns prefix, sharing the bytes of s when s starts with it: the
// name of an object's controller is often the start of its own (a pod's
// generateName is its ReplicaSet's name, a ReplicaSet's name its
// Deployment's), and then the cache keeps no string of its own for it.
func prefixOf(s, prefix string) string {
	if strings.HasPrefix(s, prefix) {
		return s[:len(prefix)]
	}
	return prefix
}

// PodsByRobot indexes the pod cache by namespace/Robot name.
const PodsByRobot = "robot"

func RobotIndex(obj interface{}) ([]string, error) {
	if pod, ok := obj.(*PodSummary); ok && pod.Robot != "" {
		return []string{pod.Namespace + "/" + pod.Robot}, nil
	}
	return nil, nil
}

// SameAs reports whether obj is a summary that says the same as p.
func (p *PodSummary) SameAs(obj interface{}) bool {
	other, ok := obj.(*PodSummary)
	if !ok {
		return false
	}
	a, b := *p, *other
	return a.Name == b.Name && a.Namespace == b.Namespace && a.DeletionTimestamp.Equal(b.DeletionTimestamp) &&
		a.Robot == b.Robot && a.replicaSet == b.replicaSet && a.replicaSetUID == b.replicaSetUID &&
		a.unschedulable == b.unschedulable && a.readySince.Equal(&b.readySince) && reflect.DeepEqual(a.container, b.container)
}

// warnsOnCause reports whether a Ready reason is a cause the diagnosis
// found: a Warning event is recorded once when the Robot enters it.
func warnsOnCause(reason string) bool {
	return slices.Contains(causeRanks, reason) || slices.Contains([]string{
		robotv1beta1.ReasonQuotaExceeded, robotv1beta1.ReasonPodSecurityRejected, robotv1beta1.ReasonReplicaFailure}, reason)
}
