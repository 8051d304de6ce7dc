//go:build e2e

package e2e

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
)

// TestRestartWritesNothing: an operator that restarts while its Robots are
// converged writes nothing at all: not a Deployment, not a status, not an
// event.
func TestRestartWritesNothing(t *testing.T) {
	if env.audit.err != nil {
		t.Fatalf("this test counts the operator's writes in the API server's audit log: %v", env.audit.err)
	}
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "alpha", 2))
	createRobot(t, newRobot(ns, "beta", 1))
	waitForRobotReady(t, ns, "alpha")
	waitForRobotReady(t, ns, "beta")

	restarted := restartOperator(t)
	const window = 10 * time.Second
	time.Sleep(window)

	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: restarted})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		t.Errorf("write by the restarted operator: %s", &w)
	}
	t.Logf("the restarted operator made %d writes in the %v after it logged \"Started workers\"", len(writes), window)

	// Not because it is idle or dead: it still acts on a change.
	patchRobot(t, ns, "alpha", `{"spec":{"replicas":3}}`)
	waitForDeployment(t, ns, "alpha", "has 3 replicas", func(d *appsv1.Deployment) bool { return ptr.Deref(d.Spec.Replicas, 1) == 3 })
	waitForRobotReady(t, ns, "alpha")
}
