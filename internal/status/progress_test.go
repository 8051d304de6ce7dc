package status

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/robot-operator/robot-operator/internal/robottest"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestProgressFollowsReady: Reconciling and Stalled, the conditions kstatus
// reads, say what Ready says in kstatus's terms: InProgress on the way,
// Failed when stuck, Current once Ready. Never Current early: a Robot not
// Ready always has one of them True.
func TestProgressFollowsReady(t *testing.T) {
	tests := []struct {
		ready                metav1.ConditionStatus
		reason               string
		reconciling, stalled metav1.ConditionStatus
	}{
		{metav1.ConditionTrue, robotv1beta1.ReasonRolloutComplete, metav1.ConditionFalse, metav1.ConditionFalse},
		{metav1.ConditionFalse, robotv1beta1.ReasonRolloutInProgress, metav1.ConditionTrue, metav1.ConditionFalse},
		{metav1.ConditionFalse, robotv1beta1.ReasonDeploymentNotObserved, metav1.ConditionTrue, metav1.ConditionFalse},
		{metav1.ConditionFalse, robotv1beta1.ReasonWaitingForGarbageCollection, metav1.ConditionTrue, metav1.ConditionFalse},
		{metav1.ConditionFalse, robotv1beta1.ReasonImagePullFailed, metav1.ConditionFalse, metav1.ConditionTrue},
		{metav1.ConditionFalse, robotv1beta1.ReasonCrashLoop, metav1.ConditionFalse, metav1.ConditionTrue},
		{metav1.ConditionFalse, robotv1beta1.ReasonProgressDeadlineExceeded, metav1.ConditionFalse, metav1.ConditionTrue},
		{metav1.ConditionFalse, robotv1beta1.ReasonInvalidSpec, metav1.ConditionFalse, metav1.ConditionTrue},
		{metav1.ConditionFalse, robotv1beta1.ReasonDeploymentNameTaken, metav1.ConditionFalse, metav1.ConditionTrue},
		{metav1.ConditionFalse, robotv1beta1.ReasonNewerAPI, metav1.ConditionFalse, metav1.ConditionTrue},
		{metav1.ConditionUnknown, "SomethingNew", metav1.ConditionTrue, metav1.ConditionFalse},
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
