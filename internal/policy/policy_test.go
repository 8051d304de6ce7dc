package policy

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// parse registers the policy's flags, parses args, and completes it.
func parse(t *testing.T, args ...string) (*Policy, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	p := &Policy{}
	complete := p.Flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return p, complete()
}

func TestServiceTypes(t *testing.T) {
	p, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []robotv1beta1.ServiceType{robotv1beta1.ServiceTypeClusterIP, robotv1beta1.ServiceTypeNodePort, robotv1beta1.ServiceTypeLoadBalancer} {
		if !p.AllowsServiceType(st) {
			t.Errorf("the default does not allow %s", st)
		}
	}
	p, err = parse(t, "-service-types", " ClusterIP,ClusterIP")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.ServiceTypes, []robotv1beta1.ServiceType{robotv1beta1.ServiceTypeClusterIP}) {
		t.Errorf("ServiceTypes = %v, want [ClusterIP] once", p.ServiceTypes)
	}
	if p.AllowsServiceType(robotv1beta1.ServiceTypeLoadBalancer) {
		t.Error("-service-types=ClusterIP allows a LoadBalancer")
	}
	for _, bad := range []string{"ClusterIP,ExternalName", ""} {
		if _, err := parse(t, "-service-types", bad); err == nil || !strings.Contains(err.Error(), "-service-types") {
			t.Errorf("-service-types=%q: err = %v, want one naming the flag", bad, err)
		}
	}
}

func TestFleetRolloutBudget(t *testing.T) {
	p, err := parse(t)
	if err != nil || p.FleetRolloutBudget != DefaultFleetRolloutBudget {
		t.Errorf("the default: %d, %v; want %d", p.FleetRolloutBudget, err, DefaultFleetRolloutBudget)
	}
	if p, err := parse(t, "-fleet-rollout-budget=0"); err != nil || p.FleetRolloutBudget != 0 {
		t.Errorf("-fleet-rollout-budget=0: %d, %v; want no limit", p.FleetRolloutBudget, err)
	}
	if _, err := parse(t, "-fleet-rollout-budget=-1"); err == nil || !strings.Contains(err.Error(), "-fleet-rollout-budget") {
		t.Errorf("-fleet-rollout-budget=-1: %v; want an error naming the flag", err)
	}
}
