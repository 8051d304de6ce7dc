package status

import (
	"errors"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/robottest"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// wantStalled fails t unless status says Ready=False with reason, and
// Stalled=True (Reconciling=False) with the same reason: kstatus reads it as
// Failed, not as InProgress forever.
func wantStalled(t *testing.T, status robotv1beta1.RobotStatus, reason string) {
	t.Helper()
	ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != reason {
		t.Errorf("Ready %v, want False with reason %s", ready, reason)
	}
	stalled := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionStalled)
	if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != reason {
		t.Errorf("Stalled %v, want True with reason %s", stalled, reason)
	}
	if meta.IsStatusConditionTrue(status.Conditions, robotv1beta1.ConditionReconciling) {
		t.Errorf("Reconciling True while the Robot waits on a person: %v", status.Conditions)
	}
}

// TestHeldByAPersonIsStalled: a Robot whose Deployment runs, but a part of
// which (its Service, its budget) the operator may not or cannot make until
// a person acts, is not Ready=True RolloutComplete as if all were well: it
// is Ready=False with the Synced reason, and Stalled.
func TestHeldByAPersonIsStalled(t *testing.T) {
	robot := robottest.NewRobot("web", 1)
	deployment := liveDeployment(t, robot)
	now := metav1.NewTime(robottest.FixtureNow)
	for _, tt := range []struct {
		reason  string
		syncErr error
	}{
		{robotv1beta1.ReasonServiceNameTaken, &outcome.NameTakenError{Kind: "Service", Name: "web", Owner: "Robot/other", Reason: robotv1beta1.ReasonServiceNameTaken}},
		{robotv1beta1.ReasonServiceTypeNotAllowed, &outcome.ServiceTypeNotAllowedError{Type: robotv1beta1.ServiceTypeNodePort, Allowed: []robotv1beta1.ServiceType{robotv1beta1.ServiceTypeClusterIP}}},
		{robotv1beta1.ReasonServiceMetadataNotAllowed, &outcome.NotAllowedError{Reason: robotv1beta1.ReasonServiceMetadataNotAllowed, Message: "service.annotations key a/b is not allowed"}},
		{robotv1beta1.ReasonLoadBalancerClassNotAllowed, &outcome.NotAllowedError{Reason: robotv1beta1.ReasonLoadBalancerClassNotAllowed, Message: "class c is not allowed"}},
		{robotv1beta1.ReasonDisruptionBudgetNameTaken, &outcome.NameTakenError{Kind: "PodDisruptionBudget", Name: "web", Reason: robotv1beta1.ReasonDisruptionBudgetNameTaken, Hint: "or remove spec.disruptionBudget"}},
		{robotv1beta1.ReasonDisruptionBudgetNotAllowed, &outcome.NotAllowedError{Reason: robotv1beta1.ReasonDisruptionBudgetNotAllowed, Message: "-disruption-budgets=off"}},
	} {
		t.Run(tt.reason, func(t *testing.T) {
			status, _ := Diagnosed(robot, deployment, nil, nil, nil, tt.syncErr, now)
			wantStalled(t, status, tt.reason)
			ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
			if ready.Message != tt.syncErr.Error() {
				t.Errorf("Ready message %q, want the sync's %q", ready.Message, tt.syncErr.Error())
			}

			// Computed again an hour later, nothing changed: the same
			// status, so that nothing is written.
			again := robot.DeepCopy()
			again.Status = status
			later, _ := Diagnosed(again, deployment, nil, nil, nil, tt.syncErr, metav1.NewTime(now.Add(time.Hour)))
			if !equalConditions(later.Conditions, status.Conditions) {
				t.Errorf("an hour later:\n%v\nwant\n%v", later.Conditions, status.Conditions)
			}
		})
	}

	// A retried failure of a Service write is not a person's to fix: the
	// running Robot stays Ready.
	status, _ := Diagnosed(robot, deployment, nil, nil, nil, errors.New("etcd timeout"), now)
	if !meta.IsStatusConditionTrue(status.Conditions, robotv1beta1.ConditionReady) {
		t.Errorf("Ready %v after a transient failure, want True", meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady))
	}
}

// TestGracePeriodNotAllowedIsStalled: a Robot refused its Deployment by the
// policy waits on a person, like one refused its route.
func TestGracePeriodNotAllowedIsStalled(t *testing.T) {
	robot := robottest.NewRobot("web", 1)
	syncErr := &outcome.NotAllowedError{Reason: robotv1beta1.ReasonGracePeriodNotAllowed, Message: "terminationGracePeriodSeconds 600 is above -max-termination-grace-period"}
	status, _ := Diagnosed(robot, nil, nil, nil, nil, syncErr, metav1.NewTime(robottest.FixtureNow))
	wantStalled(t, status, robotv1beta1.ReasonGracePeriodNotAllowed)
}

