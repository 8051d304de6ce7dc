//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// The tests of this file give a Robot's pods a reason not to run, and check
// that the Robot says so within seconds (not at the progress deadline),
// with one Warning event, and comes back to RolloutComplete by itself once
// the reason is gone.
//
// The scheduler, the ResourceQuota and Pod Security admission are real.
// The kubelet is not: kwok's nodes run no containers and mark every pod
// Running and Ready. For the causes only a kubelet reports (an image that
// cannot be pulled, a crash loop, a missing ConfigMap, a readiness probe
// that fails), the test writes the pod's status as the kubelet would. The
// phase stays Running: kwok's stage puts a Pending pod that is not Ready
// back to Running and Ready, and the operator reads the container's state,
// not the phase.

// causeTimeout bounds how long the Robot may take to say why its pods do
// not run once they show it: seconds, not the Deployment's progress
// deadline of ten minutes. Generous for a shared machine.
const causeTimeout = 20 * time.Second

// asKubelet waits for a pod of the Robot name that runs image, and writes
// its status as edit says.
func asKubelet(t *testing.T, ns, name, image string, edit func(*corev1.PodStatus)) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, convergeTimeout, fmt.Sprintf("a running pod of Robot %s/%s with image %s", ns, name, image), func(ctx context.Context) (bool, string, error) {
		pods, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labelRobot + "=" + name})
		if err != nil {
			return false, "", err
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp == nil && podImage(p) == image && p.Status.Phase == corev1.PodRunning {
				pod = p
				return true, "", nil
			}
		}
		return false, summarizePods(pods.Items), nil
	})
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := env.kube.CoreV1().Pods(ns).Get(t.Context(), pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(&current.Status)
		pod, err = env.kube.CoreV1().Pods(ns).UpdateStatus(t.Context(), current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("writing the status of pod %s/%s: %v", ns, pod.Name, err)
	}
	return pod
}

// containerNotReady makes a pod's status say that its Robot container is in state.
func containerNotReady(state corev1.ContainerState, last corev1.ContainerState, started bool) func(*corev1.PodStatus) {
	return func(s *corev1.PodStatus) {
		now := metav1.Now()
		for i := range s.Conditions {
			if c := &s.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
				c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionFalse, "ContainersNotReady", now
			}
		}
		for i := range s.ContainerStatuses {
			if c := &s.ContainerStatuses[i]; c.Name == containerName {
				c.Ready, c.Started, c.State, c.LastTerminationState = false, &started, state, last
			}
		}
	}
}

// runningAndReady makes a pod's status say that its Robot container runs and is ready.
func runningAndReady(s *corev1.PodStatus) {
	now := metav1.Now()
	for i := range s.Conditions {
		if c := &s.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionTrue, "", now
		}
	}
	for i := range s.ContainerStatuses {
		if c := &s.ContainerStatuses[i]; c.Name == containerName {
			c.Ready, c.Started = true, ptr.To(true)
			c.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		}
	}
}

// expectCause waits for the Robot to say reason with a message that
// contains each of want, within causeTimeout of since, and checks that it
// recorded exactly one Warning event of that reason.
func expectCause(t *testing.T, ns, name, reason string, since time.Time, want ...string) *robotv1alpha1.Robot {
	t.Helper()
	robot := waitForRobot(t, ns, name, causeTimeout, fmt.Sprintf("has Ready=False reason %s with a message that contains %q", reason, want),
		func(r *robotv1alpha1.Robot) bool {
			c := readyCondition(r)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason || c.ObservedGeneration != r.Generation {
				return false
			}
			for _, w := range want {
				if !strings.Contains(c.Message, w) {
					return false
				}
			}
			return true
		})
	t.Logf("Robot says %s %.1f s after the cause: %q", reason, time.Since(since).Seconds(), readyCondition(robot).Message)
	waitForEvents(t, ns, robot.UID, reason, 1)
	// A few syncs later (pod and Deployment updates), still one.
	time.Sleep(3 * time.Second)
	events, err := robotEvents(t.Context(), ns, robot.UID, reason)
	if err != nil {
		t.Fatal(err)
	}
	if n := eventCount(events); n != 1 || events[0].Type != corev1.EventTypeWarning {
		t.Errorf("want exactly one Warning event %s about the Robot, got %s", reason, summarizeEvents(events))
	}
	return robot
}

