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

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// The tests of this file give a Robot's pods a reason not to run, and check
// that the Robot says so within seconds (not at the progress deadline),
// with one Warning event, and comes back to RolloutComplete by itself once
// the reason is gone.
//
// The scheduler, the ResourceQuota and Pod Security admission are real.
// The kubelet is not: kwok's fake nodes run no containers. The causes only
// a kubelet reports (an image that cannot be pulled, a crash loop, a
// missing ConfigMap, a readiness probe that fails) come from the kwok
// Stages of hack/kwok-stages.yaml, which the cluster plays for the pods
// that ask for them: those of the image pullFailsImage, or with the label
// simulateLabel. The test sets them through the Robot, as it would a typo
// or a broken release, and removes them the way a user would fix the
// cause: a new pod from the new template, which kwok makes Running and
// Ready as any other.

// causeTimeout bounds how long the Robot may take to say why its pods do
// not run once they show it: seconds, not the Deployment's progress
// deadline of ten minutes. Generous for a shared machine.
const causeTimeout = 20 * time.Second

const (
	// pullFailsImage is an image the cluster's stages never pull: its
	// container waits with ErrImagePull, then ImagePullBackOff.
	pullFailsImage = "registry.invalid/robot-test/pull-fails:1"
	// simulateLabel on a pod makes the cluster's stages play a kubelet's
	// failure: crash-loop, config-missing or readiness-fails.
	simulateLabel = "e2e.robot.dev/simulate"
)

// waitForContainer waits for a pod of the Robot name, not terminating,
// whose Robot container's status is what is says, and returns the pod.
func waitForContainer(t *testing.T, ns, name, what string, is func(*corev1.ContainerStatus) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, convergeTimeout, fmt.Sprintf("a pod of Robot %s/%s whose container %s", ns, name, what), func(ctx context.Context) (bool, string, error) {
		pods, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labelRobot + "=" + name})
		if err != nil {
			return false, "", err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp != nil {
				continue
			}
			for j := range p.Status.ContainerStatuses {
				if c := &p.Status.ContainerStatuses[j]; c.Name == containerName && is(c) {
					pod = p
					return true, "", nil
				}
			}
		}
		return false, summarizePods(pods.Items), nil
	})
	return pod
}

// waiting tells a container that waits with reason.
func waiting(reason string) func(*corev1.ContainerStatus) bool {
	return func(c *corev1.ContainerStatus) bool {
		return c.State.Waiting != nil && c.State.Waiting.Reason == reason
	}
}

// simulating returns a Robot whose pods carry simulateLabel=failure.
func simulating(ns, name, failure string) *robotv1beta1.Robot {
	robot := newRobot(ns, name, 1)
	robot.Spec.PodLabels = map[string]string{simulateLabel: failure}
	return robot
}

// stopSimulating removes simulateLabel from the Robot's pods: a new
// template, whose pod kwok makes Running and Ready.
func stopSimulating(t *testing.T, ns, name string) {
	t.Helper()
	patchRobot(t, ns, name, `{"spec":{"podLabels":null}}`)
}

