package status

import (
	"fmt"
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// serviceOf is a Robot's Service as the API server has it: of type, with
// its ports allocated, and the load balancer's ingress given.
func serviceOf(serviceType corev1.ServiceType, ingress ...corev1.LoadBalancerIngress) *corev1.Service {
	service := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"},
		Spec: corev1.ServiceSpec{Type: serviceType, Ports: []corev1.ServicePort{
			{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
		}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}},
	}
	if serviceType != corev1.ServiceTypeClusterIP {
		service.Spec.Ports[0].NodePort, service.Spec.Ports[1].NodePort = 30080, 30053
	}
	return service
}

// TestServiceAddress: the address is read from the Service as it is: its
// DNS name, its ports with their node ports once allocated, its load
// balancer's addresses or a plain word that it has none yet; and the URL
// is the best of them.
func TestServiceAddress(t *testing.T) {
	ports := func(nodePorts bool) []robotv1beta1.RobotAddressPort {
		p := []robotv1beta1.RobotAddressPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}
		if nodePorts {
			p[0].NodePort, p[1].NodePort = 30080, 30053
		}
		return p
	}
	for _, tt := range []struct {
		name    string
		service *corev1.Service
		want    *robotv1beta1.RobotAddress
	}{
		{"no Service", nil, nil},
		{"ClusterIP", serviceOf(corev1.ServiceTypeClusterIP), &robotv1beta1.RobotAddress{
			URL: "http://web.team.svc:8080", Hostname: "web.team.svc", Ports: ports(false)}},
		{"NodePort", serviceOf(corev1.ServiceTypeNodePort), &robotv1beta1.RobotAddress{
			URL: "http://web.team.svc:8080", Hostname: "web.team.svc", Ports: ports(true)}},
		{"LoadBalancer, no address yet", serviceOf(corev1.ServiceTypeLoadBalancer), &robotv1beta1.RobotAddress{
			URL: "http://web.team.svc:8080", Hostname: "web.team.svc", Ports: ports(true),
			LoadBalancer: &robotv1beta1.RobotLoadBalancerAddress{Message: `the load balancer of Service "web" has no address yet: the cluster's load balancer controller gives it one`}}},
		{"LoadBalancer with addresses", serviceOf(corev1.ServiceTypeLoadBalancer, corev1.LoadBalancerIngress{IP: "2001:db8::7"}, corev1.LoadBalancerIngress{Hostname: "lb.example.com"}),
			&robotv1beta1.RobotAddress{URL: "http://[2001:db8::7]:8080", Hostname: "web.team.svc", Ports: ports(true),
				LoadBalancer: &robotv1beta1.RobotLoadBalancerAddress{Addresses: []robotv1beta1.RobotNetworkAddress{
					{Type: robotv1beta1.AddressTypeIPAddress, Value: "2001:db8::7"}, {Type: robotv1beta1.AddressTypeHostname, Value: "lb.example.com"}}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := diff.Diff(tt.want, serviceAddress(tt.service)); d != "" {
				t.Errorf("address (-want +got):\n%s", d)
			}
		})
	}
}