// expectRecovered waits for the Robot to be RolloutComplete again, by itself.
func expectRecovered(t *testing.T, ns, name string) {
	t.Helper()
	waitForRobotReason(t, ns, name, metav1.ConditionTrue, robotv1alpha1.ReasonRolloutComplete, convergeTimeout)
}

func TestImagePullFailed(t *testing.T) {
	ns := newNamespace(t)
	typo := image1 + "-typo"
	robot := newRobot(ns, "web", 1)
	robot.Spec.Image = typo
	createRobot(t, robot)
	const kubeletMessage = `rpc error: code = NotFound desc = failed to pull and unpack image "` + image1 + `-typo": not found`
	asKubelet(t, ns, "web", typo, containerNotReady(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: kubeletMessage}}, corev1.ContainerState{}, false))
	since := time.Now()
	expectCause(t, ns, "web", robotv1alpha1.ReasonImagePullFailed, since, `"`+typo+`"`, kubeletMessage)

	// The kubelet backs off: another waiting reason and message, the same
	// cause, no second warning.
	asKubelet(t, ns, "web", typo, containerNotReady(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "` + typo + `"`}}, corev1.ContainerState{}, false))
	expectCause(t, ns, "web", robotv1alpha1.ReasonImagePullFailed, since, "ImagePullBackOff")

	patchRobot(t, ns, "web", fmt.Sprintf(`{"spec":{"image":%q}}`, image1))
	expectRecovered(t, ns, "web")
}

func TestCrashLoop(t *testing.T) {
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "web", 1))
	waitForRobotReady(t, ns, "web")
	lastExit := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "flag provided but not defined: -x"}}
	asKubelet(t, ns, "web", image1, func(s *corev1.PodStatus) {
		containerNotReady(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container"}}, lastExit, false)(s)
		s.ContainerStatuses[0].RestartCount = 1
	})
	since := time.Now()
	expectCause(t, ns, "web", robotv1alpha1.ReasonCrashLoop, since, "last exit code 2 (Error)", "flag provided but not defined")

	// Between two crashes the container runs for a moment: still a crash
	// loop, not another cause.
	asKubelet(t, ns, "web", image1, func(s *corev1.PodStatus) {
		containerNotReady(corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}, lastExit, true)(s)
		s.ContainerStatuses[0].RestartCount = 2
	})
	expectCause(t, ns, "web", robotv1alpha1.ReasonCrashLoop, since, "last exit code 2")

	// Fixed: the container stays up.
	asKubelet(t, ns, "web", image1, runningAndReady)
	expectRecovered(t, ns, "web")
}

func TestConfigMissing(t *testing.T) {
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "web", 1))
	waitForRobotReady(t, ns, "web")
	const kubeletMessage = `configmap "settings" not found`
	asKubelet(t, ns, "web", image1, containerNotReady(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: kubeletMessage}}, corev1.ContainerState{}, false))
	expectCause(t, ns, "web", robotv1alpha1.ReasonConfigMissing, time.Now(), kubeletMessage)

	// The ConfigMap is created: the kubelet starts the container.
	asKubelet(t, ns, "web", image1, runningAndReady)
	expectRecovered(t, ns, "web")
}

func TestReadinessProbeFailing(t *testing.T) {
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "web", 1))
	waitForRobotReady(t, ns, "web")
	// Running and started, not ready: for the first 30 s a slow start,
	// then a failing probe. The operator looks again by itself: no object
	// changes when the 30 s are up.
	// The API stores times to the second: the clock starts at the second
	// the status says.
	since := time.Now().Truncate(time.Second)
	asKubelet(t, ns, "web", image1, containerNotReady(corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}, corev1.ContainerState{}, true))
	time.Sleep(10 * time.Second)
	if robot := getRobot(t, ns, "web"); readyCondition(robot).Reason != robotv1alpha1.ReasonRolloutInProgress {
		t.Errorf("10 s after the container stopped being ready: Ready reason %s, want %s", readyCondition(robot).Reason, robotv1alpha1.ReasonRolloutInProgress)
	}
	waitForRobotReason(t, ns, "web", metav1.ConditionFalse, robotv1alpha1.ReasonReadinessProbeFailing, 30*time.Second+causeTimeout)
	if took := time.Since(since); took < 30*time.Second {
		t.Errorf("the Robot said %s %v after the container stopped being ready, before 30 s", robotv1alpha1.ReasonReadinessProbeFailing, took)
	}
	expectCause(t, ns, "web", robotv1alpha1.ReasonReadinessProbeFailing, since.Add(30*time.Second), "running but not ready")

	asKubelet(t, ns, "web", image1, runningAndReady)
	expectRecovered(t, ns, "web")
}

func TestUnschedulable(t *testing.T) {
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "web", 1))
	waitForRobotReady(t, ns, "web")

	// Another writer gives the Deployment a nodeSelector no node has; the
	// operator leaves fields it does not set alone. The new pod fits no
	// node, and the old one stays: the rollout is stuck.
	poolLabel := "e2e.robot.dev/pool"
	patch := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"template":{"spec":{"nodeSelector":{%q:%q}}}}}`, poolLabel, ns)
	if _, err := env.kube.AppsV1().Deployments(ns).Patch(t.Context(), "web", types.ApplyPatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: "e2e-placement"}); err != nil {
		t.Fatalf("setting a nodeSelector on Deployment %s/web: %v", ns, err)
	}
	since := time.Now()
	expectCause(t, ns, "web", robotv1alpha1.ReasonUnschedulable, since, "cannot be scheduled", "0/")

	// A node gets the label: the pod is scheduled.
	nodes, err := env.kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("listing nodes: %v (%d)", err, len(nodes.Items))
	}
	node := nodes.Items[0].Name
	labelNode := func(ctx context.Context, value string) error {
		p := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, poolLabel, value)
		_, err := env.kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(p), metav1.PatchOptions{})
		return err
	}
	if err := labelNode(t.Context(), fmt.Sprintf("%q", ns)); err != nil {
		t.Fatalf("labelling node %s: %v", node, err)
	}
	t.Cleanup(func() {
		if err := labelNode(context.Background(), "null"); err != nil {
			t.Errorf("removing the label of node %s: %v", node, err)
		}
	})
	expectRecovered(t, ns, "web")
}

