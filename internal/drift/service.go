package drift

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
)

// ServiceDrift says how current differs from desired in the fields that
// desired sets, or returns "" when it does not, compared the way
// server-side apply merges them (a port is found by its port and protocol;
// the selector, atomic, is compared whole). What the API server or another
// writer adds (a node port, a cluster IP, an annotation, a port) does not
// count. A port the Robot no longer has shows as a change of the spec hash
// annotation, as for the Deployment.
func ServiceDrift(desired *corev1ac.ServiceApplyConfiguration, current *corev1.Service) string {
	if key, ok := missingFrom(desired.Labels, current.Labels); !ok {
		return describeMapDrift("metadata.labels", key, desired.Labels, current.Labels)
	}
	if !controlledAs(current, desired.OwnerReferences[0]) {
		return "its controller reference changed"
	}
	desiredSpec := &corev1ac.ServiceApplyConfiguration{TypeMetaApplyConfiguration: desired.TypeMetaApplyConfiguration, Spec: desired.Spec}
	currentSpec := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Service"},
		Spec:     current.Spec,
	}
	if drift := describeSpecDrift(desiredSpec, currentSpec); drift != "" {
		return drift
	}
	return annotationDrift(desired.Annotations, current.Annotations)
}

// controlledAs reports whether object's controller reference is want, with
// its blockOwnerDeletion.
func controlledAs(object metav1.Object, want metav1ac.OwnerReferenceApplyConfiguration) bool {
	got := metav1.GetControllerOf(object)
	return got != nil && got.UID == *want.UID && got.APIVersion == *want.APIVersion && got.Kind == *want.Kind &&
		got.Name == *want.Name && ptr.Equal(got.BlockOwnerDeletion, want.BlockOwnerDeletion)
}
