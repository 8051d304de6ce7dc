//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// routesCRD is the Gateway API's HTTPRoute CRD.
const routesCRD = "httproutes.gateway.networking.k8s.io"

// routesCRDFile is the HTTPRoute CRD of the Gateway API module that go.mod
// requires, from the module cache: no download.
func routesCRDFile(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = env.root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("finding the Gateway API module: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard", "gateway.networking.k8s.io_httproutes.yaml")
}

// gatewaysCRD is the Gateway API's Gateway CRD.
const gatewaysCRD = "gateways.gateway.networking.k8s.io"

// removeGatewaysCRD deletes the Gateway CRD and waits until it is gone. It
// runs in a cleanup too, after the test's context has ended.
func removeGatewaysCRD(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 90*time.Second)
	defer cancel()
	if _, stderr, err := kubectl(ctx, "", "delete", "crd", gatewaysCRD, "--ignore-not-found", "--wait=true", "--timeout=60s"); err != nil {
		t.Errorf("deleting the Gateway CRD: %v\n%s", err, stderr)
	}
}

// waitForEstablished waits until the CRD named is established. kubectl wait fails
// at once, rather than waiting, while a new CRD has no conditions yet: it
// asks until the CRD says Established.
func waitForEstablished(t *testing.T, name string) {
	t.Helper()
	eventually(t, convergeTimeout, "CRD "+name+" is established", func(ctx context.Context) (bool, string, error) {
		out, _, err := kubectl(ctx, "", "get", "crd", name, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		return out == "True", out, err
	})
}

// removeRoutesCRD deletes the HTTPRoute CRD and waits until it is gone. It
// runs in a cleanup too, after the test's context has ended.
func removeRoutesCRD(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 90*time.Second)
	defer cancel()
	if _, stderr, err := kubectl(ctx, "", "delete", "crd", routesCRD, "--ignore-not-found", "--wait=true", "--timeout=60s"); err != nil {
		t.Errorf("deleting the HTTPRoute CRD: %v\n%s", err, stderr)
	}
}

