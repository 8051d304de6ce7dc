package owned

import (
	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"

	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions/apis/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// The reasons of the Events that announce the writes of a Robot's
// HTTPRoute.
const (
	// EventRouteUpdated: the operator changed a Robot's HTTPRoute to match
	// the Robot.
	EventRouteUpdated = "RouteUpdated"
	// EventRouteDeleted: the operator deleted a Robot's HTTPRoute, which
	// the Robot no longer asks for.
	EventRouteDeleted = "RouteDeleted"
)

// RoutePath is the path of a Robot's HTTPRoute.
type RoutePath = Path[*gatewayv1.HTTPRoute, *gatewayv1ac.HTTPRouteApplyConfiguration]

// Routes returns the path of the HTTPRoute that exposes a Robot over HTTP
// through the Gateway API, cached by informer (which should hold only the
// routes the operator manages) and written through gateway. Until
// found says the Gateway API is there, a Robot that asks for a route
// gets none, and says why. A Robot whose route the policy refuses gets none
// written either: a route it has is left as it is, neither changed to the
// refused spec nor deleted, so that traffic is never cut unannounced.
func Routes(deps Deps, informer gatewayinformers.HTTPRouteInformer, gateway gatewayclient.Interface, found *Discovery, allowed policy.Policy) (*RoutePath, error) {
	lister := informer.Lister()
	return New(deps, Kind[*gatewayv1.HTTPRoute, *gatewayv1ac.HTTPRouteApplyConfiguration]{
		Name: "HTTPRoute",
		Client: func(namespace string) writer.Client[*gatewayv1.HTTPRoute, *gatewayv1ac.HTTPRouteApplyConfiguration] {
			return gateway.GatewayV1().HTTPRoutes(namespace)
		},
		Updated: EventRouteUpdated,
		Deleted: EventRouteDeleted,
		Meta: func(desired *gatewayv1ac.HTTPRouteApplyConfiguration) *metav1ac.ObjectMetaApplyConfiguration {
			return desired.ObjectMetaApplyConfiguration
		},
		SpecDrift:  drift.RouteSpecDrift,
		Wants:      workload.WantsRoute,
		Hold:       allowed.CheckRoute,
		ObjectName: workload.RouteName,
		Desired:    workload.NewHTTPRoute,
		Cached: func(namespace, name string) (*gatewayv1.HTTPRoute, error) {
			return lister.HTTPRoutes(namespace).Get(name)
		},
		NameTaken:     robotv1beta1.ReasonRouteNameTaken,
		NameTakenHint: "or remove spec.http",
		Contested:     robotv1beta1.ReasonRouteContested,
		// The Gateway API's CRDs may be installed after the operator, or
		// never.
		Optional: &Optional{CRD: RoutesCRD, Version: "v1", Missing: outcome.ErrGatewayAPIMissing, Found: found},
	}, informer.Informer())
}

// RoutesCRD is the CRD of the Gateway API's HTTPRoutes.
const RoutesCRD = "httproutes.gateway.networking.k8s.io"

// listRoutes is the HTTPRoute's entry in the list of kinds. Without the
// Gateway API's sources (in tests), a Robot that asks for a route is told
// that the cluster has no Gateway API.
func listRoutes(p *Paths, sources Sources) (ownedKind, error) {
	if sources.GatewayInformers == nil || sources.APIs == nil {
		return missing{wants: workload.WantsRoute, err: outcome.ErrGatewayAPIMissing}, nil
	}
	informer := sources.GatewayInformers.Gateway().V1().HTTPRoutes()
	path, err := Routes(p.deps, informer, sources.Gateway, sources.APIs.Found(RoutesCRD), sources.Policy)
	return listed(p, sources, path, err, informer.Informer(), "written_routes")
}

// Route returns the Robot's HTTPRoute: nil when it has none it controls.
func (o Objects) Route() *gatewayv1.HTTPRoute { return objectOf[*gatewayv1.HTTPRoute](o, "HTTPRoute") }
