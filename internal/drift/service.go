package drift

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/robot-operator/robot-operator/internal/outcome"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// ServiceDrift says how current differs from desired in the fields that
// desired sets, or returns "" when it does not, compared the way
// server-side apply merges them (a port is found by its port and protocol;
// the selector and the source ranges, atomic, are compared whole; a label
// or an annotation by its key). What the API server or another writer adds
// (a node port, a cluster IP, a cloud controller's annotation or label, a
// port) does not count. A port, an annotation or a label the Robot no
// longer has shows as a change of the spec hash annotation, as for the
// Deployment: the apply that follows removes it, the operator's own.
func ServiceDrift(desired *corev1ac.ServiceApplyConfiguration, current *corev1.Service) string {
	return ObjectDrift(desired.ObjectMetaApplyConfiguration, current, func() string { return ServiceSpecDrift(desired, current) })
}

// ServiceSpecDrift says how current's spec differs from desired's, as
// ServiceDrift compares them; "" when it does not.
func ServiceSpecDrift(desired *corev1ac.ServiceApplyConfiguration, current *corev1.Service) string {
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

// LoadBalancerClassChange returns an *outcome.LoadBalancerClassImmutableError
// when applying desired to current would change the loadBalancerClass of a
// LoadBalancer Service, which the API server refuses (it may change only with
// the type, or with a new Service); nil otherwise. It is told from the cache,
// so the refusal costs no request.
//
// A class the Robot does not set is compared only when refusedBefore says
// that the API server refused this spec of the Robot already
// (LoadBalancerClassRefused): the cache cannot tell whose the Service's class
// is. Another writer's (a cloud's admission webhook that gives every load
// balancer one) stays through the operator's applies; the operator's own,
// which the Robot no longer asks for, the apply would remove, and the API
// server refuses that once per spec of the Robot, not on every sync.
func LoadBalancerClassChange(desired *corev1ac.ServiceApplyConfiguration, current *corev1.Service, refusedBefore bool) error {
	if desired.Spec == nil || desired.Spec.Type == nil || *desired.Spec.Type != corev1.ServiceTypeLoadBalancer ||
		current.Spec.Type != corev1.ServiceTypeLoadBalancer || ptr.Equal(desired.Spec.LoadBalancerClass, current.Spec.LoadBalancerClass) ||
		(desired.Spec.LoadBalancerClass == nil && !refusedBefore) {
		return nil
	}
	return &outcome.LoadBalancerClassImmutableError{Namespace: current.Namespace, Service: current.Name,
		Current: ptr.Deref(current.Spec.LoadBalancerClass, ""), Desired: ptr.Deref(desired.Spec.LoadBalancerClass, "")}
}

// LoadBalancerClassRefused returns err, the API server's answer to the apply
// of desired onto current, as an *outcome.LoadBalancerClassImmutableError when
// the API server refused it for changing the Service's loadBalancerClass;
// nil for any other answer.
func LoadBalancerClassRefused(desired *corev1ac.ServiceApplyConfiguration, current *corev1.Service, err error) error {
	// The API server's own answer, unwrapped: the writer's classification
	// of it (an invalid spec) is what this one replaces.
	var status *apierrors.StatusError
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == "spec.loadBalancerClass" && strings.Contains(cause.Message, "may not change once set") {
			var class *string
			if desired.Spec != nil {
				class = desired.Spec.LoadBalancerClass
			}
			return &outcome.LoadBalancerClassImmutableError{Namespace: current.Namespace, Service: current.Name,
				Current: ptr.Deref(current.Spec.LoadBalancerClass, ""), Desired: ptr.Deref(class, ""), Err: status}
		}
	}
	return nil
}

// NodePortRefused returns err, the API server's answer to a create or an
// apply of robot's Service, as an *outcome.InvalidSpecError that names the
// Robot's field when the API server refused a nodePort that the Robot sets:
// one out of the cluster's node port range, which only the API server
// knows, or one another Service holds. It returns nil for any other answer.
func NodePortRefused(robot *robotv1beta1.Robot, err error) error {
	var status *apierrors.StatusError
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	for _, cause := range status.Status().Details.Causes {
		if !strings.HasPrefix(cause.Field, "spec.ports[") || !strings.HasSuffix(cause.Field, "].nodePort") {
			continue
		}
		// The Service's ports are in the Robot's order only while no
		// other writer adds one: the port is found by its number.
		for i, port := range robot.Spec.Ports {
			if port.NodePort == 0 {
				continue
			}
			if detail, ok := strings.CutPrefix(cause.Message, fmt.Sprintf("Invalid value: %d: ", port.NodePort)); ok {
				return &outcome.InvalidSpecError{Err: fmt.Errorf("spec.ports[%d].nodePort %d: the API server refuses it on the Service %q: %s",
					i, port.NodePort, status.Status().Details.Name, detail)}
			}
		}
	}
	return nil
}
