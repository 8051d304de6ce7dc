//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestAddress: a Robot says where it is reached, read from its Service as
// the API server has it: its in-cluster name and ports; for a load
// balancer, that it has no address yet, then the address a load balancer
// controller writes into the Service's status (kwok has none: the test
// writes it). kubectl get robots shows the URL, and -o wide more columns.
func TestAddress(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	web := newRobot(ns, "web", 1)
	web.Spec.Ports = httpPorts(8080)
	createRobot(t, web)
	lb := newRobot(ns, "lb", 1)
	lb.Spec.Ports = httpPorts(8080)
	lb.Spec.Service = &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeLoadBalancer}
	createRobot(t, lb)

	host := "web." + ns + ".svc"
	got := waitForRobot(t, ns, "web", convergeTimeout, "has its Service's address", func(r *robotv1beta1.Robot) bool {
		return r.Status.Address != nil && r.Status.Address.Hostname == host
	})
	a := got.Status.Address
	if want := "http://" + host + ":8080"; a.URL != want || len(a.Ports) != 1 || a.Ports[0] != (robotv1beta1.RobotAddressPort{Name: portName, Port: 8080, Protocol: corev1.ProtocolTCP}) || a.LoadBalancer != nil {
		t.Errorf("address %+v, want url %s and the Service's one port, no load balancer", a, want)
	}

	// A LoadBalancer with no address yet says so.
	got = waitForRobot(t, ns, "lb", convergeTimeout, "says its load balancer has no address yet", func(r *robotv1beta1.Robot) bool {
		a := r.Status.Address
		return a != nil && a.LoadBalancer != nil && len(a.LoadBalancer.Addresses) == 0 && strings.Contains(a.LoadBalancer.Message, "no address yet")
	})
	if a := got.Status.Address; len(a.Ports) != 1 || a.Ports[0].NodePort == 0 || a.URL != "http://lb."+ns+".svc:8080" {
		t.Errorf("address %+v, want the node port the API server allocated, and the in-cluster URL", a)
	}
	// A load balancer controller gives it an address.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := env.kube.CoreV1().Services(ns).Get(t.Context(), "lb", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}
		_, err = env.kube.CoreV1().Services(ns).UpdateStatus(t.Context(), s, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got = waitForRobot(t, ns, "lb", convergeTimeout, "shows its load balancer's address", func(r *robotv1beta1.Robot) bool {
		return r.Status.Address != nil && r.Status.Address.URL == "http://203.0.113.7:8080"
	})
	if lb := got.Status.Address.LoadBalancer; lb == nil || len(lb.Addresses) != 1 || lb.Addresses[0] != (robotv1beta1.RobotNetworkAddress{Type: "IPAddress", Value: "203.0.113.7"}) || lb.Message != "" {
		t.Errorf("load balancer %+v, want its one IP address and no message", lb)
	}

	// The columns.
	waitForRobotReady(t, ns, "web")
	waitForRobotReady(t, ns, "lb")
	plain := mustKubectl(t, "get", "robots", "-n", ns)
	wide := mustKubectl(t, "get", "robots", "-n", ns, "-o", "wide")
	t.Logf("kubectl get robots:\n%s\nkubectl get robots -o wide:\n%s", plain, wide)
	header := func(out string) []string { return strings.Fields(strings.SplitN(out, "\n", 2)[0]) }
	if got, want := strings.Join(header(plain), " "), "NAME DESIRED READY AVAILABLE STATUS SYNCED ADDRESS AGE"; got != want {
		t.Errorf("kubectl get robots: columns %q, want %q", got, want)
	}
	if got, want := strings.Join(header(wide), " "), "NAME DESIRED READY AVAILABLE STATUS SYNCED ADDRESS AGE SYNC-REASON UP-TO-DATE SERVICE IMAGE"; got != want {
		t.Errorf("kubectl get robots -o wide: columns %q, want %q", got, want)
	}
	for _, want := range []string{"http://203.0.113.7:8080", "http://" + host + ":8080", robotv1beta1.ReasonSynced, web.Spec.Image} {
		if !strings.Contains(wide, want) {
			t.Errorf("kubectl get robots -o wide does not show %q", want)
		}
	}
	var address string
	eventually(t, convergeTimeout, "kubectl get robot lb shows its address", func(ctx context.Context) (bool, string, error) {
		out, _, err := kubectl(ctx, "", "get", "robot", "lb", "-n", ns, "-o", "yaml")
		address = out
		return strings.Contains(out, "203.0.113.7"), fmt.Sprint(out), err
	})
	if i := strings.Index(address, "  address:"); i >= 0 {
		t.Logf("kubectl get robot lb -o yaml, its address:\n%s", address[i:])
	}
}
