package status

import (
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/robot-operator/robot-operator/internal/robottest"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestProgressFollowsReady: Reconciling and Stalled, the conditions kstatus
// reads, say what Ready says in kstatus's terms: InProgress on the way,
// Failed when stuck, Current once Ready. Never Current early: a Robot not
// Ready always has one of them True. Each is on the Robot only while True,
// with Ready's reason and message; kstatus reads the other's absence as
// False.
func TestProgressFollowsReady(t *testing.T) {
	const none = metav1.ConditionStatus("")
	tests := []struct {
		ready                metav1.ConditionStatus
		reason               string
		reconciling, stalled metav1.ConditionStatus
	}{
		{metav1.ConditionTrue, robotv1beta1.ReasonRolloutComplete, none, none},
		{metav1.ConditionFalse, robotv1beta1.ReasonRolloutInProgress, metav1.ConditionTrue, none},
		{metav1.ConditionFalse, robotv1beta1.ReasonDeploymentNotObserved, metav1.ConditionTrue, none},
		{metav1.ConditionFalse, robotv1beta1.ReasonWaitingForGarbageCollection, metav1.ConditionTrue, none},
		{metav1.ConditionFalse, robotv1beta1.ReasonImagePullFailed, none, metav1.ConditionTrue},
		{metav1.ConditionFalse, robotv1beta1.ReasonCrashLoop, none, metav1.ConditionTrue},
		{metav1.ConditionFalse, robotv1beta1.ReasonProgressDeadlineExceeded, none, metav1.ConditionTrue},
		{metav1.ConditionFalse, robotv1beta1.ReasonInvalidSpec, none, metav1.ConditionTrue},
		{metav1.ConditionFalse, robotv1beta1.ReasonDeploymentNameTaken, none, metav1.ConditionTrue},
		{metav1.ConditionFalse, robotv1beta1.ReasonNewerAPI, none, metav1.ConditionTrue},
		{metav1.ConditionUnknown, "SomethingNew", metav1.ConditionTrue, none},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			status := robotv1beta1.RobotStatus{Conditions: []metav1.Condition{{
				Type: robotv1beta1.ConditionReady, Status: tt.ready, Reason: tt.reason, Message: "why: " + tt.reason,
			}}}
			setProgress(&status, nil, 3, metav1.NewTime(robottest.FixtureNow))
			for _, want := range []struct {
				conditionType string
				status        metav1.ConditionStatus
			}{{robotv1beta1.ConditionReconciling, tt.reconciling}, {robotv1beta1.ConditionStalled, tt.stalled}} {
				c := meta.FindStatusCondition(status.Conditions, want.conditionType)
				if want.status == none {
					if c != nil {
						t.Errorf("%s = %s/%s, want no %s condition", want.conditionType, c.Status, c.Reason, want.conditionType)
					}
					continue
				}
				if c == nil {
					t.Fatalf("no %s condition", want.conditionType)
				}
				if c.Status != want.status || c.Reason != tt.reason || c.Message != "why: "+tt.reason || c.ObservedGeneration != 3 {
					t.Errorf("%s = %s/%s %q (generation %d), want %s with Ready's reason and message, generation 3", want.conditionType, c.Status, c.Reason, c.Message, c.ObservedGeneration, want.status)
				}
			}
		})
	}
}

// TestProgressConditionsOfAnEarlierRelease: a Robot stored by a release
// that kept Reconciling and Stalled at False loses them on its first sync
// (one status write), and the next sync computes the status it stored.
func TestProgressConditionsOfAnEarlierRelease(t *testing.T) {
	robot := robottest.NewRobot("web", 1)
	deployment := liveDeployment(t, robot)
	now := metav1.NewTime(robottest.FixtureNow)
	stored := Compute(robot, deployment, nil, nil, now)
	if !meta.IsStatusConditionTrue(stored.Conditions, robotv1beta1.ConditionReady) {
		t.Fatalf("Ready not True: %v", stored.Conditions)
	}
	earlier := metav1.NewTime(robottest.FixtureNow.Add(-time.Hour))
	for _, conditionType := range []string{robotv1beta1.ConditionReconciling, robotv1beta1.ConditionStalled} {
		stored.Conditions = append(stored.Conditions, metav1.Condition{Type: conditionType, Status: metav1.ConditionFalse,
			Reason: robotv1beta1.ReasonRolloutComplete, Message: "1 of 1 replicas are available", ObservedGeneration: robot.Generation, LastTransitionTime: earlier})
	}
	robot.Status = stored

	first := Compute(robot, deployment, nil, nil, metav1.NewTime(robottest.FixtureNow.Add(time.Minute)))
	if apiequality.Semantic.DeepEqual(first, robot.Status) {
		t.Fatal("the first sync after the upgrade writes nothing: Reconciling and Stalled stay False")
	}
	for _, c := range first.Conditions {
		if c.Type == robotv1beta1.ConditionReconciling || c.Type == robotv1beta1.ConditionStalled {
			t.Errorf("first sync after the upgrade keeps %s=%s", c.Type, c.Status)
		}
	}
	robot.Status = first
	if second := Compute(robot, deployment, nil, nil, metav1.NewTime(robottest.FixtureNow.Add(2*time.Minute))); !apiequality.Semantic.DeepEqual(second, robot.Status) {
		t.Errorf("the second sync writes again:\nstored:   %+v\ncomputed: %+v", robot.Status.Conditions, second.Conditions)
	}
}

