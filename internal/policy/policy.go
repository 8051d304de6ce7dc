package policy

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/robot-operator/robot-operator/internal/workload"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// Policy is what the administrator allows Robots to ask for. The zero
// Policy allows everything the CRD admits.
type Policy struct {
	// Routes limits the HTTPRoutes of spec.http (routes.go).
	Routes Routes
	// ServiceMetadata limits the Service's annotations, labels and load
	// balancer class (servicemeta.go).
	ServiceMetadata ServiceMetadata
	// Shutdown limits the pods' grace period (shutdown.go).
	Shutdown Shutdown

	// ServiceTypes, when set, are the only types of Service the operator
	// creates; a Robot that asks for another reports ServiceTypeNotAllowed.
	// Empty: every type.
	ServiceTypes []robotv1beta1.ServiceType
	// DisruptionBudgets says which Robots get a PodDisruptionBudget
	// (disruptionbudget.go). Empty: the default.
	DisruptionBudgets DisruptionBudgets
	// Preflight says whether a changed pod template is checked before
	// it is written, and how fast (preflight.go).
	Preflight Preflight
	// FleetRolloutBudget is how many Robots at a time roll a change of
	// their pod template that does not come from their own spec (a new
	// default of the operator, say); 0: no limit.
	FleetRolloutBudget int
	// RevisionHistoryLimit is how many ControllerRevisions of its specs
	// each Robot keeps, the current one among them; 0 is the default,
	// workload.DefaultRevisionHistoryLimit.
	RevisionHistoryLimit int
}

// DefaultFleetRolloutBudget is -fleet-rollout-budget's default: few enough
// that a bad default of a new release stops at a handful of Robots, enough
// that a thousand Robots of a minute's rollout each take under two hours.
const DefaultFleetRolloutBudget = 10

// Flags registers the policy's flags on fs. The returned function reads
// their values into p once fs is parsed, and says what is wrong with them.
func (p *Policy) Flags(fs *flag.FlagSet) func() error {
	serviceTypes := fs.String("service-types", "ClusterIP,NodePort,LoadBalancer", "The types of Service the operator creates for Robots, comma-separated: a Robot that asks for another reports Synced=False, ServiceTypeNotAllowed. ClusterIP alone keeps whoever may create a Robot from opening a NodePort or a LoadBalancer through the operator.")
	fs.IntVar(&p.FleetRolloutBudget, "fleet-rollout-budget", DefaultFleetRolloutBudget, "How many Robots at a time roll a change of their pod template that does not come from their own spec (a new default of the operator's release, say), each until its rollout is over; the others wait, first come first served, and say so (Synced=False, WaitingForFleetBudget). A change of a Robot's own spec is never held. 0: no limit.")
	revisions := fs.Int("revision-history-limit", workload.DefaultRevisionHistoryLimit, "How many ControllerRevisions of its specs each Robot keeps, the current one among them (at least 1): beyond it, the oldest are deleted.")
	switches := []func() error{p.Routes.flags(fs), p.ServiceMetadata.flags(fs), p.Shutdown.flags(fs), p.disruptionBudgetFlags(fs), p.Preflight.flags(fs)}
	return func() error {
		types, err := parseServiceTypes(*serviceTypes)
		if err != nil {
			return err
		}
		p.ServiceTypes = types
		if p.FleetRolloutBudget < 0 {
			return fmt.Errorf("-fleet-rollout-budget: %d is below 0; give how many Robots may roll at once, or 0 for no limit", p.FleetRolloutBudget)
		}
		if *revisions < 1 {
			return fmt.Errorf("-revision-history-limit: %d; give 1 or more (the current revision is always kept)", *revisions)
		}
		p.RevisionHistoryLimit = *revisions
		for _, complete := range switches {
			if err := complete(); err != nil {
				return err
			}
		}
		return nil
	}
}

// parseServiceTypes reads -service-types.
func parseServiceTypes(value string) ([]robotv1beta1.ServiceType, error) {
	var types []robotv1beta1.ServiceType
	for _, name := range strings.Split(value, ",") {
		t := robotv1beta1.ServiceType(strings.TrimSpace(name))
		if !slices.Contains([]robotv1beta1.ServiceType{robotv1beta1.ServiceTypeClusterIP, robotv1beta1.ServiceTypeNodePort, robotv1beta1.ServiceTypeLoadBalancer}, t) {
			return nil, fmt.Errorf("-service-types: %q is not a Service type the operator creates; give ClusterIP, NodePort or LoadBalancer, comma-separated", name)
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	return types, nil
}

// AllowsServiceType reports whether the operator may create a Service of
// type t.
func (p *Policy) AllowsServiceType(t robotv1beta1.ServiceType) bool {
	return len(p.ServiceTypes) == 0 || slices.Contains(p.ServiceTypes, t)
}

// RevisionLimit is how many ControllerRevisions each Robot keeps.
func (p *Policy) RevisionLimit() int {
	if p.RevisionHistoryLimit < 1 {
		return workload.DefaultRevisionHistoryLimit
	}
	return p.RevisionHistoryLimit
}
