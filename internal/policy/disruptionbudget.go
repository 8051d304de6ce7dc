package policy

import (
	"flag"
	"fmt"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/workload"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// DisruptionBudgets says which Robots get a PodDisruptionBudget from the
// operator.
type DisruptionBudgets string

const (
	// DisruptionBudgetsDefault: a Robot gets the budget spec.disruptionBudget
	// asks for, and one of maxUnavailable 1 when it has 2 or more replicas
	// and sets none. The zero value means the same.
	DisruptionBudgetsDefault DisruptionBudgets = "default"
	// DisruptionBudgetsOptIn: only a Robot that sets spec.disruptionBudget
	// (not disabled) gets a budget. A platform whose tenants may not make
	// budgets themselves then gives them none they did not ask for.
	DisruptionBudgetsOptIn DisruptionBudgets = "opt-in"
	// DisruptionBudgetsOff: no Robot gets a budget, and the operator
	// deletes those it made. A Robot that asks for one reports
	// DisruptionBudgetNotAllowed. For a platform that wants every drain to
	// go through.
	DisruptionBudgetsOff DisruptionBudgets = "off"
)

// disruptionBudgetFlags registers -disruption-budgets on fs. The returned
// function reads it into p once fs is parsed.
func (p *Policy) disruptionBudgetFlags(fs *flag.FlagSet) func() error {
	value := fs.String("disruption-budgets", string(DisruptionBudgetsDefault), "Which Robots get a PodDisruptionBudget: default (those of 2 or more replicas, and those that set spec.disruptionBudget), opt-in (only those that set spec.disruptionBudget), or off (none: the operator deletes the budgets it made, and a Robot that asks for one reports Synced=False, DisruptionBudgetNotAllowed).")
	return func() error {
		switch mode := DisruptionBudgets(*value); mode {
		case DisruptionBudgetsDefault, DisruptionBudgetsOptIn, DisruptionBudgetsOff:
			p.DisruptionBudgets = mode
			return nil
		}
		return fmt.Errorf("-disruption-budgets: %q is not a mode; give %s, %s or %s", *value, DisruptionBudgetsDefault, DisruptionBudgetsOptIn, DisruptionBudgetsOff)
	}
}

// WantsDisruptionBudget reports whether the operator keeps a
// PodDisruptionBudget for robot.
func (p *Policy) WantsDisruptionBudget(robot *robotv1beta1.Robot) bool {
	switch p.DisruptionBudgets {
	case DisruptionBudgetsOff:
		return false
	case DisruptionBudgetsOptIn:
		return asksForDisruptionBudget(robot) && workload.WantsDisruptionBudget(robot)
	}
	return workload.WantsDisruptionBudget(robot)
}

// RefusesDisruptionBudget returns why robot gets no budget although it asks
// for one, or nil. Only off refuses: opt-in gives every Robot that asks the
// budget it asks for.
func (p *Policy) RefusesDisruptionBudget(robot *robotv1beta1.Robot) error {
	if p.DisruptionBudgets != DisruptionBudgetsOff || !asksForDisruptionBudget(robot) {
		return nil
	}
	return &outcome.NotAllowedError{Reason: robotv1beta1.ReasonDisruptionBudgetNotAllowed,
		Message: "the Robot asks for a PodDisruptionBudget (spec.disruptionBudget), and the operator was started with -disruption-budgets=off: it keeps none, so that node drains are never held. Remove spec.disruptionBudget, or set disabled: true"}
}

// asksForDisruptionBudget reports whether robot sets spec.disruptionBudget
// to anything but disabled.
func asksForDisruptionBudget(robot *robotv1beta1.Robot) bool {
	budget := robot.Spec.DisruptionBudget
	return budget != nil && !budget.Disabled
}
