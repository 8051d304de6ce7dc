//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// statusTooLargeEnv is the size of an env value that etcd stores in a
// Robot's create, but not with the Robot's status added (its request
// limit is 1.5 MiB): 1,568,000 bytes still leave room for the status.
const statusTooLargeEnv = 1_570_000

// TestStatusTooLargeIsReportedOnce: a Robot that etcd cannot store once its
// status is added gets one StatusTooLarge Warning Event that says to shrink
// it, and the operator does not try to write its status again until its
// spec changes.
func TestStatusTooLargeIsReportedOnce(t *testing.T) {
	parallel(t)
	if env.audit.err != nil {
		t.Fatalf("this test counts the operator's status writes in the API server's audit log: %v", env.audit.err)
	}
	ns := newNamespace(t)
	start := time.Now()
	robot := newRobot(ns, "huge", 1)
	robot.Spec.Env = []corev1.EnvVar{{Name: "HUGE", Value: strings.Repeat("x", statusTooLargeEnv)}}
	created := createRobot(t, robot)

	events := waitForEvents(t, ns, created.UID, "StatusTooLarge", 1)
	if events[0].Type != corev1.EventTypeWarning || !strings.Contains(events[0].Message, "shrink its spec") {
		t.Errorf("event %s, want a Warning that says to shrink the Robot's spec", summarizeEvents(events))
	}
	statusWrites := func(ctx context.Context) ([]auditEvent, error) {
		return env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: start, Verb: "patch",
			Namespace: ns, Resource: "robots", Subresource: "status", Name: robot.Name})
	}
	// Each event about the Robot (its Deployment's and pods' status) queues
	// it again: none may send the write again.
	const window = 20 * time.Second
	time.Sleep(window)
	writes, err := statusWrites(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 1 || writes[0].code() == 200 {
		t.Errorf("%d status writes of Robot %s in the %v after it was created, want the one that failed:\n%v", len(writes), robot.Name, window, writes)
	}
	if events, err := robotEvents(t.Context(), ns, created.UID, "StatusTooLarge"); err != nil || eventCount(events) != 1 {
		t.Errorf("StatusTooLarge events: %s (%v), want 1", summarizeEvents(events), err)
	}

	// A smaller spec, a new generation: its status is written.
	patchRobot(t, ns, robot.Name, fmt.Sprintf(`{"spec":{"env":[{"name":"HUGE","value":%q}]}}`, "small"))
	waitForRobotReady(t, ns, robot.Name)
}

// TestStatusValidationTooCostlyIsReportedOnce: a Robot whose spec the CRD's
// CEL rules cannot check within the API server's cost budget (1000
// sidecars, stored while the CRD had no schema, as a cluster may hold them)
// has its status write refused with a 422 after seconds of the API server's
// CPU. It gets one StatusValidationTooCostly Warning Event, and the
// operator does not try to write its status again until its spec changes.
func TestStatusValidationTooCostlyIsReportedOnce(t *testing.T) {
	exclusive(t, "loosens the Robot CRD to store a spec its rules cannot check")
	if env.audit.err != nil {
		t.Fatalf("this test counts the operator's status writes in the API server's audit log: %v", env.audit.err)
	}
	ns := newNamespace(t)
	var sidecars strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&sidecars, "  - name: s%d\n    image: %s\n    ports:\n    - name: p%d\n      containerPort: %d\n", i, image1, i, 1000+i)
	}
	// The operator waits until the schema is back: its first status write
	// must meet the rules.
	pauseSharedOperator(t)
	start := time.Now()
	withoutRobotSchema(t, func() {
		createRawRobot(t, fmt.Sprintf("apiVersion: robot.dev/v1beta1\nkind: Robot\nmetadata:\n  name: costly\n  namespace: %s\nspec:\n  image: %s\n  sidecars:\n%s",
			ns, image1, sidecars.String()))
	})
	if err := env.operator.start(); err != nil {
		t.Fatalf("starting the shared operator again: %v", err)
	}
	stored, err := getStoredRobot(t.Context(), ns, "costly")
	if err != nil {
		t.Fatal(err)
	}
	events := waitForEvents(t, ns, stored.Metadata.UID, "StatusValidationTooCostly", 1)
	if events[0].Type != corev1.EventTypeWarning || !strings.Contains(events[0].Message, "cost") || !strings.Contains(events[0].Message, "shrink") {
		t.Errorf("event %s, want a Warning that names the cost and says to shrink the spec", summarizeEvents(events))
	}
	statusWrites := func(ctx context.Context) ([]auditEvent, error) {
		return env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: start, Verb: "patch",
			Namespace: ns, Resource: "robots", Subresource: "status", Name: "costly"})
	}
	const window = 20 * time.Second
	time.Sleep(window)
	writes, err := statusWrites(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 1 || writes[0].code() != 422 {
		t.Errorf("%d status writes of Robot costly in the %v after the refusal, want the one refused with 422:\n%v", len(writes), window, writes)
	}
	if events, err := robotEvents(t.Context(), ns, stored.Metadata.UID, "StatusValidationTooCostly"); err != nil || eventCount(events) != 1 {
		t.Errorf("StatusValidationTooCostly events: %s (%v), want 1", summarizeEvents(events), err)
	}

	// A spec the rules can check, a new generation: its status is written.
	if err := env.robots.RobotV1beta1().RESTClient().Patch(types.MergePatchType).Namespace(ns).Resource("robots").Name("costly").
		Body([]byte(`{"spec":{"sidecars":null}}`)).Do(t.Context()).Error(); err != nil {
		t.Fatalf("removing the sidecars: %v", err)
	}
	waitForRobotReady(t, ns, "costly")
}
