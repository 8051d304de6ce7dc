package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/outcome"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestDisruptionBudgets: which Robots get a budget in each mode of
// -disruption-budgets, and which are refused one.
func TestDisruptionBudgets(t *testing.T) {
	robot := func(replicas int32, budget *robotv1beta1.RobotDisruptionBudget) *robotv1beta1.Robot {
		return &robotv1beta1.Robot{Spec: robotv1beta1.RobotSpec{Replicas: ptr.To(replicas), DisruptionBudget: budget}}
	}
	asked := &robotv1beta1.RobotDisruptionBudget{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	robots := map[string]*robotv1beta1.Robot{
		"2 replicas":                    robot(2, nil),
		"1 replica":                     robot(1, nil),
		"1 replica, maxUnavailable set": robot(1, asked),
		"2 replicas, empty budget":      robot(2, &robotv1beta1.RobotDisruptionBudget{}),
		"1 replica, empty budget":       robot(1, &robotv1beta1.RobotDisruptionBudget{}),
		"2 replicas, disabled":          robot(2, &robotv1beta1.RobotDisruptionBudget{Disabled: true}),
	}
	for _, tt := range []struct {
		args    []string
		mode    DisruptionBudgets
		wants   []string // the Robots that get a budget
		refused []string // the Robots told they are refused one
	}{
		{nil, DisruptionBudgetsDefault, []string{"2 replicas", "1 replica, maxUnavailable set", "2 replicas, empty budget"}, nil},
		{[]string{"-disruption-budgets=opt-in"}, DisruptionBudgetsOptIn, []string{"1 replica, maxUnavailable set", "2 replicas, empty budget"}, nil},
		{[]string{"-disruption-budgets=off"}, DisruptionBudgetsOff, nil, []string{"1 replica, maxUnavailable set", "2 replicas, empty budget", "1 replica, empty budget"}},
	} {
		p, err := parse(t, tt.args...)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if p.DisruptionBudgets != tt.mode {
			t.Errorf("%v: mode %q, want %q", tt.args, p.DisruptionBudgets, tt.mode)
		}
		for name, r := range robots {
			if got, want := p.WantsDisruptionBudget(r), slices.Contains(tt.wants, name); got != want {
				t.Errorf("%s: a Robot of %s gets a budget: %v, want %v", tt.mode, name, got, want)
			}
			err := p.RefusesDisruptionBudget(r)
			var notAllowed *outcome.NotAllowedError
			if refused := errors.As(err, &notAllowed) && notAllowed.Reason == robotv1beta1.ReasonDisruptionBudgetNotAllowed; refused != slices.Contains(tt.refused, name) || (err != nil && !refused) {
				t.Errorf("%s: a Robot of %s is refused: %v, want refused %v", tt.mode, name, err, slices.Contains(tt.refused, name))
			}
		}
	}
	// The zero Policy, as tests build it, is the default.
	if zero := (&Policy{}); !zero.WantsDisruptionBudget(robots["2 replicas"]) || zero.RefusesDisruptionBudget(robots["1 replica, maxUnavailable set"]) != nil {
		t.Error("the zero Policy does not behave as -disruption-budgets=default")
	}
	if _, err := parse(t, "-disruption-budgets=none"); err == nil || !strings.Contains(err.Error(), "-disruption-budgets") {
		t.Errorf("-disruption-budgets=none: err = %v, want one naming the flag", err)
	}
}
