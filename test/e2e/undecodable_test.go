//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// storedRobot is the part of a Robot that the tests read from the API server
// as JSON, for Robots whose spec the typed client cannot decode.
type storedRobot struct {
	Metadata metav1.ObjectMeta        `json:"metadata"`
	Status   robotv1beta1.RobotStatus `json:"status"`
}

// getStoredRobot reads a Robot without decoding its spec.
func getStoredRobot(ctx context.Context, ns, name string) (*storedRobot, error) {
	raw, err := env.robots.RobotV1beta1().RESTClient().Get().Namespace(ns).Resource("robots").Name(name).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var robot storedRobot
	if err := json.Unmarshal(raw, &robot); err != nil {
		return nil, fmt.Errorf("reading Robot %s/%s: %w", ns, name, err)
	}
	return &robot, nil
}

// createRawRobot stores a Robot manifest as it is, without the typed client.
func createRawRobot(t *testing.T, manifest string) {
	t.Helper()
	body, err := utilyaml.ToJSON([]byte(manifest))
	if err != nil {
		t.Fatalf("converting the manifest to JSON: %v\n%s", err, manifest)
	}
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(body, &meta); err != nil {
		t.Fatal(err)
	}
	err = env.robots.RobotV1beta1().RESTClient().Post().Namespace(meta.Metadata.Namespace).Resource("robots").
		Body(body).Do(t.Context()).Error()
	if err != nil {
		t.Fatalf("storing Robot %s: %v\n%s", meta.Metadata.Name, err, manifest)
	}
}

// withoutRobotSchema replaces the Robot CRD's schema with one that accepts
// anything, runs store, and puts the CRD back as it was, so that store can
// write Robots the schema would refuse: what a cluster holds when its CRD
// was once looser than it is now. (Not everything: the API server reads
// spec.replicas for the scale subresource, and refuses one it cannot.)
func withoutRobotSchema(t *testing.T, store func()) {
	t.Helper()
	requireExclusive(t, "changes the Robot CRD")
	original := mustKubectl(t, "get", "crd", "robots.robot.dev", "-o", "json")
	var crd map[string]any
	if err := json.Unmarshal([]byte(original), &crd); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		var back map[string]any
		if err := json.Unmarshal([]byte(original), &back); err != nil {
			t.Error(err)
			return
		}
		delete(back["metadata"].(map[string]any), "resourceVersion")
		body, _ := json.Marshal(back)
		if _, stderr, err := kubectl(context.Background(), string(body), "replace", "-f", "-"); err != nil {
			t.Errorf("putting the Robot CRD back: %v\n%s", err, stderr)
		}
		if _, stderr, err := kubectl(context.Background(), "", "wait", "--for=condition=Established", "--timeout=60s", "crd/robots.robot.dev"); err != nil {
			t.Errorf("waiting for the Robot CRD: %v\n%s", err, stderr)
		}
	}
	restored := false
	t.Cleanup(func() {
		if !restored {
			restore()
		}
	})
	for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
		v.(map[string]any)["schema"] = map[string]any{"openAPIV3Schema": map[string]any{
			"type": "object", "x-kubernetes-preserve-unknown-fields": true,
		}}
	}
	body, _ := json.Marshal(crd)
	if _, stderr, err := kubectl(t.Context(), string(body), "replace", "-f", "-"); err != nil {
		t.Fatalf("loosening the Robot CRD: %v\n%s", err, stderr)
	}
	// The API server takes a moment to serve the new schema.
	eventually(t, 30*time.Second, "the loosened Robot CRD is served", func(ctx context.Context) (bool, string, error) {
		err := env.robots.RobotV1beta1().RESTClient().Post().Namespace("default").Resource("robots").
			Param("dryRun", metav1.DryRunAll).
			Body([]byte(`{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"probe"},"spec":{"image":"x","ports":"http"}}`)).
			Do(ctx).Error()
		return err == nil, fmt.Sprint(err), nil
	})
	store()
	restore()
	restored = true
	eventually(t, 30*time.Second, "the Robot CRD's schema is enforced again", func(ctx context.Context) (bool, string, error) {
		err := env.robots.RobotV1beta1().RESTClient().Post().Namespace("default").Resource("robots").
			Param("dryRun", metav1.DryRunAll).
			Body([]byte(`{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"probe"},"spec":{"image":"x","ports":"http"}}`)).
			Do(ctx).Error()
		return err != nil, fmt.Sprint(err), nil
	})
}

