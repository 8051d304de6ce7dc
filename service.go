package main

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// serviceName is the name of robot's Service: the Deployment's, so that a
// person who knows one knows the other.
func serviceName(robot *robotv1alpha1.Robot) string {
	return deploymentName(robot)
}

// serviceType is the type of Service robot asks for, None included.
func serviceType(robot *robotv1alpha1.Robot) robotv1alpha1.ServiceType {
	if robot.Spec.Service == nil || robot.Spec.Service.Type == "" {
		// A Robot stored before the field existed has no default in it.
		return robotv1alpha1.ServiceTypeClusterIP
	}
	return robot.Spec.Service.Type
}

// wantsService reports whether robot should have a Service: it has a port
// to reach, and does not ask for none.
func wantsService(robot *robotv1alpha1.Robot) bool {
	return robot.Spec.Port != nil && serviceType(robot) != robotv1alpha1.ServiceTypeNone
}

// controllerReference is the owner reference that makes robot the
// controller of what the operator creates for it, so that the garbage
// collector deletes it with the Robot, and not before whoever deletes the
// Robot in the foreground.
func controllerReference(robot *robotv1alpha1.Robot) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(robotv1alpha1.SchemeGroupVersion.String()).
		WithKind("Robot").
		WithName(robot.Name).
		WithUID(robot.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// newService returns the Service that robot asks for, as the apply
// configuration that the operator applies: exactly the fields it owns. It
// returns nil when the Robot should have no Service.
//
// Every field the operator owns is set whatever the Robot says (the type
// too, ClusterIP by default), so that no field the Robot stops asking for
// can be left behind. The API server fills in the rest (clusterIP, ip
// families, session affinity, node ports): the operator never sets them,
// so it never fights over them, and a node port it does not own is released
// when the type goes back to ClusterIP.
func newService(robot *robotv1alpha1.Robot) *corev1ac.ServiceApplyConfiguration {
	if !wantsService(robot) {
		return nil
	}
	port := *robot.Spec.Port
	return corev1ac.Service(serviceName(robot), robot.Namespace).
		WithLabels(objectLabels(robot)).
		WithOwnerReferences(controllerReference(robot)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceType(serviceType(robot))).
			WithSelector(selectorLabels(robot)).
			WithPorts(corev1ac.ServicePort().
				WithName(portName).
				WithProtocol(corev1.ProtocolTCP).
				WithPort(port).
				WithTargetPort(intstr.FromInt32(port))))
}

// serviceDrift says how current differs from desired in the fields that
// desired sets, or returns "" when it does not, compared the way
// server-side apply merges them (a port is found by its port and protocol;
// the selector, atomic, is compared whole). What the API server or another
// writer adds (a node port, a cluster IP, an annotation) does not count.
func serviceDrift(desired *corev1ac.ServiceApplyConfiguration, current *corev1.Service) string {
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
	return describeSpecDrift(desiredSpec, currentSpec)
}

// controlledAs reports whether object's controller reference is want, with
// its blockOwnerDeletion.
func controlledAs(object metav1.Object, want metav1ac.OwnerReferenceApplyConfiguration) bool {
	got := metav1.GetControllerOf(object)
	return got != nil && got.UID == *want.UID && got.APIVersion == *want.APIVersion && got.Kind == *want.Kind &&
		got.Name == *want.Name && ptr.Equal(got.BlockOwnerDeletion, want.BlockOwnerDeletion)
}
