package metrics

import (
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/robottest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

func TestReadinessTracker(t *testing.T) {
	tracker := NewReadinessTracker()
	robot := robottest.NewRobot("test", 1)
	robot.Generation = 2
	tracker.Seen(robot, robottest.FixtureNow)
	tracker.Seen(robot, robottest.FixtureNow.Add(time.Second)) // same generation: keeps the first time

	// The watch event of the status write that made the Robot Ready may
	// come before the write returns: it must not clear the record.
	ready := robot.DeepCopy()
	ready.Status = robotv1beta1.RobotStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{
		{Type: robotv1beta1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 2},
	}}
	tracker.Seen(ready, robottest.FixtureNow.Add(2*time.Second))

	if took, ok := tracker.Ready(robot.UID, 2, robottest.FixtureNow.Add(5*time.Second)); !ok || took != 5*time.Second {
		t.Errorf("ready() = %v, %v; want 5s, true", took, ok)
	}
	if _, ok := tracker.Ready(robot.UID, 2, robottest.FixtureNow.Add(6*time.Second)); ok {
		t.Error("the same generation was observed twice")
	}

	// A Robot already Ready when first seen (an operator restart) is not
	// waited for.
	tracker.Seen(ready, robottest.FixtureNow)
	if _, ok := tracker.Ready(robot.UID, 2, robottest.FixtureNow); ok {
		t.Error("a Robot that was already Ready was timed")
	}

	tracker.Seen(robot, robottest.FixtureNow)
	tracker.Forget(robot.UID)
	if _, ok := tracker.Ready(robot.UID, 2, robottest.FixtureNow); ok {
		t.Error("a deleted Robot was still waited for")
	}
}
