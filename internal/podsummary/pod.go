package podsummary

import (
	"reflect"
	"slices"
	"strings"

	"github.com/robot-operator/robot-operator/internal/transform"
	"github.com/robot-operator/robot-operator/internal/workload"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Pod is what the operator caches of a pod of one of its Robots: what
// the diagnosis reads and what finds the Robot, nothing else. A corev1.Pod is
// 1,240 bytes before any of its fields are filled, and a pod as the API
// server sends it several kilobytes; a summary is a few hundred bytes
// (docs/diagnosis.md has the figures).
type Pod struct {
	// Name, Namespace, ResourceVersion and DeletionTimestamp only: the
	// informer keys and versions its objects by them.
	cachedMeta
	// Robot is the value of the pod's selector label: its Robot's name.
	Robot string
	// replicaSet and ReplicaSetUID name the pod's controller, its
	// ReplicaSet: the name finds it in the cache, the UID tells the pods of
	// the Deployment's current ReplicaSet. The image could not: a new
	// template may keep it, and a predecessor Robot of the same name may
	// have run it (its ReplicaSet may even have had the same name).
	replicaSet    string
	ReplicaSetUID types.UID
	// Unschedulable is the scheduler's message when it finds no node.
	Unschedulable string
	// ReadySince is when the pod's Ready condition last changed.
	ReadySince metav1.Time
	// Container is the Robot container's status; nil until the kubelet
	// reports one.
	Container *Container
	// others are the statuses of the pod's init containers and sidecars
	// that show something wrong (see Others), in the pod's order;
	// nil for a pod whose others are fine. A pointer to the slice, not the
	// slice: a healthy pod pays 8 bytes for it, where a slice's 24 take
	// the summary to the allocator's next size class, 16 bytes more a pod.
	others *[]Container
}

// Others are the statuses of the pod's init containers and sidecars that
// show something wrong: one that waits because its image cannot be pulled,
// its configuration cannot be made or it keeps crashing; a plain init
// container that failed; one running again, not ready, after a failure; a
// sidecar that runs and is not ready. Nil when there is none.
func (p *Pod) Others() []Container {
	if p.others == nil {
		return nil
	}
	return *p.others
}

// Container is what the diagnosis reads of the Robot container's status.
type Container struct {
	Name           string
	WaitingReason  string
	WaitingMessage string
	Running        bool
	StartedAt      metav1.Time
	Started, Ready bool
	// Sidecar: an init container that runs beside the Robot's, with
	// restartPolicy Always; false for the Robot's and a plain init
	// container.
	Sidecar bool
	// LastExit is how the container last terminated; nil if it never did.
	// For a plain init container that failed and waits to run again, it is
	// that failure.
	LastExit *corev1.ContainerStateTerminated
}

// GetObjectKind is part of runtime.Object, so that the informer and its
// handlers treat a summary as any other cached object.
func (p *Pod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject is part of runtime.Object.
func (p *Pod) DeepCopyObject() runtime.Object {
	copied := *p
	if p.DeletionTimestamp != nil {
		copied.DeletionTimestamp = p.DeletionTimestamp.DeepCopy()
	}
	if p.Container != nil {
		c := p.Container.deepCopy()
		copied.Container = &c
	}
	if others := p.Others(); others != nil {
		copies := make([]Container, len(others))
		for i := range others {
			copies[i] = others[i].deepCopy()
		}
		copied.others = &copies
	}
	return &copied
}

// deepCopy returns a copy of c that shares nothing with it.
func (c *Container) deepCopy() Container {
	copied := *c
	if c.LastExit != nil {
		copied.LastExit = c.LastExit.DeepCopy()
	}
	return copied
}

// SummarizePod is the pod informer's transform: it turns a pod into the
// Pod the cache keeps.
func SummarizePod(obj interface{}) (interface{}, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		// A tombstone: its object was summarized when it was cached.
		return obj, nil
	}
	summary := &Pod{
		cachedMeta: cachedMeta{
			Name:              pod.Name,
			Namespace:         pod.Namespace,
			ResourceVersion:   pod.ResourceVersion,
			DeletionTimestamp: pod.DeletionTimestamp,
		},
		Robot: pod.Labels[workload.LabelRobot],
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		summary.replicaSet, summary.ReplicaSetUID = prefixOf(pod.Name, ref.Name), ref.UID
	}
	for _, c := range pod.Status.Conditions {
		switch {
		case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable:
			summary.Unschedulable = c.Message
		case c.Type == corev1.PodReady:
			summary.ReadySince = c.LastTransitionTime
		}
	}
	for i := range pod.Status.ContainerStatuses {
		if c := &pod.Status.ContainerStatuses[i]; c.Name == workload.ContainerName {
			container := summarizeContainer(c, false)
			// A constant: the cache keeps no string of its own for it.
			container.Name = workload.ContainerName
			summary.Container = &container
		}
	}
	var others []Container
	for i := range pod.Status.InitContainerStatuses {
		c := &pod.Status.InitContainerStatuses[i]
		if container := summarizeContainer(c, isSidecar(pod, c.Name)); container.wrong() {
			others = append(others, container)
		}
	}
	if others != nil {
		summary.others = &others
	}
	return summary, nil
}

// summarizeContainer is what the diagnosis reads of a container's status:
// its state and how it last exited. A plain init container that failed
// waits, terminated, to be run again: that failure is its last exit.
func summarizeContainer(c *corev1.ContainerStatus, sidecar bool) Container {
	// Constants where they can be: the cache keeps no string of its own
	// for them.
	container := Container{Name: c.Name, Ready: c.Ready, Started: ptr.Deref(c.Started, false), Sidecar: sidecar}
	switch s := c.State; {
	case s.Waiting != nil:
		container.WaitingReason, container.WaitingMessage = transform.InternString(s.Waiting.Reason), s.Waiting.Message
	case s.Running != nil:
		container.Running, container.StartedAt = true, s.Running.StartedAt
	case s.Terminated != nil:
		// Completed, or failed: an earlier termination says no more.
		if s.Terminated.ExitCode != 0 {
			container.LastExit = exit(s.Terminated)
		}
		return container
	}
	if last := c.LastTerminationState.Terminated; last != nil {
		container.LastExit = exit(last)
	}
	return container
}

// exit is what the diagnosis reads of a termination.
func exit(t *corev1.ContainerStateTerminated) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: transform.InternString(t.Reason), Message: t.Message}
}