// gatewayClient returns a client of the Gateway API for the test cluster.
func gatewayClient(t *testing.T) gatewayclient.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := gatewayclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// setAccepted writes, as a Gateway controller would, whether the Gateway
// named gateway accepts route.
func setAccepted(t *testing.T, routes gatewayclient.Interface, ns, name, gateway string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	route, err := routes.GatewayV1().HTTPRoutes(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	route.Status.Parents = []gatewayv1.RouteParentStatus{{
		ParentRef:      gatewayv1.ParentReference{Name: gatewayv1.ObjectName(gateway)},
		ControllerName: "e2e.robot.dev/gateway-controller",
		Conditions: []metav1.Condition{{Type: string(gatewayv1.RouteConditionAccepted), Status: status, Reason: reason, Message: message,
			ObservedGeneration: route.Generation, LastTransitionTime: metav1.Now()}},
	}}
	if _, err := routes.GatewayV1().HTTPRoutes(ns).UpdateStatus(t.Context(), route, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestHTTPRoute: a Robot that asks for an HTTPRoute on a cluster with no
// Gateway API gets its Deployment and Service all the same, and says why it
// has no route. Once the Gateway API's CRD is installed, the operator,
// still running, makes the route; once the Gateway CRD is too, the Robot
// says its Gateway does not exist (Stalled), and waits for its answer again
// once it does. The Robot is Ready only once the Gateway accepts the route,
// and says the Gateway's own reason when it does not. A port's servicePort
// moves the route's backend to it.
func TestHTTPRoute(t *testing.T) {
	parallel(t)
	removeRoutesCRD(t)
	removeGatewaysCRD(t)
	t.Cleanup(func() { removeRoutesCRD(t) })
	t.Cleanup(func() { removeGatewaysCRD(t) })
	ns := newNamespace(t)
	robot := newRobot(ns, "site", 1)
	robot.Spec.Ports = httpPorts(8080)
	robot.Spec.HTTP = &robotv1beta1.RobotHTTP{
		Gateways:     []robotv1beta1.RobotGateway{{Name: "public"}},
		Hostnames:    []string{"site.example.com"},
		PathPrefixes: []string{"/"},
	}
	robot = createRobot(t, robot)

	// No Gateway API: everything else runs.
	waitForService(t, ns, "site", "exists", func(*corev1.Service) bool { return true })
	missing := waitForRobot(t, ns, "site", convergeTimeout, "says the cluster has no Gateway API", func(r *robotv1beta1.Robot) bool {
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		ready := readyCondition(r)
		return synced != nil && synced.Reason == robotv1beta1.ReasonGatewayAPIMissing && ready != nil && ready.Reason == robotv1beta1.ReasonGatewayAPIMissing
	})
	if missing.Status.AvailableReplicas != 1 {
		t.Errorf("without the Gateway API, %d replicas available, want the Robot's pod running all the same", missing.Status.AvailableReplicas)
	}

	// The Gateway API arrives; the operator is not restarted.
	mustKubectl(t, "apply", "--server-side", "-f", routesCRDFile(t))
	waitForEstablished(t, routesCRD)
	routes := gatewayClient(t)
	var route *gatewayv1.HTTPRoute
	eventually(t, convergeTimeout, "the Robot's HTTPRoute is made", func(ctx context.Context) (bool, string, error) {
		r, err := routes.GatewayV1().HTTPRoutes(ns).Get(ctx, "site", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "none", nil
		}
		if err != nil {
			return false, "", err
		}
		route = r
		return true, "", nil
	})
	if ref := metav1.GetControllerOf(route); ref == nil || ref.UID != robot.UID {
		t.Errorf("route controlled by %s, want the Robot", describeOwner(ref))
	}
	if len(route.Spec.ParentRefs) != 1 || route.Spec.ParentRefs[0].Name != "public" || len(route.Spec.Hostnames) != 1 || route.Spec.Hostnames[0] != "site.example.com" {
		t.Errorf("route parents %v, hostnames %v", route.Spec.ParentRefs, route.Spec.Hostnames)
	}
	if b := route.Spec.Rules[0].BackendRefs; len(b) != 1 || b[0].Name != "site" || b[0].Port == nil || *b[0].Port != 8080 {
		t.Errorf("route backends %+v, want Service site on 8080", b)
	}
	waitForRobot(t, ns, "site", convergeTimeout, "waits for the Gateway", func(r *robotv1beta1.Robot) bool {
		ready := readyCondition(r)
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return ready != nil && ready.Reason == robotv1beta1.ReasonRouteNotAccepted && synced != nil && synced.Status == metav1.ConditionTrue
	})

	// The Gateways' CRD arrives, without Gateway public: no controller
	// will ever answer the route, and the Robot says so, Stalled.
	gatewaysFile := strings.Replace(routesCRDFile(t), "httproutes.yaml", "gateways.yaml", 1)
	mustKubectl(t, "apply", "--server-side", "-f", gatewaysFile)
	waitForEstablished(t, gatewaysCRD)
	waitForRobot(t, ns, "site", 2*convergeTimeout, "says Gateway public does not exist, Stalled", func(r *robotv1beta1.Robot) bool {
		ready, stalled := readyCondition(r), meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionStalled)
		return ready != nil && ready.Reason == robotv1beta1.ReasonGatewayNotFound && strings.Contains(ready.Message, "Gateway "+ns+"/public") &&
			stalled != nil && stalled.Status == metav1.ConditionTrue
	})
	// It is made: the Robot waits for its answer again, by itself.
	if _, err := routes.GatewayV1().Gateways(ns).Create(t.Context(), &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "public"},
		Spec:       gatewayv1.GatewaySpec{GatewayClassName: "e2e", Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForRobot(t, ns, "site", convergeTimeout, "waits for the Gateway again, Reconciling", func(r *robotv1beta1.Robot) bool {
		ready, reconciling := readyCondition(r), meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionReconciling)
		return ready != nil && ready.Reason == robotv1beta1.ReasonRouteNotAccepted && reconciling != nil && reconciling.Status == metav1.ConditionTrue
	})

	// The Gateway refuses it: its reason and message are the Robot's.
	setAccepted(t, routes, ns, "site", "public", metav1.ConditionFalse, "NotAllowedByListeners", "no listener of Gateway public allows routes from "+ns)
	waitForRobot(t, ns, "site", convergeTimeout, "says why the Gateway refused the route, Stalled", func(r *robotv1beta1.Robot) bool {
		ready, stalled := readyCondition(r), meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionStalled)
		return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == "NotAllowedByListeners" &&
			strings.Contains(ready.Message, "allows routes from "+ns) && stalled != nil && stalled.Status == metav1.ConditionTrue
	})

	// Accepted: Ready, and reached at the route's URL.
	setAccepted(t, routes, ns, "site", "public", metav1.ConditionTrue, "Accepted", "")
	if ready := waitForRobotReady(t, ns, "site"); meta.FindStatusCondition(ready.Status.Conditions, robotv1beta1.ConditionStalled) != nil ||
		meta.FindStatusCondition(ready.Status.Conditions, robotv1beta1.ConditionReconciling) != nil {
		t.Errorf("the Ready Robot keeps Reconciling or Stalled: %+v", ready.Status.Conditions)
	}
	waitForRobot(t, ns, "site", convergeTimeout, "is reached at the route's URL", func(r *robotv1beta1.Robot) bool {
		a := r.Status.Address
		return a != nil && a.URL == "http://site.example.com/" && len(a.RouteURLs) == 1 && a.RouteURLs[0] == a.URL && a.Hostname == "site."+ns+".svc"
	})

	// A hand edit of the route is put back.
	if _, err := routes.GatewayV1().HTTPRoutes(ns).Patch(t.Context(), "site", "application/merge-patch+json",
		[]byte(`{"spec":{"hostnames":["elsewhere.example.com"]}}`), metav1.PatchOptions{FieldManager: "e2e-hand-edit"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, convergeTimeout, "the route's hostname is put back", func(ctx context.Context) (bool, string, error) {
		r, err := routes.GatewayV1().HTTPRoutes(ns).Get(ctx, "site", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return len(r.Spec.Hostnames) == 1 && r.Spec.Hostnames[0] == "site.example.com", fmt.Sprint(r.Spec.Hostnames), nil
	})

	// A servicePort: the route reaches the Service on it, not on the
	// container's number.
	patchRobot(t, ns, "site", `{"spec":{"ports":[{"name":"http","containerPort":8080,"servicePort":80}]}}`)
	eventually(t, convergeTimeout, "the route's backend is on the Service port, 80", func(ctx context.Context) (bool, string, error) {
		r, err := routes.GatewayV1().HTTPRoutes(ns).Get(ctx, "site", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		b := r.Spec.Rules[0].BackendRefs
		return len(b) == 1 && b[0].Port != nil && *b[0].Port == 80, fmt.Sprintf("%+v", b), nil
	})
	waitForService(t, ns, "site", "is on port 80", func(s *corev1.Service) bool { return len(s.Spec.Ports) == 1 && s.Spec.Ports[0].Port == 80 })

	// No http: the route goes.
	patchRobot(t, ns, "site", `{"spec":{"http":null}}`)
	eventually(t, convergeTimeout, "the route is deleted", func(ctx context.Context) (bool, string, error) {
		_, err := routes.GatewayV1().HTTPRoutes(ns).Get(ctx, "site", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
}
