package main

import (
	"math/rand"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
)

// TestHostileRobotsStayWithinTheSchema checks the generator of scenario 9
// against the limits of the Robot CRD that it means to reach but not pass,
// and that each edge is reached: a generator that drifted past a limit
// would be refused by the API server, one that fell short would test less.
func TestHostileRobotsStayWithinTheSchema(t *testing.T) {
	dnsLabel := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	envName := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	reached := sets.New[string]()
	for i := range 400 {
		robot := hostileRobot(rand.New(rand.NewSource(int64(i))), i)
		spec := robot.Spec
		if len(robot.Name) > 63 || !dnsLabel.MatchString(robot.Name) {
			t.Errorf("Robot %d: name %q is not a DNS label of at most 63 characters", i, robot.Name)
		}
		if len(spec.Image) == 0 || len(spec.Image) > 512 || strings.ContainsAny(spec.Image, " \t\n") {
			t.Errorf("Robot %d: image %q", i, spec.Image)
		}
		if r := *spec.Replicas; r < 1 || r > 1000 || (r == 1000) != (i == 0) {
			t.Errorf("Robot %d: replicas %d; want 1-3, and 1000 for Robot 0 only", i, r)
		}
		if len(spec.Args) > 256 || len(spec.Env) > 256 || len(spec.Command) > 256 {
			t.Errorf("Robot %d: %d args, %d env vars, %d command words; at most 256 each", i, len(spec.Args), len(spec.Env), len(spec.Command))
		}
		names := sets.New[string]()
		for _, e := range spec.Env {
			if !envName.MatchString(e.Name) || names.Has(e.Name) {
				t.Errorf("Robot %d: env var name %q is invalid or repeated", i, e.Name)
			}
			names.Insert(e.Name)
		}
		for _, p := range spec.Ports {
			if p.ContainerPort < 1 || p.ContainerPort > 65535 {
				t.Errorf("Robot %d: port %d", i, p.ContainerPort)
			}
		}
		if limit, ok := spec.Resources.Limits.Memory().AsInt64(); ok && limit > 0 && limit < spec.Resources.Requests.Memory().Value() {
			t.Errorf("Robot %d: memory limit %d under its request", i, limit)
		}
		for edge, at := range map[string]bool{"63-character name": len(robot.Name) == 63, "512-character image": len(spec.Image) == 512,
			"256 args": len(spec.Args) == 256, "256 env vars": len(spec.Env) == 256, "a port": len(spec.Ports) > 0, "1000 replicas": *spec.Replicas == 1000} {
			if at {
				reached.Insert(edge)
			}
		}
	}
	if want := sets.New("63-character name", "512-character image", "256 args", "256 env vars", "a port", "1000 replicas"); !reached.Equal(want) {
		t.Errorf("edges reached: %v; want all of %v", sets.List(reached), sets.List(want))
	}
}
