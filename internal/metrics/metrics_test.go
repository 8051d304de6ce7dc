package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/robottest"

	"github.com/prometheus/client_golang/prometheus/testutil"
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

	// A status not Ready yet ends nothing.
	if _, ok := tracker.Reached(robot, robot.Status, robottest.FixtureNow.Add(3*time.Second)); ok {
		t.Error("a status not Ready was timed as Ready")
	}
	if took, ok := tracker.Reached(robot, ready.Status, robottest.FixtureNow.Add(5*time.Second)); !ok || took != 5*time.Second {
		t.Errorf("Reached() = %v, %v; want 5s, true", took, ok)
	}
	if _, ok := tracker.Reached(robot, ready.Status, robottest.FixtureNow.Add(6*time.Second)); ok {
		t.Error("the same generation was observed twice")
	}

	// A Robot already Ready when first seen (an operator restart) is not
	// waited for.
	tracker.Seen(ready, robottest.FixtureNow)
	if _, ok := tracker.Reached(robot, ready.Status, robottest.FixtureNow); ok {
		t.Error("a Robot that was already Ready was timed")
	}

	tracker.Seen(robot, robottest.FixtureNow)
	tracker.Forget(robot.UID)
	if _, ok := tracker.Reached(robot, ready.Status, robottest.FixtureNow); ok {
		t.Error("a deleted Robot was still waited for")
	}
}

func TestSyncedTracker(t *testing.T) {
	tracker := NewSyncedTracker()
	robot := robottest.NewRobot("test", 1)
	robot.Generation = 3
	tracker.Seen(robot, robottest.FixtureNow)

	// Ready for the generation but not Synced: a sync that failed after
	// the rollout.
	readyOnly := robotv1beta1.RobotStatus{ObservedGeneration: 3, Conditions: []metav1.Condition{
		{Type: robotv1beta1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 3},
		{Type: robotv1beta1.ConditionSynced, Status: metav1.ConditionFalse, ObservedGeneration: 3},
	}}
	if _, ok := tracker.Reached(robot, readyOnly, robottest.FixtureNow.Add(time.Second)); ok {
		t.Error("a status with Synced=False was timed as Synced")
	}
	synced := robotv1beta1.RobotStatus{ObservedGeneration: 3, Conditions: []metav1.Condition{
		{Type: robotv1beta1.ConditionSynced, Status: metav1.ConditionTrue, ObservedGeneration: 3},
	}}
	if took, ok := tracker.Reached(robot, synced, robottest.FixtureNow.Add(40*time.Millisecond)); !ok || took != 40*time.Millisecond {
		t.Errorf("Reached() = %v, %v; want 40ms, true", took, ok)
	}
	if n := tracker.Len(); n != 0 {
		t.Errorf("%d Robots still waited for, want 0", n)
	}
}

// TestLeaderGauge: robot_operator_leader is 1 exactly while the workers run
// (the root's TestTrackedObjects checks that RegisterMetrics exports it),
// so that the alert on "no leader" sees every replica's 0 or 1.
func TestLeaderGauge(t *testing.T) {
	m := NewControllerMetrics()
	if got := testutil.ToFloat64(m.Leader); got != 0 {
		t.Errorf("before the workers run: leader %v, want 0", got)
	}
	stopped := errors.New("stopped")
	var during float64
	err := m.Leading(func() error {
		during = testutil.ToFloat64(m.Leader)
		return stopped
	})
	if !errors.Is(err, stopped) {
		t.Errorf("Leading returned %v, want the workers' error", err)
	}
	if during != 1 {
		t.Errorf("while the workers run: leader %v, want 1", during)
	}
	if got := testutil.ToFloat64(m.Leader); got != 0 {
		t.Errorf("after the workers stopped: leader %v, want 0", got)
	}
}
