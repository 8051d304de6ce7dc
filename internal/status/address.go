package status

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/robot-operator/robot-operator/internal/workload"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// serviceAddress returns where service, the Robot's Service as cached
// (nil when it has none), reaches the Robot: its name in the cluster's DNS,
// its ports as the Service has them, and its load balancer's addresses. It
// reads the Service, not the Robot's spec: a node port is known once
// allocated, a load balancer's address once a controller gave it one. Its
// URL is the load balancer's first address when there is one, else the
// in-cluster name, each on the Service's first port. Nil without a Service.
//
// The cluster's DNS domain (cluster.local, most often) is not known without
// asking the cluster: NAME.NAMESPACE.svc resolves from every pod all the
// same, through the search path every pod's resolv.conf has.
func serviceAddress(service *corev1.Service) *robotv1beta1.RobotAddress {
	if service == nil {
		return nil
	}
	address := &robotv1beta1.RobotAddress{Hostname: service.Name + "." + service.Namespace + ".svc"}
	for _, p := range service.Spec.Ports {
		address.Ports = append(address.Ports, robotv1beta1.RobotAddressPort{Name: p.Name, Port: p.Port, Protocol: p.Protocol, NodePort: p.NodePort})
	}
	var first int32
	if len(address.Ports) > 0 {
		first = address.Ports[0].Port
	}
	address.URL = hostURL(address.Hostname, first)
	if service.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return address
	}
	lb := &robotv1beta1.RobotLoadBalancerAddress{}
	for _, ingress := range service.Status.LoadBalancer.Ingress {
		switch {
		case ingress.IP != "":
			lb.Addresses = append(lb.Addresses, robotv1beta1.RobotNetworkAddress{Type: robotv1beta1.AddressTypeIPAddress, Value: ingress.IP})
		case ingress.Hostname != "":
			lb.Addresses = append(lb.Addresses, robotv1beta1.RobotNetworkAddress{Type: robotv1beta1.AddressTypeHostname, Value: ingress.Hostname})
		}
	}
	if len(lb.Addresses) == 0 {
		lb.Message = fmt.Sprintf("the load balancer of Service %q has no address yet: the cluster's load balancer controller gives it one", service.Name)
	} else {
		address.URL = hostURL(lb.Addresses[0].Value, first)
	}
	address.LoadBalancer = lb
	return address
}

// hostURL is http://HOST:PORT, or http://HOST without a port. An IPv6
// address is bracketed.
func hostURL(host string, port int32) string {
	if port == 0 {
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		return "http://" + host
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// maxRouteURLs is how many of its route's URLs a Robot's address keeps.
const maxRouteURLs = 16

// routeURLs returns the URLs of route, the Robot's HTTPRoute as cached:
// http://HOST/PATH for each hostname and path prefix of its rules. A
// wildcard hostname names no one host, and a route without hostnames takes
// the Gateway's, which is not read here: neither gives a URL. The scheme
// is http: whether the Gateway's listener serves https is not known here.
//
// It returns the first maxRouteURLs: the schema admits 16 hostnames times 16
// path prefixes of up to 1024 characters, which would be a third of a
// megabyte in every status write.
func routeURLs(route *gatewayv1.HTTPRoute) []string {
	var urls []string
	seen := map[string]bool{}
	for _, hostname := range route.Spec.Hostnames {
		if strings.HasPrefix(string(hostname), "*") {
			continue
		}
		for _, rule := range route.Spec.Rules {
			for _, match := range rule.Matches {
				path := "/"
				if match.Path != nil && match.Path.Value != nil {
					path = *match.Path.Value
				}
				if url := "http://" + string(hostname) + path; !seen[url] {
					seen[url] = true
					urls = append(urls, url)
					if len(urls) == maxRouteURLs {
						return urls
					}
				}
			}
		}
	}
	return urls
}

// withRouteAddress adds to status the URLs of robot's route once every
// Gateway it attaches to accepted it: the first becomes the address's URL.
// A route not accepted yet, refused, or not the one the Robot asks for, is
// no way in, and the address stays the Service's.
func withRouteAddress(robot *robotv1beta1.Robot, status *robotv1beta1.RobotStatus, route *gatewayv1.HTTPRoute, syncErr error) {
	if status.Address == nil || route == nil || !workload.WantsRoute(robot) {
		return
	}
	if reason, _, _ := routeNotAccepted(route, nil, syncErr); reason != "" {
		return
	}
	urls := routeURLs(route)
	if len(urls) == 0 {
		return
	}
	status.Address.RouteURLs = urls
	status.Address.URL = urls[0]
}