// TestProgressKeepsItsPlace: a sync whose Ready goes through another
// reason before it settles on the stored one (Compute says Reconciling,
// the diagnosis Stalled) gives the conditions stored, in their order and
// with their transition times, even with another controller's condition
// after them: an unchanged Robot writes no status.
func TestProgressKeepsItsPlace(t *testing.T) {
	since := metav1.NewTime(robottest.FixtureNow.Add(-time.Hour))
	stored := []metav1.Condition{
		{Type: robotv1beta1.ConditionReady, Status: metav1.ConditionFalse, Reason: robotv1beta1.ReasonImagePullFailed, Message: "pull", ObservedGeneration: 1, LastTransitionTime: since},
		{Type: robotv1beta1.ConditionStalled, Status: metav1.ConditionTrue, Reason: robotv1beta1.ReasonImagePullFailed, Message: "pull", ObservedGeneration: 1, LastTransitionTime: since},
		{Type: "Audited", Status: metav1.ConditionTrue, Reason: "ByAnotherController", LastTransitionTime: since},
	}
	status := robotv1beta1.RobotStatus{Conditions: append([]metav1.Condition(nil), stored...)}
	now := metav1.NewTime(robottest.FixtureNow)
	ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
	ready.Reason, ready.Message = robotv1beta1.ReasonRolloutInProgress, "0 of 1 updated replicas are available"
	setProgress(&status, stored, 1, now)
	if meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionStalled) != nil || !meta.IsStatusConditionTrue(status.Conditions, robotv1beta1.ConditionReconciling) {
		t.Fatalf("on the way: want Reconciling and no Stalled, got %v", status.Conditions)
	}
	ready = meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
	ready.Reason, ready.Message = robotv1beta1.ReasonImagePullFailed, "pull"
	setProgress(&status, stored, 1, now)
	if !apiequality.Semantic.DeepEqual(stored, status.Conditions) {
		t.Errorf("conditions differ from those stored:\nstored:   %+v\ncomputed: %+v", stored, status.Conditions)
	}

	// Ready again: both are gone, the other controller's condition stays.
	ready = meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
	ready.Status, ready.Reason = metav1.ConditionTrue, robotv1beta1.ReasonRolloutComplete
	setProgress(&status, stored, 1, now)
	var types []string
	for _, c := range status.Conditions {
		types = append(types, c.Type)
	}
	if got := strings.Join(types, ","); got != "Ready,Audited" {
		t.Errorf("conditions of a Ready Robot: %s, want Ready,Audited", got)
	}
}

// TestProgressOfADiagnosedRobot: a cause found by the diagnosis (a pull
// that fails) makes the Robot Stalled, not Reconciling.
func TestProgressOfADiagnosedRobot(t *testing.T) {
	status := robotv1beta1.RobotStatus{Conditions: []metav1.Condition{{Type: robotv1beta1.ConditionReady, Status: metav1.ConditionFalse, Reason: robotv1beta1.ReasonRolloutInProgress}}}
	setProgress(&status, nil, 1, metav1.NewTime(robottest.FixtureNow))
	ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
	ready.Reason = robotv1beta1.ReasonImagePullFailed
	setProgress(&status, nil, 1, metav1.NewTime(robottest.FixtureNow.Add(1)))
	if c := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionStalled); c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(robottest.FixtureNow.Add(1)) {
		t.Errorf("Stalled %+v, want True since the cause was found", c)
	}
}