// expectCause waits for the Robot to say reason with a message that
// contains each of want, within causeTimeout of since, and checks that it
// recorded exactly one Warning event of that reason.
func expectCause(t *testing.T, ns, name, reason string, since time.Time, want ...string) *robotv1beta1.Robot {
	t.Helper()
	robot := waitForRobot(t, ns, name, causeTimeout, fmt.Sprintf("has Ready=False reason %s with a message that contains %q", reason, want),
		func(r *robotv1beta1.Robot) bool {
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
	waitForRobotReason(t, ns, name, metav1.ConditionTrue, robotv1beta1.ReasonRolloutComplete, convergeTimeout)
}

func TestImagePullFailed(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	robot := newRobot(ns, "web", 1)
	robot.Spec.Image = pullFailsImage
	createRobot(t, robot)
	pod := waitForContainer(t, ns, "web", "waits with ErrImagePull", waiting("ErrImagePull"))
	since := time.Now()
	runtimeMessage := pod.Status.ContainerStatuses[0].State.Waiting.Message
	if !strings.Contains(runtimeMessage, "no such host") {
		t.Fatalf("pod %s: want the runtime's message about the registry, got %q", pod.Name, runtimeMessage)
	}
	expectCause(t, ns, "web", robotv1beta1.ReasonImagePullFailed, since, `"`+pullFailsImage+`"`, "(ErrImagePull)", runtimeMessage)

	// The kubelet backs off: another waiting reason and message, the same
	// cause, no second warning.
	waitForContainer(t, ns, "web", "waits with ImagePullBackOff", waiting("ImagePullBackOff"))
	expectCause(t, ns, "web", robotv1beta1.ReasonImagePullFailed, since, "(ImagePullBackOff)", `Back-off pulling image "`+pullFailsImage+`"`)

	patchRobot(t, ns, "web", fmt.Sprintf(`{"spec":{"image":%q}}`, image1))
	expectRecovered(t, ns, "web")
}

func TestCrashLoop(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	createRobot(t, simulating(ns, "web", "crash-loop"))
	waitForContainer(t, ns, "web", "waits with CrashLoopBackOff", waiting("CrashLoopBackOff"))
	since := time.Now()
	expectCause(t, ns, "web", robotv1beta1.ReasonCrashLoop, since, "last exit code 1 (Error)", "open /etc/robot/config.yaml: no such file or directory")

	// Between two crashes the container runs for a moment: still a crash
	// loop, not another cause.
	waitForContainer(t, ns, "web", "runs again after a crash", func(c *corev1.ContainerStatus) bool {
		return c.State.Running != nil && c.RestartCount >= 2 && c.LastTerminationState.Terminated != nil
	})
	expectCause(t, ns, "web", robotv1beta1.ReasonCrashLoop, since, "last exit code 1")

	// Fixed: a release whose container stays up.
	stopSimulating(t, ns, "web")
	expectRecovered(t, ns, "web")
}

func TestConfigMissing(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	createRobot(t, simulating(ns, "web", "config-missing"))
	pod := waitForContainer(t, ns, "web", "waits with CreateContainerConfigError", waiting("CreateContainerConfigError"))
	expectCause(t, ns, "web", robotv1beta1.ReasonConfigMissing, time.Now(), "pod "+pod.Name, `configmap "settings" not found`)

	// Fixed: pods that no longer need the ConfigMap.
	stopSimulating(t, ns, "web")
	expectRecovered(t, ns, "web")
}

func TestReadinessProbeFailing(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	createRobot(t, simulating(ns, "web", "readiness-fails"))
	// Running and started, never ready: for the first 30 s a slow start,
	// then a failing probe. The operator looks again by itself: no object
	// changes when the 30 s are up.
	pod := waitForContainer(t, ns, "web", "runs, started and not ready", func(c *corev1.ContainerStatus) bool {
		return c.State.Running != nil && ptr.Deref(c.Started, false) && !c.Ready
	})
	// The clock starts when the container started or stopped being ready,
	// whichever is later, as the status says (to the second).
	since := pod.Status.ContainerStatuses[0].State.Running.StartedAt.Time
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.LastTransitionTime.After(since) {
			since = c.LastTransitionTime.Time
		}
	}
	time.Sleep(time.Until(since.Add(10 * time.Second)))
	if robot := getRobot(t, ns, "web"); readyCondition(robot).Reason != robotv1beta1.ReasonRolloutInProgress {
		t.Errorf("10 s after the container started, not ready: Ready reason %s, want %s", readyCondition(robot).Reason, robotv1beta1.ReasonRolloutInProgress)
	}
	waitForRobotReason(t, ns, "web", metav1.ConditionFalse, robotv1beta1.ReasonReadinessProbeFailing, 30*time.Second+causeTimeout)
	if took := time.Since(since); took < 30*time.Second {
		t.Errorf("the Robot said %s %v after the container started, not ready, before 30 s", robotv1beta1.ReasonReadinessProbeFailing, took)
	}
	expectCause(t, ns, "web", robotv1beta1.ReasonReadinessProbeFailing, since.Add(30*time.Second), "running but not ready", "pod "+pod.Name)

	// Fixed: a release whose probe succeeds.
	stopSimulating(t, ns, "web")
	expectRecovered(t, ns, "web")
}

func TestUnschedulable(t *testing.T) {
	parallel(t)
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
	expectCause(t, ns, "web", robotv1beta1.ReasonUnschedulable, since, "cannot be scheduled", "0/")

	// Stuck, and nothing changes: the status is the same at every sync,
	// and so it is written no more. Another writer's label on the
	// Deployment queues a sync, and nothing else.
	stuck := getRobot(t, ns, "web")
	for i := range 3 {
		touch := fmt.Sprintf(`{"metadata":{"labels":{"e2e.robot.dev/touch":"%d"}}}`, i)
		if _, err := env.kube.AppsV1().Deployments(ns).Patch(t.Context(), "web", types.MergePatchType, []byte(touch), metav1.PatchOptions{FieldManager: "e2e-touch"}); err != nil {
			t.Fatalf("labelling Deployment %s/web: %v", ns, err)
		}
		time.Sleep(2 * time.Second)
	}
	if later := getRobot(t, ns, "web"); later.ResourceVersion != stuck.ResourceVersion {
		t.Errorf("the stuck Robot's status was written again, with nothing changed: conditions %+v, then %+v", stuck.Status.Conditions, later.Status.Conditions)
	}

	// A node gets the label: the pod is scheduled. One of the cluster's
	// own nodes: a test may add a node of its own, tainted for its pods.
	nodes, err := env.kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: "kwok.x-k8s.io/kwokctl-scale=node"})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("listing the cluster's nodes: %v (%d)", err, len(nodes.Items))
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
	parallel(t)
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
	expectCause(t, ns, "web", robotv1beta1.ReasonQuotaExceeded, since, "exceeded quota: pods")

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
	parallel(t)
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
	expectCause(t, ns, "web", robotv1beta1.ReasonPodSecurityRejected, since, `violates PodSecurity "restricted:latest"`)

	setLevel("baseline")
	expectRecovered(t, ns, "web")
}