func TestQuotaExceeded(t *testing.T) {
	ns := newNamespace(t)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}
	if _, err := env.kube.CoreV1().ResourceQuotas(ns).Create(t.Context(), quota, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the ResourceQuota: %v", err)
	}
	// Until the quota controller has counted, pods are refused for another
	// reason ("status unknown for quota").
	eventually(t, convergeTimeout, "the ResourceQuota counted", func(ctx context.Context) (bool, string, error) {
		q, err := env.kube.CoreV1().ResourceQuotas(ns).Get(ctx, "pods", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		_, counted := q.Status.Hard[corev1.ResourcePods]
		return counted, fmt.Sprintf("status %v", q.Status), nil
	})
	since := time.Now()
	createRobot(t, newRobot(ns, "web", 1))
	expectCause(t, ns, "web", robotv1alpha1.ReasonQuotaExceeded, since, "exceeded quota: pods")

	raiseQuota(t, ns, "pods", "1")
	expectRecovered(t, ns, "web")
}

func raiseQuota(t *testing.T, ns, name, pods string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		q, err := env.kube.CoreV1().ResourceQuotas(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		q.Spec.Hard[corev1.ResourcePods] = resource.MustParse(pods)
		_, err = env.kube.CoreV1().ResourceQuotas(ns).Update(t.Context(), q, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("raising the ResourceQuota: %v", err)
	}
}

func TestPodSecurityRejected(t *testing.T) {
	ns := newNamespace(t)
	setLevel := func(level string) {
		t.Helper()
		p := fmt.Sprintf(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":%q}}}`, level)
		if _, err := env.kube.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatalf("setting Pod Security level %s on namespace %s: %v", level, ns, err)
		}
	}
	// The Robot's pods run as whatever user the image says and keep the
	// default capabilities: baseline, not restricted.
	setLevel("restricted")
	since := time.Now()
	createRobot(t, newRobot(ns, "web", 1))
	expectCause(t, ns, "web", robotv1alpha1.ReasonPodSecurityRejected, since, `violates PodSecurity "restricted:latest"`)

	setLevel("baseline")
	expectRecovered(t, ns, "web")
}
