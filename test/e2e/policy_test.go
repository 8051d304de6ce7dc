//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// syncedReason waits until the Robot's Synced condition has reason, for
// its current generation, and returns the Robot.
func syncedReason(t *testing.T, ns, name, reason string) *robotv1beta1.Robot {
	t.Helper()
	return waitForRobot(t, ns, name, convergeTimeout, "says Synced "+reason, func(r *robotv1beta1.Robot) bool {
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return synced != nil && synced.Reason == reason && synced.ObservedGeneration == r.Generation
	})
}

// TestAdministratorSwitches: what the operator's flags refuse, it does not
// write, and what a Robot already has stays as it is. With routes on, a
// Robot gets its HTTPRoute, and one gets a Service with an annotation that
// only an explicit prefix allows; then the operator restarts with routes
// off and the default Service annotations. A new Robot with spec.http gets
// no route and says RouteNotAllowed; the existing route is not changed to
// the Robot's new hostname, nor deleted, until the Robot drops spec.http.
// A new Robot asking for an exposing annotation gets no Service and says
// ServiceMetadataNotAllowed; the existing Service keeps its address when
// its Robot asks for another exposing annotation. A grace period above the
// default hour gets no Deployment.
func TestAdministratorSwitches(t *testing.T) {
	exclusive(t, "it pauses the shared operator, runs its own with other flags, and installs the Gateway API's HTTPRoute CRD")
	pauseSharedOperator(t)
	removeRoutesCRD(t)
	t.Cleanup(func() { removeRoutesCRD(t) })
	mustKubectl(t, "apply", "--server-side", "-f", routesCRDFile(t))
	eventually(t, convergeTimeout, "the HTTPRoute CRD is established", func(ctx context.Context) (bool, string, error) {
		out, _, err := kubectl(ctx, "", "get", "crd", routesCRD, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True", out, err
	})
	routes := gatewayClient(t)
	ns := newNamespace(t)

	// Before: routes on, and Tailscale's annotations allowed.
	before := extraOperator(t, "switches-before", sharedArgs("-service-annotations=*,tailscale.com/"))
	if err := before.start(); err != nil {
		t.Fatal(err)
	}
	routed := newRobot(ns, "routed", 1)
	routed.Spec.Ports = httpPorts(8080)
	routed.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "public", Namespace: "infra"}}, Hostnames: []string{"routed.example.com"}}
	createRobot(t, routed)
	exposed := newRobot(ns, "exposed", 1)
	exposed.Spec.Ports = httpPorts(8080)
	exposed.Spec.Service = &robotv1beta1.RobotService{Annotations: map[string]string{"tailscale.com/expose": "true"}}
	createRobot(t, exposed)
	var route *struct{ uid, hostnames string }
	eventually(t, convergeTimeout, "HTTPRoute routed is made", func(ctx context.Context) (bool, string, error) {
		r, err := routes.GatewayV1().HTTPRoutes(ns).Get(ctx, "routed", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "none", nil
		}
		if err != nil {
			return false, "", err
		}
		route = &struct{ uid, hostnames string }{string(r.UID), fmt.Sprint(r.Spec.Hostnames)}
		return true, "", nil
	})
	service := waitForService(t, ns, "exposed", "carries the annotation", func(s *corev1.Service) bool {
		return s.Annotations["tailscale.com/expose"] == "true" && s.Spec.ClusterIP != ""
	})
	terminate(t, before)
	waitExitedCleanly(t, before, 40*time.Second)

	// After: routes off, and the default Service annotations.
	after := extraOperator(t, "switches-after", sharedArgs("-http-routes=false"))
	if err := after.start(); err != nil {
		t.Fatal(err)
	}

	// A new Robot with spec.http: no route, and it says why, on Synced and
	// on Ready, with one Warning event; its Deployment and Service run.
	fresh := newRobot(ns, "fresh", 1)
	fresh.Spec.Ports = httpPorts(8080)
	fresh.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "public", Namespace: "infra"}}, Hostnames: []string{"login.victim.example.com"}}
	fresh = createRobot(t, fresh)
	got := syncedReason(t, ns, "fresh", robotv1beta1.ReasonRouteNotAllowed)
	if synced := meta.FindStatusCondition(got.Status.Conditions, robotv1beta1.ConditionSynced); !strings.Contains(synced.Message, "-http-routes=false") {
		t.Errorf("Synced message %q, want it to name -http-routes=false", synced.Message)
	}
	waitForRobot(t, ns, "fresh", convergeTimeout, "is Ready=False, RouteNotAllowed, with its pod available", func(r *robotv1beta1.Robot) bool {
		ready := readyCondition(r)
		return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == robotv1beta1.ReasonRouteNotAllowed && r.Status.AvailableReplicas == 1
	})
	waitForService(t, ns, "fresh", "exists", func(*corev1.Service) bool { return true })
	waitForEvents(t, ns, fresh.UID, robotv1beta1.ReasonRouteNotAllowed, 1)
	if _, err := routes.GatewayV1().HTTPRoutes(ns).Get(t.Context(), "fresh", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("HTTPRoute fresh: %v, want none", err)
	}

	// The existing route is left as it was, whatever its Robot asks now.
	patchRobot(t, ns, "routed", `{"spec":{"http":{"hostnames":["login.victim.example.com"]}}}`)
	syncedReason(t, ns, "routed", robotv1beta1.ReasonRouteNotAllowed)
	r, err := routes.GatewayV1().HTTPRoutes(ns).Get(t.Context(), "routed", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the route made before routes were turned off: %v, want it left", err)
	}
	if string(r.UID) != route.uid || fmt.Sprint(r.Spec.Hostnames) != route.hostnames {
		t.Errorf("HTTPRoute routed: uid %s, hostnames %v; want %s, %s as it was", r.UID, r.Spec.Hostnames, route.uid, route.hostnames)
	}
	// It goes once the Robot asks for none.
	patchRobot(t, ns, "routed", `{"spec":{"http":null}}`)
	eventually(t, convergeTimeout, "HTTPRoute routed is deleted", func(ctx context.Context) (bool, string, error) {
		_, err := routes.GatewayV1().HTTPRoutes(ns).Get(ctx, "routed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
	syncedReason(t, ns, "routed", robotv1beta1.ReasonSynced)

	// A new Robot asking for an exposing annotation: no Service.
	dns := newRobot(ns, "dns", 1)
	dns.Spec.Ports = httpPorts(8080)
	dns.Spec.Service = &robotv1beta1.RobotService{Annotations: map[string]string{"external-dns.alpha.kubernetes.io/hostname": "login.victim.example.com"}}
	dns = createRobot(t, dns)
	got = syncedReason(t, ns, "dns", robotv1beta1.ReasonServiceMetadataNotAllowed)
	if synced := meta.FindStatusCondition(got.Status.Conditions, robotv1beta1.ConditionSynced); !strings.Contains(synced.Message, "external-dns.alpha.kubernetes.io/hostname") {
		t.Errorf("Synced message %q, want it to name the annotation", synced.Message)
	}
	waitForEvents(t, ns, dns.UID, robotv1beta1.ReasonServiceMetadataNotAllowed, 1)
	// Its pod runs, but it has no Service until a person acts: Stalled.
	waitForRobot(t, ns, "dns", convergeTimeout, "is Ready=False, Stalled, ServiceMetadataNotAllowed, with its pod available", func(r *robotv1beta1.Robot) bool {
		ready, stalled := readyCondition(r), meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionStalled)
		return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == robotv1beta1.ReasonServiceMetadataNotAllowed &&
			stalled != nil && stalled.Status == metav1.ConditionTrue && r.Status.AvailableReplicas == 1
	})
	if _, err := env.kube.CoreV1().Services(ns).Get(t.Context(), "dns", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Service dns: %v, want none", err)
	}

	// A grace period above the default maximum, an hour: no Deployment.
	slow := newRobot(ns, "slow", 1)
	slow.Spec.TerminationGracePeriodSeconds = ptr.To[int64](7200)
	slow = createRobot(t, slow)
	syncedReason(t, ns, "slow", robotv1beta1.ReasonGracePeriodNotAllowed)
	waitForEvents(t, ns, slow.UID, robotv1beta1.ReasonGracePeriodNotAllowed, 1)
	if _, err := env.kube.AppsV1().Deployments(ns).Get(t.Context(), "slow", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment slow: %v, want none", err)
	}

	// The Service made before keeps what it has, its address included.
	patchRobot(t, ns, "exposed", `{"spec":{"service":{"annotations":{"tailscale.com/expose":"true","tailscale.com/hostname":"exposed"}}}}`)
	syncedReason(t, ns, "exposed", robotv1beta1.ReasonServiceMetadataNotAllowed)
	now := waitForService(t, ns, "exposed", "exists", func(*corev1.Service) bool { return true })
	if now.UID != service.UID || now.Spec.ClusterIP != service.Spec.ClusterIP || now.Annotations["tailscale.com/hostname"] != "" {
		t.Errorf("Service exposed: uid %s, clusterIP %s, annotations %v; want %s, %s, as it was", now.UID, now.Spec.ClusterIP, now.Annotations, service.UID, service.Spec.ClusterIP)
	}
}
