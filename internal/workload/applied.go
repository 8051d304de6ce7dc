package workload

import (
	"strconv"
	"strings"

	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

const (
	// AnnotationGeneration records, on the Deployment, the Robot's
	// generation when the operator last created or applied it. A pod
	// template that the operator would change while the Robot's generation
	// is the one recorded changes for a reason other than the Robot's spec
	// (a new default of the operator, say): such a change rolls under the
	// fleet budget, and a change of the spec never waits.
	AnnotationGeneration = "robot.dev/generation"
	// AnnotationBudgetedRollout, "true" on the Deployment, says that the
	// operator's last apply was a change that did not come from the
	// Robot's spec, rolled under the fleet budget: while its rollout runs,
	// the Robot holds one of the budget's slots, which a restarted
	// operator counts again from its cache. The next apply drops it.
	AnnotationBudgetedRollout = "robot.dev/budgeted-rollout"
)

// releaseTemplateAnnotation, when set as key=value, is one more annotation
// of every Robot's pod template. No release sets it: the end-to-end test of
// the fleet budget builds the operator with it (-ldflags -X), to stand for a
// release whose new default changes the pod template of every Robot.
var releaseTemplateAnnotation string

// addReleaseTemplateAnnotation puts releaseTemplateAnnotation, when set, on
// template.
func addReleaseTemplateAnnotation(template *corev1ac.PodTemplateSpecApplyConfiguration) {
	if key, value, ok := strings.Cut(releaseTemplateAnnotation, "="); ok && key != "" {
		template.WithAnnotations(map[string]string{key: value})
	}
}

// Stamped returns desired, robot's Deployment, with the annotation that
// records the Robot's generation: what the operator creates and applies.
// The stamp is no part of the spec hash, nor of what is compared for drift
// (Unstamped): a new generation that asks for the same Deployment writes
// nothing.
func Stamped(desired *appsv1ac.DeploymentApplyConfiguration, robot *robotv1beta1.Robot) *appsv1ac.DeploymentApplyConfiguration {
	return desired.WithAnnotations(map[string]string{AnnotationGeneration: strconv.FormatInt(robot.Generation, 10)})
}

// Unstamped returns a copy of desired's metadata without the annotations
// that record how the Deployment was written (AnnotationGeneration,
// AnnotationBudgetedRollout): what is compared with the Deployment as it is.
func Unstamped(desired *appsv1ac.DeploymentApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	_, generation := desired.Annotations[AnnotationGeneration]
	_, budgeted := desired.Annotations[AnnotationBudgetedRollout]
	if !generation && !budgeted {
		return desired
	}
	// The metadata is a pointer the copy would share: it is copied too.
	out, meta := *desired, *desired.ObjectMetaApplyConfiguration
	out.ObjectMetaApplyConfiguration = &meta
	out.Annotations = make(map[string]string, len(desired.Annotations))
	for key, value := range desired.Annotations {
		if key != AnnotationGeneration && key != AnnotationBudgetedRollout {
			out.Annotations[key] = value
		}
	}
	return &out
}

// MarkBudgeted returns desired marked as a change rolled under the fleet
// budget (AnnotationBudgetedRollout).
func MarkBudgeted(desired *appsv1ac.DeploymentApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	return desired.WithAnnotations(map[string]string{AnnotationBudgetedRollout: "true"})
}

// AppliedGeneration returns the Robot's generation that the annotations of
// its Deployment say the operator last wrote it for; false when they say
// none (a Deployment of an earlier release, or one whose annotation someone
// removed).
func AppliedGeneration(annotations map[string]string) (int64, bool) {
	generation, err := strconv.ParseInt(annotations[AnnotationGeneration], 10, 64)
	return generation, err == nil
}
