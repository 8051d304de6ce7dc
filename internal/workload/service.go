package workload

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/robot-operator/robot-operator/internal/outcome"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// ServiceName is the name of robot's Service: the Deployment's, so that a
// person who knows one knows the other.
func ServiceName(robot *robotv1beta1.Robot) string {
	return DeploymentName(robot)
}

// ValidateServiceName returns an error when robot asks for a Service that
// cannot be: its name is not one a Service may have, or spec.service has a
// field the API server would refuse on a Service (an annotation key, a
// label, a nodePort on a type that opens none). The CRD refuses such a Robot; one stored before those rules
// existed would otherwise send a create that the API server refuses, again
// on every sync. Only the Service is held back: the Deployment does not
// depend on it.
func ValidateServiceName(robot *robotv1beta1.Robot) error {
	if !WantsService(robot) {
		return nil
	}
	name := ServiceName(robot)
	if msgs := validation.IsDNS1035Label(name); len(msgs) > 0 {
		return &outcome.InvalidSpecError{Err: fmt.Errorf("the Service %q cannot be created: a Service's name must be a DNS-1035 label (%s); set spec.deploymentName to such a name, or spec.service.type to None", name, strings.Join(msgs, "; "))}
	}
	if err := robotv1beta1.ValidateService(robot.Spec.Service); err != nil {
		return &outcome.InvalidSpecError{Err: err}
	}
	if err := robotv1beta1.ValidateNodePorts(robot.Spec.Ports, robot.Spec.Service); err != nil {
		return &outcome.InvalidSpecError{Err: err}
	}
	return nil
}

// ServiceType is the type of Service robot asks for, None included.
func ServiceType(robot *robotv1beta1.Robot) robotv1beta1.ServiceType {
	if robot.Spec.Service == nil || robot.Spec.Service.Type == "" {
		// A Robot stored before the field existed has no default in it.
		return robotv1beta1.ServiceTypeClusterIP
	}
	return robot.Spec.Service.Type
}

// WantsService reports whether robot should have a Service: it has a port
// to reach, and does not ask for none.
func WantsService(robot *robotv1beta1.Robot) bool {
	return len(robot.Spec.Ports) > 0 && ServiceType(robot) != robotv1beta1.ServiceTypeNone
}

// controllerReference is the owner reference that makes robot the
// controller of what the operator creates for it, so that the garbage
// collector deletes it with the Robot, and not before whoever deletes the
// Robot in the foreground.
func controllerReference(robot *robotv1beta1.Robot) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(robotv1beta1.SchemeGroupVersion.String()).
		WithKind("Robot").
		WithName(robot.Name).
		WithUID(robot.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// NewService returns the Service that robot asks for, as the apply
// configuration that the operator applies: exactly the fields it owns. It
// returns nil when the Robot should have no Service.
//
// Every field the operator owns is set whatever the Robot says (the type
// too, ClusterIP by default), so that no field the Robot stops asking for
// can be left behind. The API server fills in the rest (clusterIP, ip
// families, session affinity, the node ports the Robot does not set): the
// operator never sets them, so it never fights over them, and a node port
// it does not own is released when the type goes back to ClusterIP.
func NewService(robot *robotv1beta1.Robot) *corev1ac.ServiceApplyConfiguration {
	if !WantsService(robot) {
		return nil
	}
	spec := corev1ac.ServiceSpec().
		WithType(corev1.ServiceType(ServiceType(robot))).
		WithSelector(selectorLabels(robot))
	addTraffic(robot.Spec.Service, spec)
	for _, port := range robot.Spec.Ports {
		// The Service's port number is the port's servicePort, and the
		// container's when it has none, so that a port has one number
		// wherever it is reached unless the Robot says otherwise. The
		// target is the container port's name, which stays right when a
		// pod of an older spec listens on another number during a
		// rollout, and which a change of servicePort leaves as it is.
		servicePort := corev1ac.ServicePort().
			WithName(port.Name).
			WithProtocol(robotv1beta1.PortProtocol(port)).
			WithPort(robotv1beta1.ServicePort(port)).
			WithTargetPort(intstr.FromString(port.Name))
		// A node port the Robot does not set is the API server's to
		// pick, and to keep: the operator never sends one it did not
		// ask for.
		if port.NodePort != 0 {
			servicePort.WithNodePort(port.NodePort)
		}
		spec.WithPorts(servicePort)
	}
	service := corev1ac.Service(ServiceName(robot), robot.Namespace)
	if robot.Spec.Service != nil {
		// The Robot's first, so that the operator's own labels win; the
		// CRD refuses a Robot that sets them anyway.
		service.WithLabels(robot.Spec.Service.Labels).WithAnnotations(robot.Spec.Service.Annotations)
	}
	service.WithLabels(ObjectLabels(robot)).
		WithOwnerReferences(controllerReference(robot)).
		WithSpec(spec)
	// A port, an annotation or a label the Robot no longer has is no
	// field that differs, but the hash is. Strings and numbers alone
	// always marshal, so there is no error to report.
	if hash, err := specHash(service); err == nil {
		service.WithAnnotations(map[string]string{AnnotationSpecHash: hash})
	}
	return service
}

// addTraffic sets on spec the traffic fields robot's Service sets, and only
// those: a field the Robot leaves unset keeps the API server's default
// (Cluster for both policies), which nobody owns, so that the operator never
// applies a value over it.
func addTraffic(service *robotv1beta1.RobotService, spec *corev1ac.ServiceSpecApplyConfiguration) {
	if service == nil {
		return
	}
	if service.ExternalTrafficPolicy != "" {
		spec.WithExternalTrafficPolicy(service.ExternalTrafficPolicy)
	}
	if service.InternalTrafficPolicy != "" {
		spec.WithInternalTrafficPolicy(service.InternalTrafficPolicy)
	}
	if len(service.LoadBalancerSourceRanges) > 0 {
		spec.WithLoadBalancerSourceRanges(service.LoadBalancerSourceRanges...)
	}
	if service.LoadBalancerClass != "" {
		spec.WithLoadBalancerClass(service.LoadBalancerClass)
	}
}
