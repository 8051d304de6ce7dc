//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
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

// TestRestartKnowsTheGatewayAPI: an operator that restarts on a cluster
// with the Gateway API never tells a Robot with spec.http, on a guess made
// before it has looked, that the cluster has no Gateway API: no
// GatewayAPIMissing event, and the Robot's conditions do not move.
func TestRestartKnowsTheGatewayAPI(t *testing.T) {
	exclusive(t, "it installs the Gateway API's HTTPRoute CRD and restarts the shared operator")
	t.Cleanup(func() { removeRoutesCRD(t) })
	mustKubectl(t, "apply", "--server-side", "-f", routesCRDFile(t))
	eventually(t, convergeTimeout, "the HTTPRoute CRD is established", func(ctx context.Context) (bool, string, error) {
		out, _, err := kubectl(ctx, "", "get", "crd", routesCRD, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True", out, err
	})
	ns := newNamespace(t)
	robot := newRobot(ns, "site", 1)
	robot.Spec.Ports = httpPorts(8080)
	robot.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "public"}}}
	robot = createRobot(t, robot)
	// No Gateway controller runs here: the Robot waits for its route to be
	// accepted, its Deployment, Service and route as asked.
	before := waitForRobot(t, ns, "site", convergeTimeout, "waits for the Gateway", func(r *robotv1beta1.Robot) bool {
		ready := readyCondition(r)
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return ready != nil && ready.Reason == robotv1beta1.ReasonRouteNotAccepted && synced != nil && synced.Status == metav1.ConditionTrue
	})
	// The operator may have synced the Robot before it saw the CRD arrive,
	// and said then, rightly, that the Gateway API was missing.
	missing, err := robotEvents(t.Context(), ns, robot.UID, robotv1beta1.ReasonGatewayAPIMissing)
	if err != nil {
		t.Fatal(err)
	}

	const restarts = 8
	for range restarts {
		restartOperator(t)
		// A sync on a guess comes at once after the workers start.
		time.Sleep(time.Second)
	}

	// The Events of the last process are written when it stops; those of
	// the others were, at each restart.
	if err := env.operator.stop(); err != nil {
		t.Fatalf("stopping the operator: %v", err)
	}
	if err := env.operator.start(); err != nil {
		t.Fatalf("starting the operator again: %v", err)
	}
	events, err := robotEvents(t.Context(), ns, robot.UID, robotv1beta1.ReasonGatewayAPIMissing)
	if err != nil {
		t.Fatal(err)
	}
	if eventCount(events) != eventCount(missing) {
		t.Errorf("over %d restarts with the Gateway API installed: %s, before them: %s", restarts, summarizeEvents(events), summarizeEvents(missing))
	}
	after := getRobot(t, ns, "site")
	for _, typ := range []string{robotv1beta1.ConditionSynced, robotv1beta1.ConditionReady} {
		was, is := meta.FindStatusCondition(before.Status.Conditions, typ), meta.FindStatusCondition(after.Status.Conditions, typ)
		if is == nil || !is.LastTransitionTime.Equal(&was.LastTransitionTime) || is.Reason != was.Reason {
			t.Errorf("%s over %d restarts: was %s since %s, is %v", typ, restarts, was.Reason, was.LastTransitionTime, is)
		}
	}
}
