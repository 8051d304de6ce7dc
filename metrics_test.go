package main

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

func TestReadinessTracker(t *testing.T) {
	tracker := newReadinessTracker()
	robot := newRobot("test", 1)
	robot.Generation = 2
	tracker.seen(robot, fixtureNow)
	tracker.seen(robot, fixtureNow.Add(time.Second)) // same generation: keeps the first time

	// The watch event of the status write that made the Robot Ready may
	// come before the write returns: it must not clear the record.
	ready := robot.DeepCopy()
	ready.Status = robotv1alpha1.RobotStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{
		{Type: robotv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 2},
	}}
	tracker.seen(ready, fixtureNow.Add(2*time.Second))

	if took, ok := tracker.ready(robot.UID, 2, fixtureNow.Add(5*time.Second)); !ok || took != 5*time.Second {
		t.Errorf("ready() = %v, %v; want 5s, true", took, ok)
	}
	if _, ok := tracker.ready(robot.UID, 2, fixtureNow.Add(6*time.Second)); ok {
		t.Error("the same generation was observed twice")
	}

	// A Robot already Ready when first seen (an operator restart) is not
	// waited for.
	tracker.seen(ready, fixtureNow)
	if _, ok := tracker.ready(robot.UID, 2, fixtureNow); ok {
		t.Error("a Robot that was already Ready was timed")
	}

	tracker.seen(robot, fixtureNow)
	tracker.forget(robot.UID)
	if _, ok := tracker.ready(robot.UID, 2, fixtureNow); ok {
		t.Error("a deleted Robot was still waited for")
	}
}
