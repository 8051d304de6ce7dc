package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/status"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// A sync whose Robot's pods show a cause writes it, with one Warning, and
// the next sync writes nothing.
func TestSyncSaysWhyPodsDoNotRun(t *testing.T) {
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	deployment := unavailable(t, robot)
	converged(robot, deployment)
	f.addRobot(robot)
	f.addDeployment(deployment)
	ctrl := f.newController(t.Context())
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{status.PodsByRobot: status.RobotIndex})
	for _, pod := range summaries(t, robottest.TestPod(robot, "test-a", robottest.Waiting("ErrImagePull", "not found")), robottest.TestPod(robottest.NewRobot("other", 1), "other-a", robottest.Waiting("CrashLoopBackOff", ""))) {
		if err := pods.Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	ctrl.pods = pods
	if _, err := ctrl.syncHandler(t.Context(), cache.MetaObjectToName(robot)); err != nil {
		t.Fatal(err)
	}
	written := f.onlyStatusWrite()
	if ready := meta.FindStatusCondition(written.Status.Conditions, robotv1alpha1.ConditionReady); ready == nil || ready.Reason != robotv1alpha1.ReasonImagePullFailed {
		t.Fatalf("Ready: got %v, want %s", ready, robotv1alpha1.ReasonImagePullFailed)
	}
	f.expectEvents(fmt.Sprintf("Warning %s %s", robotv1alpha1.ReasonImagePullFailed,
		`cannot pull image "registry.example/robot:1.0" (ErrImagePull): not found`))
}

// A pod's change queues its Robot only when what the cache keeps of it
// changed, and only if the Robot exists.
func TestPodEventsQueueTheirRobot(t *testing.T) {
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	f.addRobot(robot)
	ctrl := f.newController(t.Context())

	running := robottest.TestPod(robot, "test-a", robottest.RunningSince(time.Minute))
	running.ResourceVersion = "1"
	resynced := running.DeepCopy()
	resynced.ResourceVersion = "2"
	resynced.Annotations = map[string]string{"not": "cached"}
	crashing := running.DeepCopy()
	crashing.Status.ContainerStatuses[0].State = robottest.Waiting("CrashLoopBackOff", "")
	pods := summaries(t, running, resynced, crashing)
	if !pods[0].SameAs(pods[1]) {
		t.Errorf("a change to what the cache does not keep makes another summary")
	}
	if pods[0].SameAs(pods[2]) {
		t.Errorf("a change of the container's state makes the same summary")
	}

	orphan := summaries(t, robottest.TestPod(robottest.NewRobot("gone", 1), "gone-a", robottest.RunningSince(time.Minute)))[0]
	ctrl.handlePod(orphan)
	if n := ctrl.workqueue.Len(); n != 0 {
		t.Errorf("a pod of a Robot that does not exist queued %d items", n)
	}
	ctrl.handlePod(cache.DeletedFinalStateUnknown{Key: "default/test-a", Obj: pods[2]})
	if n := ctrl.workqueue.Len(); n != 1 {
		t.Fatalf("a deleted pod of Robot test queued %d items, want 1", n)
	}
	if key, _ := ctrl.workqueue.Get(); key != cache.MetaObjectToName(robot) {
		t.Errorf("queued %v, want %v", key, cache.MetaObjectToName(robot))
	}
}

func unavailable(t *testing.T, robot *robotv1alpha1.Robot) *appsv1.Deployment {
	return robottest.UnavailableNow(liveDeployment(t, robot))
}

// summaries returns what the pod cache holds for pods.
func summaries(t testing.TB, pods ...*corev1.Pod) []*status.PodSummary {
	t.Helper()
	var out []*status.PodSummary
	for _, pod := range pods {
		summary, err := status.SummarizePod(pod)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, summary.(*status.PodSummary))
	}
	return out
}