// TestRouteHeldByAPersonIsStalled: a route a Gateway refuses, a route name
// someone else holds, or a cluster with no Gateway API each wait on a
// person: Stalled, not Reconciling forever. A Gateway whose answer is
// Pending has not answered yet.
func TestRouteHeldByAPersonIsStalled(t *testing.T) {
	robot := robottest.NewRobot("web", 1)
	robot.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "public"}}}
	deployment := liveDeployment(t, robot)
	now := metav1.NewTime(robottest.FixtureNow)
	refused := metav1.Condition{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "NotAllowedByListeners", Message: "no listener allows routes from namespace default", ObservedGeneration: 1}
	pending := metav1.Condition{Type: "Accepted", Status: metav1.ConditionFalse, Reason: string(gatewayv1.RouteReasonPending), ObservedGeneration: 1}
	for _, tt := range []struct {
		name    string
		route   *gatewayv1.HTTPRoute
		syncErr error
		reason  string
		stalled bool
	}{
		{"refused by its Gateway", routeOf(robot, 1, map[string]metav1.Condition{"public": refused}, "public"), nil, "NotAllowedByListeners", true},
		{"no Gateway API", nil, outcome.ErrGatewayAPIMissing, robotv1beta1.ReasonGatewayAPIMissing, true},
		{"route name taken", nil, &outcome.NameTakenError{Kind: "HTTPRoute", Name: "web", Owner: "Robot/other", Reason: robotv1beta1.ReasonRouteNameTaken, Hint: "or remove spec.http"},
			robotv1beta1.ReasonRouteNameTaken, true},
		{"pending", routeOf(robot, 1, map[string]metav1.Condition{"public": pending}, "public"), nil, string(gatewayv1.RouteReasonPending), false},
		{"not answered", routeOf(robot, 1, nil, "public"), nil, robotv1beta1.ReasonRouteNotAccepted, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, _ := Diagnosed(robot, deployment, nil, nil, nil, tt.syncErr, now)
			WithRoute(robot, &status, tt.route, nil, tt.syncErr, now)
			if tt.stalled {
				wantStalled(t, status, tt.reason)
				return
			}
			ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
			if ready.Status != metav1.ConditionFalse || ready.Reason != tt.reason {
				t.Errorf("Ready %s %s, want False %s", ready.Status, ready.Reason, tt.reason)
			}
			if !meta.IsStatusConditionTrue(status.Conditions, robotv1beta1.ConditionReconciling) || meta.IsStatusConditionTrue(status.Conditions, robotv1beta1.ConditionStalled) {
				t.Errorf("want Reconciling, not Stalled, while the Gateway has not answered: %v", status.Conditions)
			}
		})
	}
}

func equalConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].LastTransitionTime.Equal(&b[i].LastTransitionTime) {
			return false
		}
		x, y := a[i], b[i]
		x.LastTransitionTime, y.LastTransitionTime = metav1.Time{}, metav1.Time{}
		if x != y {
			return false
		}
	}
	return true
}

// TestGatewayNotFoundIsStalled: a route whose Gateway does not exist is
// answered by no controller: the Robot names the Gateway, Stalled. Only
// when the lookup knows: a lookup that cannot tell, or a Gateway that
// exists, leaves the Robot waiting for the answer.
func TestGatewayNotFoundIsStalled(t *testing.T) {
	robot := robottest.NewRobot("web", 1)
	robot.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "public"}}}
	deployment := liveDeployment(t, robot)
	now := metav1.NewTime(robottest.FixtureNow)
	route := routeOf(robot, 1, nil, "public")
	lookup := func(exists, known bool) GatewayLookup {
		return func(namespace, name string) (bool, bool) {
			if namespace != "default" || name != "public" {
				t.Errorf("looked up Gateway %s/%s, want default/public", namespace, name)
			}
			return exists, known
		}
	}

	status, _ := Diagnosed(robot, deployment, nil, nil, nil, nil, now)
	WithRoute(robot, &status, route, lookup(false, true), nil, now)
	wantStalled(t, status, robotv1beta1.ReasonGatewayNotFound)
	if ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady); !contains(ready.Message, "Gateway default/public does not exist") {
		t.Errorf("Ready message %q, want the Gateway named", ready.Message)
	}

	for name, gateways := range map[string]GatewayLookup{"cannot tell": lookup(false, false), "exists": lookup(true, true), "no lookup": nil} {
		status, _ := Diagnosed(robot, deployment, nil, nil, nil, nil, now)
		WithRoute(robot, &status, route, gateways, nil, now)
		if ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady); ready.Reason != robotv1beta1.ReasonRouteNotAccepted {
			t.Errorf("%s: Ready %s %q, want %s", name, ready.Reason, ready.Message, robotv1beta1.ReasonRouteNotAccepted)
		}
	}

	// A Gateway that answered exists, whatever a lagging cache says.
	yes := metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: 1}
	status, _ = Diagnosed(robot, deployment, nil, nil, nil, nil, now)
	WithRoute(robot, &status, routeOf(robot, 1, map[string]metav1.Condition{"public": yes}, "public"), lookup(false, true), nil, now)
	if !meta.IsStatusConditionTrue(status.Conditions, robotv1beta1.ConditionReady) {
		t.Errorf("Ready %v with the route accepted, want True", meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady))
	}
}
