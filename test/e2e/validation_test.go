//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// robotYAML is a Robot manifest with the given name and spec lines (each
// indented under spec:).
func robotYAML(ns, name string, specLines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: robot.dev/v1alpha1\nkind: Robot\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n", name, ns)
	for _, line := range specLines {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	return b.String()
}

// validationMessage is what the API server answered to one bad input.
type validationMessage struct {
	input   string
	message string
}

// TestInvalidRobotsAreRejected: bad input is refused when it is written,
// with a message a person understands, and nothing of it is stored. The
// manifests go through kubectl, as a person would send them, so that 1.5
// really reaches the API server as a number with a fraction. The messages are
// written to _output/validation-messages.md (docs/validation.md shows them).
func TestInvalidRobotsAreRejected(t *testing.T) {
	ns := newNamespace(t)
	var seen []validationMessage
	t.Cleanup(func() { writeValidationMessages(t, seen) })

	creates := []struct {
		input    string // for a person, in the table
		name     string
		spec     []string
		contains []string // what the message must say
	}{
		{"`replicas: -1`", "replicas-negative", []string{"image: " + image1, "replicas: -1"},
			[]string{"spec.replicas", "greater than or equal to 0"}},
		{"`replicas: 1.5`", "replicas-fraction", []string{"image: " + image1, "replicas: 1.5"},
			[]string{"spec.replicas", "must be of type integer"}},
		{"`replicas: 5000`", "replicas-too-many", []string{"image: " + image1, "replicas: 5000"},
			[]string{"spec.replicas", "less than or equal to 1000"}},
		{"`image: \"\"`", "image-empty", []string{`image: ""`},
			[]string{"spec.image", "at least 1 chars long"}},
		{"`image: \"nginx latest\"` (a space)", "image-space", []string{`image: "nginx latest"`},
			[]string{"spec.image", "should match"}},
		{"`deploymentName: Bad_Name`", "bad-deployment-name", []string{"image: " + image1, "deploymentName: Bad_Name"},
			[]string{"spec.deploymentName", "should match"}},
		{"a Robot name of 64 characters", strings.Repeat("r", 64), []string{"image: " + image1},
			[]string{"must be at most 63 characters"}},
	}
	for _, tc := range creates {
		stdout, stderr, err := kubectl(t.Context(), robotYAML(ns, tc.name, tc.spec...), "apply", "-f", "-")
		msg := strings.TrimSpace(stderr)
		seen = append(seen, validationMessage{tc.input, msg})
		if err == nil {
			t.Errorf("%s: kubectl apply succeeded, want it refused: %s", tc.input, stdout)
		}
		for _, want := range tc.contains {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the message does not say %q: %s", tc.input, want, msg)
			}
		}
		if _, err := env.robots.RobotV1alpha1().Robots(ns).Get(t.Context(), tc.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: Robot %s was stored (get: %v), want nothing stored", tc.input, tc.name, err)
		}
	}

	// deploymentName cannot change, nor be added, once the Robot exists.
	updates := []struct {
		input              string
		name               string
		before, after      []string
		wantDeploymentName string
	}{
		{"`deploymentName` changed from `a` to `b`", "renamed",
			[]string{"image: " + image1, "deploymentName: a"}, []string{"image: " + image1, "deploymentName: b"}, "a"},
		{"`deploymentName: b` added to a Robot created without one", "named-later",
			[]string{"image: " + image1}, []string{"image: " + image1, "deploymentName: b"}, ""},
	}
	for _, tc := range updates {
		if _, stderr, err := kubectl(t.Context(), robotYAML(ns, tc.name, tc.before...), "apply", "-f", "-"); err != nil {
			t.Fatalf("creating Robot %s: %v\n%s", tc.name, err, stderr)
		}
		before := getRobot(t, ns, tc.name)
		stdout, stderr, err := kubectl(t.Context(), robotYAML(ns, tc.name, tc.after...), "apply", "-f", "-")
		msg := strings.TrimSpace(stderr)
		seen = append(seen, validationMessage{tc.input, msg})
		if err == nil {
			t.Errorf("%s: kubectl apply succeeded, want it refused: %s", tc.input, stdout)
		}
		if !strings.Contains(msg, "deploymentName is immutable") {
			t.Errorf("%s: the message does not say %q: %s", tc.input, "deploymentName is immutable", msg)
		}
		after := getRobot(t, ns, tc.name)
		if after.Spec.DeploymentName != tc.wantDeploymentName || after.Generation != before.Generation {
			t.Errorf("%s: the Robot changed: deploymentName %q (want %q), generation %d -> %d", tc.input, after.Spec.DeploymentName, tc.wantDeploymentName, before.Generation, after.Generation)
		}
	}
}

// writeValidationMessages writes what the API server answered, as a
// Markdown table, to _output/validation-messages.md.
func writeValidationMessages(t *testing.T, seen []validationMessage) {
	if len(seen) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString("| Input | What the API server answered (kubectl apply's standard error) |\n|---|---|\n")
	for _, m := range seen {
		msg := strings.ReplaceAll(strings.ReplaceAll(m.message, "|", `\|`), "\n", "<br>")
		fmt.Fprintf(&b, "| %s | `%s` |\n", m.input, msg)
	}
	path := filepath.Join(env.root, "_output", "validation-messages.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Errorf("writing %s: %v", path, err)
		return
	}
	t.Logf("wrote the validation messages to %s:\n%s", path, b.String())
}