// TestRouteAddress: once every Gateway accepted the route, its URLs are
// the Robot's, and the first is the address's URL; before, the address is
// the Service's.
func TestRouteAddress(t *testing.T) {
	robot := robottest.NewRobot("web", 1)
	robot.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "public"}}}
	deployment := liveDeployment(t, robot)
	now := metav1.NewTime(robottest.FixtureNow)
	yes := metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: 1}
	accepted := routeOf(robot, 1, map[string]metav1.Condition{"public": yes}, "public")
	accepted.Spec.Hostnames = []gatewayv1.Hostname{"web.example.com", "*.example.com", "www.example.com"}
	accepted.Spec.Rules = []gatewayv1.HTTPRouteRule{{Matches: []gatewayv1.HTTPRouteMatch{
		{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To("/")}},
		{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To("/api")}},
	}}}
	waiting := accepted.DeepCopy()
	waiting.Status.Parents = nil

	status, _ := Diagnosed(robot, deployment, serviceOf(corev1.ServiceTypeClusterIP), nil, nil, nil, now)
	WithRoute(robot, &status, accepted, nil, nil, now)
	want := []string{"http://web.example.com/", "http://web.example.com/api", "http://www.example.com/", "http://www.example.com/api"}
	if d := diff.Diff(want, status.Address.RouteURLs); d != "" || status.Address.URL != want[0] {
		t.Errorf("accepted: url %q, routeURLs (-want +got):\n%s", status.Address.URL, d)
	}

	status, _ = Diagnosed(robot, deployment, serviceOf(corev1.ServiceTypeClusterIP), nil, nil, nil, now)
	WithRoute(robot, &status, waiting, nil, nil, now)
	if status.Address.RouteURLs != nil || status.Address.URL != "http://web.team.svc:8080" {
		t.Errorf("not accepted yet: url %q, routeURLs %v; want the Service's URL alone", status.Address.URL, status.Address.RouteURLs)
	}
}

// TestAddressIsApplied: the status apply carries the whole address, so that
// what is stored is what was computed, and a second sync writes nothing.
func TestAddressIsApplied(t *testing.T) {
	robot := robottest.NewRobot("web", 1)
	status := Compute(robot, nil, serviceOf(corev1.ServiceTypeLoadBalancer, corev1.LoadBalancerIngress{IP: "203.0.113.7"}), nil, metav1.NewTime(robottest.FixtureNow))
	status.Address.RouteURLs = []string{"http://web.example.com/"}
	ac := ApplyConfiguration(robot, &status)
	got := ac.Status.Address
	if got == nil || *got.URL != status.Address.URL || *got.Hostname != status.Address.Hostname || len(got.Ports) != 2 || *got.Ports[0].NodePort != 30080 ||
		len(got.LoadBalancer.Addresses) != 1 || *got.LoadBalancer.Addresses[0].Value != "203.0.113.7" || len(got.RouteURLs) != 1 {
		t.Errorf("applied address %+v, want all of %+v", got, status.Address)
	}
	if ac := ApplyConfiguration(robot, &robotv1beta1.RobotStatus{}); ac.Status.Address != nil {
		t.Errorf("a Robot without a Service applies an address: %+v", ac.Status.Address)
	}
}

// TestRouteAddressIsBounded: a route of 16 hostnames and 16 long path
// prefixes, as the schema admits, would put 256 URLs of over a kilobyte
// each in every status write; the address keeps the first few.
func TestRouteAddressIsBounded(t *testing.T) {
	robot := robottest.NewRobot("web", 1)
	robot.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "public"}}}
	deployment := liveDeployment(t, robot)
	now := metav1.NewTime(robottest.FixtureNow)
	yes := metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: 1}
	route := routeOf(robot, 1, map[string]metav1.Condition{"public": yes}, "public")
	route.Spec.Hostnames, route.Spec.Rules = nil, []gatewayv1.HTTPRouteRule{{}}
	for i := range 16 {
		route.Spec.Hostnames = append(route.Spec.Hostnames, gatewayv1.Hostname(fmt.Sprintf("host-%d.example.com", i)))
		path := fmt.Sprintf("/%d/%s", i, strings.Repeat("p", 1000))
		route.Spec.Rules[0].Matches = append(route.Spec.Rules[0].Matches, gatewayv1.HTTPRouteMatch{
			Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To(path)}})
	}
	status, _ := Diagnosed(robot, deployment, serviceOf(corev1.ServiceTypeClusterIP), nil, nil, nil, now)
	WithRoute(robot, &status, route, nil, nil, now)
	if n := len(status.Address.RouteURLs); n != 16 {
		t.Errorf("%d route URLs, want the first 16", n)
	}
	if want := "http://host-0.example.com/0/" + strings.Repeat("p", 1000); status.Address.URL != want {
		t.Errorf("url %.60q..., want the first route URL", status.Address.URL)
	}
}
