package workload

import (
	"strings"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// AnnotationDisruptionBudget on a Robot's PodDisruptionBudget, with the
// value DisruptionBudgetUnmanaged, takes that budget out of the operator's
// hands: the operator no longer puts it back nor deletes it, so that an
// administrator can loosen the budget that holds a node's drain. It is on
// the budget, not on the Robot, because it is what whoever may edit the
// budget decides; the Robot's author decides through spec.disruptionBudget.
const AnnotationDisruptionBudget = "robot.dev/disruption-budget"

// DisruptionBudgetUnmanaged is the value of AnnotationDisruptionBudget that
// takes a budget out of the operator's hands.
const DisruptionBudgetUnmanaged = "unmanaged"

// DisruptionBudgetValues are the values of AnnotationDisruptionBudget the
// operator reads, in any case: "managed" hands a budget back, as removing
// the annotation does.
var DisruptionBudgetValues = []string{DisruptionBudgetUnmanaged, "managed"}

// DisruptionBudgetReleased reports whether budget is annotated as out of
// the operator's hands: "unmanaged", in any case.
func DisruptionBudgetReleased(budget *policyv1.PodDisruptionBudget) bool {
	return strings.EqualFold(budget.Annotations[AnnotationDisruptionBudget], DisruptionBudgetUnmanaged)
}

// DisruptionBudgetIgnored returns the value of budget's annotation
// robot.dev/disruption-budget when it is none of DisruptionBudgetValues
// (in any case), and so is ignored.
func DisruptionBudgetIgnored(budget metav1.Object) (string, bool) {
	value, ok := budget.GetAnnotations()[AnnotationDisruptionBudget]
	return value, ok && !oneOfFold(value, DisruptionBudgetValues)
}

// DisruptionBudgetName is the name of robot's PodDisruptionBudget: its
// Deployment's.
func DisruptionBudgetName(robot *robotv1beta1.Robot) string { return DeploymentName(robot) }

// disruptionBudgetMaxUnavailable returns how many of robot's pods a drain
// may evict at once, and false when the Robot gets no budget: it asks for
// none, or it leaves the budget to the default and has fewer than 2
// replicas, where a budget would block every drain.
func disruptionBudgetMaxUnavailable(robot *robotv1beta1.Robot) (intstr.IntOrString, bool) {
	budget := robot.Spec.DisruptionBudget
	switch {
	case budget != nil && budget.Disabled:
		return intstr.IntOrString{}, false
	case budget != nil && budget.MaxUnavailable != nil:
		return *budget.MaxUnavailable, true
	case ptr.Deref(robot.Spec.Replicas, 1) < 2:
		return intstr.IntOrString{}, false
	}
	return intstr.FromInt32(1), true
}

// WantsDisruptionBudget reports whether robot gets a PodDisruptionBudget.
func WantsDisruptionBudget(robot *robotv1beta1.Robot) bool {
	_, wants := disruptionBudgetMaxUnavailable(robot)
	return wants
}

// NewDisruptionBudget returns the PodDisruptionBudget that robot asks for,
// as the apply configuration the operator applies, or nil when the Robot
// gets none. It selects exactly the Robot's pods, as its Deployment does.
// A pod that is not ready may always be evicted (AlwaysAllow): a
// crash-looping pod, which serves nothing, must not block a drain, and the
// default policy lets it only while the budget has room.
func NewDisruptionBudget(robot *robotv1beta1.Robot) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	maxUnavailable, wants := disruptionBudgetMaxUnavailable(robot)
	if !wants {
		return nil
	}
	budget := policyv1ac.PodDisruptionBudget(DisruptionBudgetName(robot), robot.Namespace).
		WithLabels(ObjectLabels(robot)).
		WithOwnerReferences(controllerReference(robot)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(robot))).
			WithMaxUnavailable(maxUnavailable).
			WithUnhealthyPodEvictionPolicy(policyv1.AlwaysAllow))
	// A field the Robot no longer sets differs in nothing but the hash.
	if hash, err := specHash(budget); err == nil {
		budget.WithAnnotations(map[string]string{AnnotationSpecHash: hash})
	}
	return budget
}
