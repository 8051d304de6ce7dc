//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// annotationPolicy is the ValidatingAdmissionPolicy of
// artifacts/deploy/annotation-policy.yaml, and its binding's name.
const annotationPolicy = "robot-operator-annotations"

// TestAnnotationPolicy: the shipped policy, which TestMain applied with
// artifacts/deploy, is accepted by the API server without a warning;
// `kubectl annotate robot web robot.dev/paused=maybe` is refused with a
// message that names the annotation and the values the operator reads, and
// =True is accepted and pauses the Robot. On its PodDisruptionBudget,
// robot.dev/disruption-budget=off is refused and =Unmanaged accepted.
func TestAnnotationPolicy(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	if status := mustKubectl(t, "get", "validatingadmissionpolicy", annotationPolicy, "-o", "jsonpath={.status}"); strings.Contains(status, "expressionWarnings") {
		t.Errorf("the API server's type check of %s warns: %s", annotationPolicy, status)
	}
	createRobot(t, newRobot(ns, "web", 2))
	waitForRobotReady(t, ns, "web")

	for _, tt := range []struct {
		kind, annotation, value string
		accepted                []string
	}{
		{"robot/web", pausedAnnotation, "maybe", []string{`"true" or "false"`}},
		{"robot/web", pausedAnnotation, "yes", []string{`"true" or "false"`}},
		{"poddisruptionbudget/web", "robot.dev/disruption-budget", "off", []string{`"unmanaged" or "managed"`}},
	} {
		_, stderr, err := kubectl(t.Context(), "", "annotate", "-n", ns, tt.kind, tt.annotation+"="+tt.value)
		if err == nil {
			t.Errorf("kubectl annotate %s %s=%s: accepted, want it refused", tt.kind, tt.annotation, tt.value)
			continue
		}
		for _, want := range append([]string{annotationPolicy, tt.annotation, `"` + tt.value + `"`}, tt.accepted...) {
			if !strings.Contains(stderr, want) {
				t.Errorf("kubectl annotate %s %s=%s: %q does not name %s", tt.kind, tt.annotation, tt.value, stderr, want)
			}
		}
	}

	mustKubectl(t, "annotate", "-n", ns, "poddisruptionbudget/web", "robot.dev/disruption-budget=Unmanaged")
	mustKubectl(t, "annotate", "-n", ns, "robot/web", pausedAnnotation+"=True")
	robot := waitForRobot(t, ns, "web", convergeTimeout, `says it is paused by "True"`, reportsPaused)
	if events, err := robotEvents(t.Context(), ns, robot.UID, robotv1beta1.ReasonAnnotationIgnored); err != nil || len(events) != 0 {
		t.Errorf("%s events about a Robot whose annotations all hold values read: %s, %v", robotv1beta1.ReasonAnnotationIgnored, summarizeEvents(events), err)
	}
}

// TestIgnoredAnnotationIsWarned: a Robot that holds a value of
// robot.dev/paused the operator ignores (stored while the policy was
// unbound) gets one Warning that says so, however often it is synced, and
// is not paused; with the policy bound again, a new unknown value is
// refused, and an update that leaves the value as it was passes, so that
// the Robot can still be changed.
func TestIgnoredAnnotationIsWarned(t *testing.T) {
	exclusive(t, "it unbinds the cluster-wide annotation policy to store a value that the policy refuses")
	ns := newNamespace(t)
	robot := createRobot(t, newRobot(ns, "web", 1))
	waitForRobotReady(t, ns, "web")

	policyFile := filepath.Join(env.root, "artifacts", "deploy", "annotation-policy.yaml")
	mustKubectl(t, "delete", "validatingadmissionpolicybinding", annotationPolicy)
	rebind := func() {
		if _, stderr, err := kubectl(context.Background(), "", "apply", "-f", policyFile); err != nil {
			t.Errorf("binding the annotation policy again: %v\n%s", err, stderr)
		}
	}
	t.Cleanup(rebind)
	// The binding's removal reaches the API server's admission a moment
	// later.
	eventually(t, 30*time.Second, "the value is stored", func(ctx context.Context) (bool, string, error) {
		_, stderr, err := kubectl(ctx, "", "annotate", "-n", ns, "robot/web", pausedAnnotation+"=maybe")
		return err == nil, stderr, nil
	})
	events := waitForEvents(t, ns, robot.UID, robotv1beta1.ReasonAnnotationIgnored, 1)
	if events[0].Type != corev1.EventTypeWarning || !strings.Contains(events[0].Message, `robot.dev/paused is "maybe"`) || !strings.Contains(events[0].Message, `"true" or "false"`) {
		t.Errorf("the event: %s, want a Warning naming the annotation, its value and the values read", summarizeEvents(events))
	}

	// More syncs: a spec change, a label.
	patchRobot(t, ns, "web", `{"spec":{"replicas":2}}`)
	waitForDeployment(t, ns, "web", "follows the Robot, which is not paused", func(d *appsv1.Deployment) bool { return ptr.Deref(d.Spec.Replicas, 1) == 2 })
	rebind()
	eventually(t, 30*time.Second, "the policy, bound again, refuses a new unknown value", func(ctx context.Context) (bool, string, error) {
		_, stderr, err := kubectl(ctx, "", "annotate", "-n", ns, "robot/web", pausedAnnotation+"=no", "--overwrite", "--dry-run=server")
		return err != nil && strings.Contains(stderr, annotationPolicy), stderr, nil
	})
	mustKubectl(t, "label", "-n", ns, "robot/web", "example.com/team=web")
	waitForRobotReady(t, ns, "web")
	if events, err := robotEvents(t.Context(), ns, robot.UID, robotv1beta1.ReasonAnnotationIgnored); err != nil || eventCount(events) != 1 {
		t.Errorf("after more syncs: %s, %v; want the one Warning", summarizeEvents(events), err)
	}
}
