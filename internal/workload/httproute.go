package workload

import (
	"cmp"
	"fmt"

	"github.com/robot-operator/robot-operator/internal/outcome"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// RouteName is the name of robot's HTTPRoute: its Deployment's.
func RouteName(robot *robotv1beta1.Robot) string { return DeploymentName(robot) }

// WantsRoute reports whether robot asks for an HTTPRoute.
func WantsRoute(robot *robotv1beta1.Robot) bool { return robot.Spec.HTTP != nil }

// routePort returns the port of robot's spec.ports that its route sends
// requests to: the one http.port names, or the first.
func routePort(robot *robotv1beta1.Robot) (robotv1beta1.RobotPort, error) {
	for _, port := range robot.Spec.Ports {
		if robot.Spec.HTTP.Port == "" || port.Name == robot.Spec.HTTP.Port {
			return port, nil
		}
	}
	if robot.Spec.HTTP.Port == "" {
		return robotv1beta1.RobotPort{}, fmt.Errorf("spec.http needs a port in spec.ports to route to")
	}
	return robotv1beta1.RobotPort{}, fmt.Errorf("spec.http.port %q names no port of spec.ports", robot.Spec.HTTP.Port)
}

// NewHTTPRoute returns the HTTPRoute that robot asks for, as the apply
// configuration that the operator applies, or nil when it asks for none.
// The route sends every request for its hostnames and path prefixes to the
// Robot's Service, on the port http.port names. Each field that the Gateway
// API's schema would default is set, as the API server would default it, so
// that what is stored compares equal to what is applied.
func NewHTTPRoute(robot *robotv1beta1.Robot) (*gatewayv1ac.HTTPRouteApplyConfiguration, error) {
	if !WantsRoute(robot) {
		return nil, nil
	}
	if !WantsService(robot) {
		return nil, &outcome.InvalidSpecError{Err: fmt.Errorf("spec.http routes requests to the Robot's Service: set ports, and a service type other than None")}
	}
	port, err := routePort(robot)
	if err != nil {
		return nil, &outcome.InvalidSpecError{Err: err}
	}
	spec := gatewayv1ac.HTTPRouteSpec()
	for _, gateway := range robot.Spec.HTTP.Gateways {
		parent := gatewayv1ac.ParentReference().
			WithGroup(gatewayv1.GroupName).
			WithKind("Gateway").
			WithNamespace(gatewayv1.Namespace(cmp.Or(gateway.Namespace, robot.Namespace))).
			WithName(gatewayv1.ObjectName(gateway.Name))
		if gateway.SectionName != "" {
			parent.WithSectionName(gatewayv1.SectionName(gateway.SectionName))
		}
		spec.WithParentRefs(parent)
	}
	for _, hostname := range robot.Spec.HTTP.Hostnames {
		spec.WithHostnames(gatewayv1.Hostname(hostname))
	}
	rule := gatewayv1ac.HTTPRouteRule()
	prefixes := robot.Spec.HTTP.PathPrefixes
	if len(prefixes) == 0 {
		prefixes = []string{"/"}
	}
	for _, prefix := range prefixes {
		rule.WithMatches(gatewayv1ac.HTTPRouteMatch().
			WithPath(gatewayv1ac.HTTPPathMatch().WithType(gatewayv1.PathMatchPathPrefix).WithValue(prefix)))
	}
	rule.WithBackendRefs(gatewayv1ac.HTTPBackendRef().
		WithGroup("").
		WithKind("Service").
		WithName(gatewayv1.ObjectName(ServiceName(robot))).
		WithPort(robotv1beta1.ServicePort(port)).
		WithWeight(1))
	route := gatewayv1ac.HTTPRoute(RouteName(robot), robot.Namespace).
		WithLabels(ObjectLabels(robot)).
		WithOwnerReferences(controllerReference(robot)).
		WithSpec(spec.WithRules(rule))
	// A hostname or a gateway the Robot no longer lists differs in nothing
	// but the hash.
	if hash, err := specHash(route); err == nil {
		route.WithAnnotations(map[string]string{AnnotationSpecHash: hash})
	}
	return route, nil
}
