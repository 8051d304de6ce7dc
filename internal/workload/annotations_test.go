package workload

import (
	"strings"
	"testing"

	policyv1 "k8s.io/api/policy/v1"

	"github.com/robot-operator/robot-operator/internal/robottest"
)

// TestIgnoredAnnotations: the pause annotation on the Robot and the budget
// annotation on its PodDisruptionBudget are reported when they hold a value
// the operator ignores, with a message that names the annotation, the value
// and what is accepted; values it reads, in any case, are not.
func TestIgnoredAnnotations(t *testing.T) {
	robot := robottest.NewRobot("test", 2)
	budget := &policyv1.PodDisruptionBudget{}
	budget.Name = "test"
	if ignored := IgnoredAnnotations(robot, nil); len(ignored) != 0 {
		t.Errorf("no annotations: %v, want none", ignored)
	}
	robot.Annotations = map[string]string{AnnotationPaused: "False"}
	budget.Annotations = map[string]string{AnnotationDisruptionBudget: "Unmanaged"}
	if ignored := IgnoredAnnotations(robot, budget); len(ignored) != 0 {
		t.Errorf("accepted values: %v, want none", ignored)
	}
	robot.Annotations[AnnotationPaused] = "maybe"
	budget.Annotations[AnnotationDisruptionBudget] = "off"
	ignored := IgnoredAnnotations(robot, budget)
	if len(ignored) != 2 {
		t.Fatalf("%v, want both annotations", ignored)
	}
	for i, want := range []string{
		`The Robot's annotation robot.dev/paused is "maybe", which the operator ignores: it reads "true" or "false", in any case; the Robot is not paused`,
		`The PodDisruptionBudget "test"'s annotation robot.dev/disruption-budget is "off", which the operator ignores: it reads "unmanaged" or "managed", in any case`,
	} {
		if message := ignored[i].Message(); !strings.HasPrefix(message, want) {
			t.Errorf("message %q, want it to start with %q", message, want)
		}
	}
}
