package workload

import (
	"fmt"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestNewDisruptionBudget: a budget that never blocks a drain. By default
// one pod at a time may go for a Robot of 2 or more replicas, and a Robot
// of fewer gets none; the Robot may set its own maxUnavailable, or ask for
// none.
func TestNewDisruptionBudget(t *testing.T) {
	percent := intstr.FromString("50%")
	for _, tt := range []struct {
		name     string
		replicas int32
		budget   *robotv1beta1.RobotDisruptionBudget
		want     string // maxUnavailable; "" for no budget
	}{
		{"one replica", 1, nil, ""},
		{"no replicas", 0, nil, ""},
		{"two replicas", 2, nil, "1"},
		{"ten replicas", 10, nil, "1"},
		{"two replicas, an empty budget", 2, &robotv1beta1.RobotDisruptionBudget{}, "1"},
		{"a percentage", 4, &robotv1beta1.RobotDisruptionBudget{MaxUnavailable: &percent}, "50%"},
		{"a number", 5, &robotv1beta1.RobotDisruptionBudget{MaxUnavailable: ptr.To(intstr.FromInt32(2))}, "2"},
		{"set, on one replica", 1, &robotv1beta1.RobotDisruptionBudget{MaxUnavailable: ptr.To(intstr.FromInt32(1))}, "1"},
		{"disabled", 3, &robotv1beta1.RobotDisruptionBudget{Disabled: true}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.NewRobot("web", tt.replicas)
			robot.Spec.DisruptionBudget = tt.budget
			budget := NewDisruptionBudget(robot)
			if WantsDisruptionBudget(robot) != (budget != nil) {
				t.Errorf("WantsDisruptionBudget = %v, with a budget of %v", WantsDisruptionBudget(robot), budget)
			}
			if tt.want == "" {
				if budget != nil {
					t.Fatalf("a budget of %v, want none", budget.Spec.MaxUnavailable)
				}
				return
			}
			if budget == nil {
				t.Fatalf("no budget, want maxUnavailable %s", tt.want)
			}
			if got := budget.Spec.MaxUnavailable.String(); got != tt.want {
				t.Errorf("maxUnavailable %s, want %s", got, tt.want)
			}
			if *budget.Name != DeploymentName(robot) || *budget.Namespace != robot.Namespace {
				t.Errorf("named %s/%s, want the Deployment's name", *budget.Namespace, *budget.Name)
			}
			if got, want := fmt.Sprint(budget.Spec.Selector.MatchLabels), fmt.Sprint(selectorLabels(robot)); got != want {
				t.Errorf("selector %s, want the Deployment's %s", got, want)
			}
			if *budget.Spec.UnhealthyPodEvictionPolicy != policyv1.AlwaysAllow {
				t.Errorf("unhealthyPodEvictionPolicy %s, want AlwaysAllow: a crash-looping pod must not block a drain", *budget.Spec.UnhealthyPodEvictionPolicy)
			}
			if ref := budget.OwnerReferences[0]; *ref.UID != robot.UID || !*ref.Controller {
				t.Errorf("owner %v, want the Robot as controller", ref)
			}
			if budget.Annotations[AnnotationSpecHash] == "" || budget.Labels[LabelManagedBy] != LabelManagedByValue {
				t.Errorf("annotations %v, labels %v: want the spec hash and the managed-by label", budget.Annotations, budget.Labels)
			}
		})
	}
}

// TestDisruptionBudgetReleased: "unmanaged" takes a budget out of the
// operator's hands in any case; "managed", no annotation or any other value
// leaves it in them.
func TestDisruptionBudgetReleased(t *testing.T) {
	for value, released := range map[string]bool{
		"unmanaged": true,
		"Unmanaged": true,
		"UNMANAGED": true,
		"managed":   false,
		"Managed":   false,
		"true":      false,
		"":          false,
	} {
		budget := &policyv1.PodDisruptionBudget{}
		budget.Annotations = map[string]string{AnnotationDisruptionBudget: value}
		if got := DisruptionBudgetReleased(budget); got != released {
			t.Errorf("%q: released %v, want %v", value, got, released)
		}
	}
	if DisruptionBudgetReleased(&policyv1.PodDisruptionBudget{}) {
		t.Error("a budget with no annotation is released")
	}
}
