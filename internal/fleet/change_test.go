package fleet

import (
	"strconv"
	"testing"

	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// robotAt is a Robot of generation whose status says Synced (status and
// reason) at reported.
func robotAt(generation, reported int64, synced metav1.ConditionStatus, reason string) *robotv1beta1.Robot {
	robot := &robotv1beta1.Robot{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-web", Generation: generation}}
	if reported > 0 {
		robot.Status.ObservedGeneration = reported
		robot.Status.Conditions = []metav1.Condition{{Type: robotv1beta1.ConditionSynced, Status: synced, Reason: reason, ObservedGeneration: reported, Message: "m"}}
	}
	return robot
}

// stamped is a Deployment the operator last wrote at generation (0: with
// no stamp, as an earlier release wrote it).
func stamped(generation int64) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{workload.AnnotationSpecHash: "h"}}}
	if generation > 0 {
		d.Annotations[workload.AnnotationGeneration] = strconv.FormatInt(generation, 10)
	}
	return d
}

func TestFromSpec(t *testing.T) {
	for _, tc := range []struct {
		name       string
		robot      *robotv1beta1.Robot
		deployment *appsv1.Deployment
		fromSpec   bool
	}{
		{"the generation written is the Robot's: a new default", robotAt(3, 3, metav1.ConditionTrue, robotv1beta1.ReasonSynced), stamped(3), false},
		{"the generation moved since the write: the spec changed", robotAt(4, 3, metav1.ConditionTrue, robotv1beta1.ReasonSynced), stamped(3), true},
		{"the spec changed while paused", robotAt(4, 4, metav1.ConditionFalse, robotv1beta1.ReasonPaused), stamped(3), true},
		{"a default changed while paused", robotAt(3, 3, metav1.ConditionFalse, robotv1beta1.ReasonPaused), stamped(3), false},
		{"a failed sync at the written generation", robotAt(3, 3, metav1.ConditionFalse, robotv1beta1.ReasonSyncFailed), stamped(3), false},
		{"an earlier release's Deployment, the Robot Synced at its generation", robotAt(3, 3, metav1.ConditionTrue, robotv1beta1.ReasonSynced), stamped(0), false},
		{"an earlier release's Deployment, the Robot not Synced at its generation", robotAt(3, 2, metav1.ConditionTrue, robotv1beta1.ReasonSynced), stamped(0), true},
		{"a generation that asked nothing of the Deployment, Synced since", robotAt(5, 5, metav1.ConditionTrue, robotv1beta1.ReasonSynced), stamped(3), false},
		{"waiting for the budget at the Robot's generation", robotAt(5, 5, metav1.ConditionFalse, robotv1beta1.ReasonWaitingForFleetBudget), stamped(3), false},
		{"the spec changed while waiting", robotAt(6, 5, metav1.ConditionFalse, robotv1beta1.ReasonWaitingForFleetBudget), stamped(3), true},
		{"a new Robot, never reported", robotAt(1, 0, "", ""), stamped(0), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FromSpec(tc.robot, tc.deployment); got != tc.fromSpec {
				t.Errorf("FromSpec = %v, want %v", got, tc.fromSpec)
			}
		})
	}
}

// TestWaitingIsSaidOnce: the message the status already gives, at the
// Robot's generation, is kept; at another generation, or another reason,
// there is none.
func TestWaitingIsSaidOnce(t *testing.T) {
	if message, ok := Waiting(robotAt(5, 5, metav1.ConditionFalse, robotv1beta1.ReasonWaitingForFleetBudget)); !ok || message != "m" {
		t.Errorf("Waiting = %q, %v; want the stored message", message, ok)
	}
	if _, ok := Waiting(robotAt(6, 5, metav1.ConditionFalse, robotv1beta1.ReasonWaitingForFleetBudget)); ok {
		t.Error("Waiting at an earlier generation is kept")
	}
	if _, ok := Waiting(robotAt(5, 5, metav1.ConditionTrue, robotv1beta1.ReasonSynced)); ok {
		t.Error("a Synced Robot is said to wait")
	}
}

// rollout is a Deployment of 3 replicas at generation 2, as the Deployment
// controller reports it: observed, updated, total and available replicas.
func rollout(observed int64, updated, total, available int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Generation: 2},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)},
		Status:     appsv1.DeploymentStatus{ObservedGeneration: observed, UpdatedReplicas: updated, Replicas: total, AvailableReplicas: available},
	}
}

func TestRolloutDone(t *testing.T) {
	for _, tc := range []struct {
		name       string
		deployment *appsv1.Deployment
		done       bool
	}{
		{"done", rollout(2, 3, 3, 3), true},
		{"not observed", rollout(1, 3, 3, 3), false},
		{"not every replica updated", rollout(2, 2, 4, 3), false},
		{"an old replica left", rollout(2, 3, 4, 3), false},
		{"not every replica available", rollout(2, 3, 3, 2), false},
		{"no Deployment", nil, true},
	} {
		if got := RolloutDone(tc.deployment); got != tc.done {
			t.Errorf("%s: RolloutDone = %v, want %v", tc.name, got, tc.done)
		}
	}
}

// TestHolders: only the Deployments of Robots marked as rolling a budgeted
// change, and not done, hold slots again.
func TestHolders(t *testing.T) {
	owned := func(name string, budgeted bool, d *appsv1.Deployment) *appsv1.Deployment {
		d.Namespace, d.Name = "ns", name
		d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "robot.dev/v1beta1", Kind: "Robot", Name: name, UID: types.UID("uid-" + name), Controller: ptr.To(true)}}
		if budgeted {
			d.Annotations = map[string]string{workload.AnnotationBudgetedRollout: "true"}
		}
		return d
	}
	holders := Holders([]*appsv1.Deployment{
		owned("rolling", true, rollout(2, 1, 3, 2)),
		owned("done", true, rollout(2, 3, 3, 3)),
		owned("spec-change", false, rollout(2, 1, 3, 2)),
	})
	if len(holders) != 1 || holders[0] != (Robot{UID: "uid-rolling", Namespace: "ns", Name: "rolling"}) {
		t.Errorf("Holders = %v; want the rolling one alone", holders)
	}
}
