package drift

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayapply "sigs.k8s.io/gateway-api/applyconfiguration"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"
)

// routeTypes compares HTTPRoutes by the Gateway API's schema, as
// server-side apply merges them.
var routeTypes = func() managedfields.TypeConverter {
	scheme := runtime.NewScheme()
	utilruntime.Must(gatewayv1.Install(scheme))
	return gatewayapply.NewTypeConverter(scheme)
}()

// RouteSpecDrift says how current's spec differs from desired's in the
// fields that desired sets, or returns "" when it does not, compared the
// way server-side apply merges them by the Gateway API's schema, as
// ServiceSpecDrift does for a Service. ObjectDrift tells the rest.
func RouteSpecDrift(desired *gatewayv1ac.HTTPRouteApplyConfiguration, current *gatewayv1.HTTPRoute) string {
	desiredSpec := &gatewayv1ac.HTTPRouteApplyConfiguration{TypeMetaApplyConfiguration: desired.TypeMetaApplyConfiguration, Spec: desired.Spec}
	currentSpec := &gatewayv1.HTTPRoute{
		TypeMeta: metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "HTTPRoute"},
		Spec:     current.Spec,
	}
	return describeSpecDriftWith(routeTypes, desiredSpec, currentSpec)
}
