//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
)

// TestRestartWritesNothing: an operator that restarts while its Robots are
// converged writes nothing at all: not a Deployment, not a Service, not a
// status, not an event.
func TestRestartWritesNothing(t *testing.T) {
	exclusive(t, "it restarts the shared operator and counts its writes on a cluster where nothing else happens")
	if env.audit.err != nil {
		t.Fatalf("this test counts the operator's writes in the API server's audit log: %v", env.audit.err)
	}
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "alpha", 2))
	// beta has a port, so a Service too, which must cost nothing either.
	beta := newRobot(ns, "beta", 1)
	beta.Spec.Ports = httpPorts(8080)
	createRobot(t, beta)
	for _, name := range []string{"alpha", "beta"} {
		waitForRobot(t, ns, name, convergeTimeout, "is Ready, its rollout reported complete", robotSettled)
	}
	// Converged: the operator has stopped writing.
	const quiet = 2 * time.Second
	eventually(t, convergeTimeout, fmt.Sprintf("no write by the operator for %v", quiet), func(context.Context) (bool, string, error) {
		writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: time.Now().Add(-quiet)})
		if err != nil {
			return false, "", err
		}
		return len(writes) == 0, fmt.Sprintf("%d writes in the last %v", len(writes), quiet), nil
	})

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
	t.Logf("the restarted operator made %d writes from its start to %v after it logged \"Started workers\"", len(writes), window)

	// Not because it is idle or dead: it still acts on a change.
	patchRobot(t, ns, "alpha", `{"spec":{"replicas":3}}`)
	waitForDeployment(t, ns, "alpha", "has 3 replicas", func(d *appsv1.Deployment) bool { return ptr.Deref(d.Spec.Replicas, 1) == 3 })
	waitForRobotReady(t, ns, "alpha")
}
