package drift

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// ObjectDrift says how current, an object a Robot owns beside its
// Deployment, differs from desired, desired's metadata, or returns "" when
// it does not: its labels, its controller reference, its spec as specDrift
// tells, then its annotations, in that order. Every such kind is compared
// the same way but for its spec, which is all a kind gives.
func ObjectDrift(desired *metav1ac.ObjectMetaApplyConfiguration, current metav1.Object, specDrift func() string) string {
	if key, ok := missingFrom(desired.Labels, current.GetLabels()); !ok {
		return describeMapDrift("metadata.labels", key, desired.Labels, current.GetLabels())
	}
	if !controlledAs(current, desired.OwnerReferences[0]) {
		return "its controller reference changed"
	}
	if drift := specDrift(); drift != "" {
		return drift
	}
	return annotationDrift(desired.Annotations, current.GetAnnotations())
}
