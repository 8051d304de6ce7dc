package status

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/robottest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// budgetOf is a budget of robot's as the disruption controller reports it:
// expected pods, healthy ones, and how many must stay.
func budgetOf(robot *robotv1beta1.Robot, expected, healthy, desired int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: robot.Name, Namespace: robot.Namespace, Generation: 1},
		Spec:       policyv1.PodDisruptionBudgetSpec{UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow)},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, ExpectedPods: expected, CurrentHealthy: healthy,
			DesiredHealthy: desired, DisruptionsAllowed: max(0, healthy-desired)},
	}
}

// unschedulableStatus is the status of a Robot of two replicas, one of
// which runs while the other cannot be scheduled: Stalled, Unschedulable.
func unschedulableStatus(t *testing.T, robot *robotv1beta1.Robot, now time.Time) (*appsv1.Deployment, []*corev1.Pod) {
	t.Helper()
	deployment := unavailable(t, robot)
	deployment.Status.AvailableReplicas, deployment.Status.ReadyReplicas = 1, 1
	pod := robottest.Pod(robot, "pinned-b", corev1.ContainerState{})
	pod.Status.ContainerStatuses = nil
	pod.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules."}
	return deployment, []*corev1.Pod{pod}
}

// TestBudgetBlockIsPartOfReady: a Robot that is Stalled while its budget
// allows no eviction says so in Ready's message, and in Stalled's, with its
// reason, and so its kstatus, as they were. A budget that lets a pod go,
// whose status is not about its spec, that holds no healthy pod, or a Robot
// that is only on its way to Ready, add nothing.
func TestBudgetBlockIsPartOfReady(t *testing.T) {
	robot := robottest.NewRobot("pinned", 2)
	now := metav1.NewTime(robottest.FixtureNow)
	stale := budgetOf(robot, 2, 1, 1)
	stale.Generation = 2
	ifHealthy := budgetOf(robot, 2, 0, 1)
	ifHealthy.Spec.UnhealthyPodEvictionPolicy = nil
	for _, tt := range []struct {
		name    string
		budget  *policyv1.PodDisruptionBudget
		stalled bool   // the Robot is Stalled (Unschedulable), or only on its way
		says    string // what Ready's message says of the budget; "" for nothing
	}{
		{"one of two healthy, one must stay", budgetOf(robot, 2, 1, 1), true,
			`PodDisruptionBudget "pinned" allows no eviction (1 of 2 pods healthy, 1 must stay): a drain of a node that runs one of them waits`},
		{"no budget", nil, true, ""},
		{"room for an eviction", budgetOf(robot, 2, 2, 1), true, ""},
		{"status about an earlier spec", stale, true, ""},
		{"no healthy pod, and unhealthy ones may go", budgetOf(robot, 2, 0, 1), true, ""},
		{"no healthy pod, and unhealthy ones held", ifHealthy, true, "(0 of 2 pods healthy, 1 must stay)"},
		{"a pod starting", budgetOf(robot, 2, 1, 1), false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			deployment := unavailable(t, robot)
			var pods []*corev1.Pod
			if tt.stalled {
				deployment, pods = unschedulableStatus(t, robot, now.Time)
			}
			status, _ := diagnosed(t, robot, deployment, []*appsv1.ReplicaSet{robottest.ReplicaSet(deployment, "1")}, pods...)
			before := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady).DeepCopy()
			beforeStalled := meta.IsStatusConditionTrue(status.Conditions, robotv1beta1.ConditionStalled)
			WithDisruptionBudget(robot, &status, tt.budget, now)
			ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
			if ready.Reason != before.Reason || ready.Status != before.Status || ready.LastTransitionTime != before.LastTransitionTime {
				t.Errorf("Ready went from %s %s to %s %s: only its message may change", before.Status, before.Reason, ready.Status, ready.Reason)
			}
			if beforeStalled != tt.stalled {
				t.Fatalf("Stalled before the budget is looked at: %v, want %v", beforeStalled, tt.stalled)
			}
			got := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionStalled)
			switch {
			case !tt.stalled && got != nil:
				t.Errorf("Stalled %s %q on a Robot on its way: want none", got.Status, got.Message)
			case tt.stalled && (got == nil || got.Status != metav1.ConditionTrue || got.Message != ready.Message):
				t.Errorf("Stalled %v, want True with Ready's message %q", got, ready.Message)
			}
			if tt.says == "" {
				if ready.Message != before.Message {
					t.Errorf("Ready's message %q, want it left as %q", ready.Message, before.Message)
				}
				return
			}
			if !strings.HasPrefix(ready.Message, before.Message+"; ") || !strings.Contains(ready.Message, tt.says) {
				t.Errorf("Ready's message %q, want %q followed by %q", ready.Message, before.Message, tt.says)
			}
		})
	}
}

// TestBudgetBlockFitsTheMessage: a Ready message near the limit is cut so
// that the budget's sentence still fits whole; computed again later, with
// nothing changed, Ready and Stalled say the same.
func TestBudgetBlockFitsTheMessage(t *testing.T) {
	robot := robottest.NewRobot("pinned", 2)
	now := metav1.NewTime(robottest.FixtureNow)
	deployment, pods := unschedulableStatus(t, robot, now.Time)
	pods[0].Status.Conditions[0].Message = strings.Repeat("é", maxMessageLength)
	budget := budgetOf(robot, 2, 1, 1)
	first, _ := diagnosed(t, robot, deployment, []*appsv1.ReplicaSet{robottest.ReplicaSet(deployment, "1")}, pods...)
	WithDisruptionBudget(robot, &first, budget, now)
	ready := meta.FindStatusCondition(first.Conditions, robotv1beta1.ConditionReady)
	if len(ready.Message) > maxMessageLength || !strings.HasSuffix(ready.Message, "a drain of a node that runs one of them waits") {
		t.Errorf("Ready's message is %d bytes (at most %d) and ends %q, want the budget's sentence whole", len(ready.Message), maxMessageLength, ready.Message[max(0, len(ready.Message)-80):])
	}

	robot.Status = first
	later := metav1.NewTime(robottest.FixtureNow.Add(time.Hour))
	second, _ := Diagnosed(robot, deployment, nil, replicaSetSummaries(t, robottest.ReplicaSet(deployment, "1")), summaries(t, pods...), nil, later)
	WithDisruptionBudget(robot, &second, budget, later)
	// Ready, and what Stalled says. (Stalled's and Reconciling's
	// transition times are Diagnosed's to keep, with or without a budget.)
	for _, conditionType := range []string{robotv1beta1.ConditionReady, robotv1beta1.ConditionStalled} {
		got, want := meta.FindStatusCondition(second.Conditions, conditionType), meta.FindStatusCondition(first.Conditions, conditionType)
		if conditionType == robotv1beta1.ConditionStalled {
			got, want = &metav1.Condition{Status: got.Status, Reason: got.Reason, Message: got.Message}, &metav1.Condition{Status: want.Status, Reason: want.Reason, Message: want.Message}
		}
		if fmt.Sprint(*got) != fmt.Sprint(*want) {
			t.Errorf("an hour later, nothing changed: %s is\n%v\nwant\n%v", conditionType, *got, *want)
		}
	}
}
