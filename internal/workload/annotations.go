package workload

import (
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// IgnoredAnnotation is an annotation the operator reads that holds a value
// it does not know, and so ignores. The shipped admission policy refuses
// such values; a Robot may still hold one, set before the policy was
// installed or where it is not, and the operator then says so.
type IgnoredAnnotation struct {
	// Object is the object that carries it: "Robot", or the owned object's
	// kind and name.
	Object string
	Key    string
	Value  string
	// Accepted lists the values the operator reads, quoted.
	Accepted string
	// Effect is what the operator does instead.
	Effect string
}

// Message is the Warning's message about a.
func (a IgnoredAnnotation) Message() string {
	return fmt.Sprintf("The %s's annotation %s is %q, which the operator ignores: it reads %s, in any case; %s",
		a.Object, a.Key, a.Value, a.Accepted, a.Effect)
}

// IgnoredAnnotations returns the annotations of robot, and of budget, its
// disruption budget (nil, or a nil pointer, when it has none), whose values
// the operator ignores.
func IgnoredAnnotations(robot *robotv1beta1.Robot, budget metav1.Object) []IgnoredAnnotation {
	var ignored []IgnoredAnnotation
	if value, ok := PauseIgnored(robot); ok {
		ignored = append(ignored, IgnoredAnnotation{
			Object: "Robot", Key: AnnotationPaused, Value: value, Accepted: quoted(PauseValues),
			Effect: "the Robot is not paused",
		})
	}
	if budget != nil && !reflect.ValueOf(budget).IsNil() {
		if value, ok := DisruptionBudgetIgnored(budget); ok {
			ignored = append(ignored, IgnoredAnnotation{
				Object: fmt.Sprintf("PodDisruptionBudget %q", budget.GetName()), Key: AnnotationDisruptionBudget, Value: value,
				Accepted: quoted(DisruptionBudgetValues),
				Effect:   "the operator keeps the budget as the Robot asks",
			})
		}
	}
	return ignored
}

// quoted lists values as `"a" or "b"`.
func quoted(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, " or ")
}