// TestUndecodableRobots: a Robot the operator cannot decode — one the schema
// admits but Go cannot read (a quantity like 1e1.5), or one stored while the
// CRD was looser — is reported as InvalidSpec on the Robot itself, with the
// field named, one Warning, and no retry loop; and it never stops the
// operator from serving every other Robot.
func TestUndecodableRobots(t *testing.T) {
	exclusive(t, "it loosens the Robot CRD's schema, which the validation tests need strict")
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "before", 1))
	waitForRobotReady(t, ns, "before")

	bad := []struct {
		name     string
		spec     []string
		contains []string // what the Synced condition's message must say
	}{
		{"quantity", []string{"image: " + image1, "resources:", "  limits:", "    cpu: 1e1.5"},
			[]string{"spec.resources", "1e1.5"}},
		{"port-string", []string{"image: " + image1, `ports: "http"`},
			[]string{"spec.ports", `"http"`}},
		{"env-not-a-list", []string{"image: " + image1, `env: "A=1"`},
			[]string{"spec.env"}},
	}
	start := time.Now()
	// The schema refuses them all today; the quantity, only since its CEL
	// rule: earlier releases stored it.
	withoutRobotSchema(t, func() {
		for _, b := range bad {
			createRawRobot(t, robotYAML(ns, b.name, b.spec...))
		}
	})

	// Every other Robot is still served: an existing one follows a change,
	// a new one becomes Ready.
	patchRobot(t, ns, "before", `{"spec":{"replicas":2}}`)
	createRobot(t, newRobot(ns, "after", 1))
	waitForRobotReady(t, ns, "after")
	waitForRobotReady(t, ns, "before")

	for _, b := range bad {
		var robot *storedRobot
		eventually(t, convergeTimeout, fmt.Sprintf("Robot %s says its spec cannot be read", b.name), func(ctx context.Context) (bool, string, error) {
			r, err := getStoredRobot(ctx, ns, b.name)
			if err != nil {
				return false, "", err
			}
			robot = r
			synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
			if synced == nil {
				return false, "no Synced condition", nil
			}
			return synced.Status == metav1.ConditionFalse && synced.Reason == robotv1beta1.ReasonInvalidSpec &&
				synced.ObservedGeneration == r.Metadata.Generation, fmt.Sprintf("%+v", *synced), nil
		})
		message := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced).Message
		for _, want := range b.contains {
			if !strings.Contains(message, want) {
				t.Errorf("Robot %s: the Synced message %q does not say %q", b.name, message, want)
			}
		}
		t.Logf("Robot %s: %s", b.name, message)
		waitForEvents(t, ns, robot.Metadata.UID, robotv1beta1.ReasonInvalidSpec, 1)
	}

	// No retry loop: after its status is written, a Robot that cannot be
	// read costs nothing until it changes.
	settled := time.Now()
	time.Sleep(10 * time.Second)
	for _, b := range bad {
		writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: settled, Namespace: ns, Name: b.name})
		if err != nil {
			t.Fatal(err)
		}
		if len(writes) > 0 {
			t.Errorf("Robot %s: %d operator writes in the 10 s after its status was written, want none:\n%v", b.name, len(writes), writes)
		}
		all, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: start, Namespace: ns, Name: b.name})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) > 3 {
			t.Errorf("Robot %s: %d operator writes in all, want at most 3 (its status, retried on a conflict):\n%v", b.name, len(all), all)
		}
		events, err := robotEvents(t.Context(), ns, getStoredRobotUID(t, ns, b.name), robotv1beta1.ReasonInvalidSpec)
		if err != nil {
			t.Fatal(err)
		}
		if n := eventCount(events); n != 1 {
			t.Errorf("Robot %s: %d InvalidSpec events, want 1: %s", b.name, n, summarizeEvents(events))
		}
	}

	// Corrected, it runs.
	for _, b := range bad {
		err := env.robots.RobotV1beta1().RESTClient().Patch(types.MergePatchType).Namespace(ns).Resource("robots").Name(b.name).
			Body([]byte(`{"spec":{"ports":null,"env":null,"resources":null}}`)).Do(t.Context()).Error()
		if err != nil {
			t.Fatalf("correcting Robot %s: %v", b.name, err)
		}
		waitForRobotReady(t, ns, b.name)
	}
}

// getStoredRobotUID returns the UID of a Robot that may not be decodable.
func getStoredRobotUID(t *testing.T, ns, name string) types.UID {
	t.Helper()
	robot, err := getStoredRobot(t.Context(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return robot.Metadata.UID
}
