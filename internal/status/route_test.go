package status

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/robottest"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// routeOf returns a route of robot attached to the Gateways named, in the
// Robot's namespace, with the Accepted conditions given per Gateway.
func routeOf(robot *robotv1beta1.Robot, generation int64, accepted map[string]metav1.Condition, gateways ...string) *gatewayv1.HTTPRoute {
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: robot.Name, Namespace: robot.Namespace, Generation: generation}}
	for _, name := range gateways {
		route.Spec.ParentRefs = append(route.Spec.ParentRefs, gatewayv1.ParentReference{
			Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptr.To(gatewayv1.Kind("Gateway")),
			Namespace: ptr.To(gatewayv1.Namespace(robot.Namespace)), Name: gatewayv1.ObjectName(name)})
		if c, ok := accepted[name]; ok {
			// As a Gateway controller writes it: the parentRef without
			// the defaults.
			route.Status.Parents = append(route.Status.Parents, gatewayv1.RouteParentStatus{
				ParentRef: gatewayv1.ParentReference{Name: gatewayv1.ObjectName(name)}, Conditions: []metav1.Condition{c}})
		}
	}
	return route
}

// TestRouteAcceptanceIsPartOfReady: a Robot whose workload is Ready is
// Ready only once every Gateway its route attaches to accepted the route,
// for the route's current generation; a Gateway's refusal is told with
// the Gateway's own reason and message.
func TestRouteAcceptanceIsPartOfReady(t *testing.T) {
	robot := robottest.NewRobot("web", 1)
	robot.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "public"}, {Name: "internal"}}}
	deployment := liveDeployment(t, robot)
	now := metav1.NewTime(robottest.FixtureNow)
	yes := metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: 2}
	no := metav1.Condition{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "NotAllowedByListeners", Message: "no listener allows routes from namespace default", ObservedGeneration: 2}
	old := yes
	old.ObservedGeneration = 1
	for _, tt := range []struct {
		name         string
		route        *gatewayv1.HTTPRoute
		syncErr      error
		reason, says string // Ready's reason, and what its message says; "" for Ready
	}{
		{"both accepted", routeOf(robot, 2, map[string]metav1.Condition{"public": yes, "internal": yes}, "public", "internal"), nil, "", ""},
		{"one has not answered", routeOf(robot, 2, map[string]metav1.Condition{"public": yes}, "public", "internal"), nil,
			robotv1beta1.ReasonRouteNotAccepted, "Gateway default/internal has not accepted HTTPRoute \"web\" yet"},
		{"accepted an earlier generation", routeOf(robot, 2, map[string]metav1.Condition{"public": yes, "internal": old}, "public", "internal"), nil,
			robotv1beta1.ReasonRouteNotAccepted, "Gateway default/internal has not accepted"},
		{"refused", routeOf(robot, 2, map[string]metav1.Condition{"public": no, "internal": yes}, "public", "internal"), nil,
			"NotAllowedByListeners", "Gateway default/public does not accept HTTPRoute \"web\": no listener allows routes from namespace default"},
		{"no route yet", nil, nil, robotv1beta1.ReasonRouteNotAccepted, "not there yet"},
		{"no Gateway API", nil, outcome.ErrGatewayAPIMissing, robotv1beta1.ReasonGatewayAPIMissing, "the cluster has no Gateway API"},
		// A route left from before the policy refused it is not the route
		// the Robot asks for, even accepted.
		{"refused by the policy, an earlier route accepted", routeOf(robot, 2, map[string]metav1.Condition{"public": yes, "internal": yes}, "public", "internal"),
			&outcome.NotAllowedError{Reason: robotv1beta1.ReasonRouteNotAllowed, Message: "the operator makes no HTTPRoutes (-http-routes=false)"},
			robotv1beta1.ReasonRouteNotAllowed, "-http-routes=false"},
		{"refused by the policy, no route", nil,
			&outcome.NotAllowedError{Reason: robotv1beta1.ReasonRouteNotAllowed, Message: "spec.http.gateways[0], Gateway infra/public, is not one a route may attach to"},
			robotv1beta1.ReasonRouteNotAllowed, "Gateway infra/public"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, _ := Diagnosed(robot, deployment, nil, nil, nil, nil, now)
			WithRoute(robot, &status, tt.route, nil, tt.syncErr, now)
			ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
			if tt.reason == "" {
				if ready.Status != metav1.ConditionTrue {
					t.Errorf("Ready %s %s %q, want True", ready.Status, ready.Reason, ready.Message)
				}
				return
			}
			if ready.Status != metav1.ConditionFalse || ready.Reason != tt.reason || !contains(ready.Message, tt.says) {
				t.Errorf("Ready %s %s %q, want False %s saying %q", ready.Status, ready.Reason, ready.Message, tt.reason, tt.says)
			}
			// Only a change of the Robot or of the operator's flags lets
			// a refused route through: no waiting will.
			if tt.reason == robotv1beta1.ReasonRouteNotAllowed && !meta.IsStatusConditionTrue(status.Conditions, robotv1beta1.ConditionStalled) {
				t.Errorf("not Stalled with Ready %s: %v", tt.reason, status.Conditions)
			}
			if reconciling, stalled := meta.IsStatusConditionTrue(status.Conditions, robotv1beta1.ConditionReconciling), meta.IsStatusConditionTrue(status.Conditions, robotv1beta1.ConditionStalled); reconciling == stalled {
				t.Errorf("want one of Reconciling and Stalled while Ready is False: %v", status.Conditions)
			}
		})
	}
}

// TestRouteNotAcceptedWritesNothingTwice: a status that says the route is
// not accepted, computed again an hour later with nothing changed, is the
// same status, so that it is not written again.
func TestRouteNotAcceptedWritesNothingTwice(t *testing.T) {
	robot := robottest.NewRobot("web", 1)
	robot.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "public"}}}
	deployment := liveDeployment(t, robot)
	route := routeOf(robot, 1, nil, "public")
	first, _ := Diagnosed(robot, deployment, nil, nil, nil, nil, metav1.NewTime(robottest.FixtureNow))
	WithRoute(robot, &first, route, nil, nil, metav1.NewTime(robottest.FixtureNow))
	robot.Status = first
	later := metav1.NewTime(robottest.FixtureNow.Add(time.Hour))
	second, _ := Diagnosed(robot, deployment, nil, nil, nil, nil, later)
	WithRoute(robot, &second, route, nil, nil, later)
	if got, want := fmt.Sprint(second.Conditions), fmt.Sprint(first.Conditions); got != want {
		t.Errorf("an hour later, nothing changed:\n%s\nwant\n%s", got, want)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