// isSidecar reports whether the pod's init container name runs beside the
// others, with restartPolicy Always.
func isSidecar(pod *corev1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.Name == name {
			return ptr.Deref(c.RestartPolicy, "") == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// failingReasons are the waiting reasons of a container that the diagnosis
// names.
var failingReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CrashLoopBackOff"}

// wrong reports whether an init container or a sidecar shows something the
// diagnosis reads: it waits for one of failingReasons; a plain init
// container failed and waits to run again; it runs again, not ready, after
// an exit with an error; or, a sidecar, it runs and is not ready. An init
// container that waits its turn, runs, or completed, and a ready sidecar,
// are not kept.
func (c *Container) wrong() bool {
	failed := c.LastExit != nil && c.LastExit.ExitCode != 0
	switch {
	case slices.Contains(failingReasons, c.WaitingReason):
		return true
	case c.Running:
		return !c.Ready && (failed || c.Sidecar)
	}
	return failed && !c.Sidecar && c.WaitingReason == ""
}

// ReplicaSetKey is the cache key of the pod's ReplicaSet, or "" for a pod
// no ReplicaSet controls.
func (p *Pod) ReplicaSetKey() string {
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

// RobotIndex is the index function of PodsByRobot.
func RobotIndex(obj interface{}) ([]string, error) {
	if pod, ok := obj.(*Pod); ok && pod.Robot != "" {
		return []string{pod.Namespace + "/" + pod.Robot}, nil
	}
	return nil, nil
}

// SameAs reports whether obj is a summary that says the same as p.
func (p *Pod) SameAs(obj interface{}) bool {
	other, ok := obj.(*Pod)
	if !ok {
		return false
	}
	a, b := *p, *other
	return a.Name == b.Name && a.Namespace == b.Namespace && a.DeletionTimestamp.Equal(b.DeletionTimestamp) &&
		a.Robot == b.Robot && a.replicaSet == b.replicaSet && a.ReplicaSetUID == b.ReplicaSetUID &&
		a.Unschedulable == b.Unschedulable && a.ReadySince.Equal(&b.ReadySince) && reflect.DeepEqual(a.Container, b.Container) &&
		reflect.DeepEqual(a.Others(), b.Others())
}
