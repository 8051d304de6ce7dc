//go:build e2e

package e2e

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

const (
	pausedAnnotation = "robot.dev/paused"
	pause            = `{"metadata":{"annotations":{"` + pausedAnnotation + `":"true"}}}`
	unpause          = `{"metadata":{"annotations":{"` + pausedAnnotation + `":null}}}`
)

// reportsPaused reports whether the Robot says, about its current
// generation, that it is paused.
func reportsPaused(r *robotv1beta1.Robot) bool {
	c := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == robotv1beta1.ReasonPaused &&
		c.ObservedGeneration == r.Generation && r.Status.ObservedGeneration == r.Generation
}

// TestPauseHoldsTheDeployment: a Robot annotated robot.dev/paused: "true"
// says so, stays Ready while its Deployment runs, and its Deployment does not
// follow a change of the Robot; once the annotation is removed, it does at
// once.
func TestPauseHoldsTheDeployment(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "web", 1))
	waitForRobotReady(t, ns, "web")

	patchRobot(t, ns, "web", pause)
	robot := waitForRobot(t, ns, "web", convergeTimeout, "says it is paused", reportsPaused)
	if c := readyCondition(robot); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("a paused Robot whose Deployment runs is not Ready: %s", summarizeRobot(robot))
	}
	before := getDeployment(t, ns, "web")

	patchRobot(t, ns, "web", `{"spec":{"replicas":2}}`)
	robot = waitForRobot(t, ns, "web", convergeTimeout, "says it is paused, about its new generation", reportsPaused)
	t.Logf("paused, scaled to 2: %s", summarizeRobot(robot))
	time.Sleep(5 * time.Second)
	after := getDeployment(t, ns, "web")
	if after.Generation != before.Generation || ptr.Deref(after.Spec.Replicas, 1) != 1 {
		t.Errorf("the Deployment of a paused Robot changed: generation %d -> %d, replicas %d -> %d",
			before.Generation, after.Generation, ptr.Deref(before.Spec.Replicas, 1), ptr.Deref(after.Spec.Replicas, 1))
	}
	if robot = getRobot(t, ns, "web"); !reportsPaused(robot) {
		t.Errorf("the Robot no longer says it is paused: %s", summarizeRobot(robot))
	}

	start := time.Now()
	patchRobot(t, ns, "web", unpause)
	waitForDeployment(t, ns, "web", "is scaled to 2 once the Robot is unpaused", func(d *appsv1.Deployment) bool { return ptr.Deref(d.Spec.Replicas, 1) == 2 })
	t.Logf("the Deployment followed the Robot %v after the annotation was removed", time.Since(start).Round(time.Millisecond))
	robot = waitForRobotReady(t, ns, "web")
	if c := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the unpaused Robot is not Synced: %v", c)
	}
}

// TestPausedRobotIsGarbageCollected: deleting a paused Robot still deletes
// its Deployment, through the garbage collector.
func TestPausedRobotIsGarbageCollected(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "web", 1))
	waitForRobotReady(t, ns, "web")
	patchRobot(t, ns, "web", pause)
	waitForRobot(t, ns, "web", convergeTimeout, "says it is paused", reportsPaused)

	if err := env.robots.RobotV1beta1().Robots(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting Robot %s/web: %v", ns, err)
	}
	waitForDeploymentGone(t, ns, "web")
}
