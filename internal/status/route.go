package status

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/workload"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// WithRoute makes status, Diagnosed's for robot, say Ready=False while the
// HTTPRoute robot asks for is not accepted by every Gateway it attaches to:
// with the Gateway's own reason and message when one refused it, with
// RouteNotAccepted while one has not answered, with GatewayAPIMissing when
// the cluster has no Gateway API, with RouteNotAllowed when the policy
// refuses the route, with RouteNameTaken when someone else holds its name,
// with GatewayNotFound when gateways (nil: cannot tell) says a Gateway the
// route attaches to, that has not answered, does not exist.
// All but RouteNotAccepted (and a Gateway's Pending) wait on a person, and
// make the Robot Stalled. A Robot whose workload is not Ready keeps
// the workload's reason, which says more. route is the Robot's route as
// cached, nil when it has none. Once the route is accepted, its URLs are
// the Robot's address (address.go).
func WithRoute(robot *robotv1beta1.Robot, status *robotv1beta1.RobotStatus, route *gatewayv1.HTTPRoute, gateways GatewayLookup, syncErr error, now metav1.Time) {
	if !workload.WantsRoute(robot) {
		return
	}
	withRouteAddress(robot, status, route, syncErr)
	ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		return
	}
	reason, message, stuck := routeNotAccepted(route, gateways, syncErr)
	if reason == "" {
		return
	}
	if len(message) > maxMessageLength {
		message = truncate(message, maxMessageLength-3) + "..."
	}
	// Ready was False before, for the route or for anything else: it keeps
	// its lastTransitionTime, so that an unchanged status writes nothing.
	transition := now
	if previous := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionReady); previous != nil && previous.Status == metav1.ConditionFalse {
		transition = previous.LastTransitionTime
	}
	ready.Status, ready.Reason, ready.Message, ready.LastTransitionTime = metav1.ConditionFalse, reason, message, transition
	// Reconciling and Stalled follow Ready, and keep the lastTransitionTime
	// they have stored when their status is the same.
	setProgressStalled(status, robot.Status.Conditions, robot.Generation, now, stuck || stalledReasons[reason])
}

// routeNotAccepted returns why route is not accepted by every Gateway it
// attaches to, or "" when it is; stuck when a Gateway refused it in its own
// words, which only a change (of the Robot, of the Gateway) can cure.
func routeNotAccepted(route *gatewayv1.HTTPRoute, gateways GatewayLookup, syncErr error) (reason, message string, stuck bool) {
	if errors.Is(syncErr, outcome.ErrGatewayAPIMissing) {
		return robotv1beta1.ReasonGatewayAPIMissing, syncErr.Error(), false
	}
	// A route the policy refuses is not the one the Robot asks for, even
	// when an earlier one is still there and accepted.
	if refused := (*outcome.NotAllowedError)(nil); errors.As(syncErr, &refused) && refused.Reason == robotv1beta1.ReasonRouteNotAllowed {
		return refused.Reason, refused.Message, false
	}
	// Nor is a route of the same name that someone else holds.
	if taken := (*outcome.NameTakenError)(nil); errors.As(syncErr, &taken) && taken.Reason == robotv1beta1.ReasonRouteNameTaken {
		return taken.Reason, taken.Error(), false
	}
	if route == nil {
		return robotv1beta1.ReasonRouteNotAccepted, "the Robot's HTTPRoute is not there yet", false
	}
	for _, parent := range route.Spec.ParentRefs {
		namespace := cmp.Or(string(ptr.Deref(parent.Namespace, "")), route.Namespace)
		gateway := fmt.Sprintf("%s/%s", namespace, parent.Name)
		accepted := parentAccepted(route, parent)
		switch {
		case accepted == nil && isGateway(parent) && gateways.missing(namespace, string(parent.Name)):
			return robotv1beta1.ReasonGatewayNotFound, fmt.Sprintf("Gateway %s does not exist: no controller will answer HTTPRoute %q until it is made, "+
				"or spec.http.gateways names another", gateway, route.Name), false
		case accepted == nil || accepted.ObservedGeneration < route.Generation:
			return robotv1beta1.ReasonRouteNotAccepted, fmt.Sprintf("Gateway %s has not accepted HTTPRoute %q yet", gateway, route.Name), false
		case accepted.Status != metav1.ConditionTrue:
			// Pending (or Unknown) is a Gateway that has not decided yet;
			// anything else is its refusal, which waits on a person.
			stuck := accepted.Status == metav1.ConditionFalse && accepted.Reason != string(gatewayv1.RouteReasonPending)
			return cmp.Or(accepted.Reason, robotv1beta1.ReasonRouteNotAccepted),
				fmt.Sprintf("Gateway %s does not accept HTTPRoute %q: %s", gateway, route.Name, accepted.Message), stuck
		}
	}
	return "", "", false
}

// parentAccepted returns the Accepted condition that route's status holds
// for parent, nil when it holds none.
func parentAccepted(route *gatewayv1.HTTPRoute, parent gatewayv1.ParentReference) *metav1.Condition {
	for i := range route.Status.Parents {
		if sameParent(route.Namespace, route.Status.Parents[i].ParentRef, parent) {
			return meta.FindStatusCondition(route.Status.Parents[i].Conditions, string(gatewayv1.RouteConditionAccepted))
		}
	}
	return nil
}

// sameParent reports whether two parent references of a route in namespace
// name the same Gateway listener, their defaults filled in.
func sameParent(namespace string, a, b gatewayv1.ParentReference) bool {
	group := func(r gatewayv1.ParentReference) string {
		return cmp.Or(string(ptr.Deref(r.Group, "")), gatewayv1.GroupName)
	}
	kind := func(r gatewayv1.ParentReference) string { return cmp.Or(string(ptr.Deref(r.Kind, "")), "Gateway") }
	ns := func(r gatewayv1.ParentReference) string { return cmp.Or(string(ptr.Deref(r.Namespace, "")), namespace) }
	return group(a) == group(b) && kind(a) == kind(b) && ns(a) == ns(b) && a.Name == b.Name &&
		ptr.Deref(a.SectionName, "") == ptr.Deref(b.SectionName, "")
}

// GatewayLookup reports whether the Gateway namespace/name exists; known is
// false when the caller cannot tell. The status never says a Gateway is
// missing on a guess.
type GatewayLookup func(namespace, name string) (exists, known bool)

// missing reports whether lookup knows the Gateway namespace/name does not
// exist; false for a nil lookup.
func (lookup GatewayLookup) missing(namespace, name string) bool {
	if lookup == nil {
		return false
	}
	exists, known := lookup(namespace, name)
	return known && !exists
}

// isGateway reports whether parent names a Gateway of the Gateway API, its
// defaults filled in.
func isGateway(parent gatewayv1.ParentReference) bool {
	return cmp.Or(string(ptr.Deref(parent.Group, "")), gatewayv1.GroupName) == gatewayv1.GroupName &&
		cmp.Or(string(ptr.Deref(parent.Kind, "")), "Gateway") == "Gateway"
}
