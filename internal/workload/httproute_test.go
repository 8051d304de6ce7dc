package workload

import (
	"errors"
	"fmt"
	"testing"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/robottest"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestNewHTTPRoute: the route attaches to the Gateways listed, in the
// Robot's namespace unless one says another, answers for the hostnames and
// path prefixes listed ("/" by default), and sends every request to the
// Robot's Service on the port named (the first by default), with every
// field the Gateway API would default set as it would be.
func TestNewHTTPRoute(t *testing.T) {
	robot := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeClusterIP)
	robot.Spec.Ports = []robotv1beta1.RobotPort{
		{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
		{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
	}
	if route, err := NewHTTPRoute(robot); route != nil || err != nil {
		t.Fatalf("a Robot without spec.http: %v, %v; want no route", route, err)
	}
	robot.Spec.HTTP = &robotv1beta1.RobotHTTP{
		Gateways:     []robotv1beta1.RobotGateway{{Name: "public", Namespace: "infra", SectionName: "https"}, {Name: "internal"}},
		Hostnames:    []string{"web.example.com", "*.web.example.com"},
		PathPrefixes: []string{"/api", "/static"},
		Port:         "http",
	}
	route, err := NewHTTPRoute(robot)
	if err != nil {
		t.Fatal(err)
	}
	if *route.Name != "web" || *route.Namespace != robot.Namespace || route.Labels[LabelManagedBy] != LabelManagedByValue || *route.OwnerReferences[0].UID != robot.UID {
		t.Errorf("route %s/%s, labels %v, owner %v: want the Deployment's name, its labels, the Robot as controller", *route.Namespace, *route.Name, route.Labels, route.OwnerReferences)
	}
	var parents []string
	for _, p := range route.Spec.ParentRefs {
		parents = append(parents, fmt.Sprintf("%s/%s/%s/%s/%s", *p.Group, *p.Kind, *p.Namespace, *p.Name, ptrString(p.SectionName)))
	}
	if got, want := fmt.Sprint(parents), "[gateway.networking.k8s.io/Gateway/infra/public/https gateway.networking.k8s.io/Gateway/"+robot.Namespace+"/internal/]"; got != want {
		t.Errorf("parents %s, want %s", got, want)
	}
	if got := fmt.Sprint(route.Spec.Hostnames); got != "[web.example.com *.web.example.com]" {
		t.Errorf("hostnames %s", got)
	}
	rule := route.Spec.Rules[0]
	var paths []string
	for _, m := range rule.Matches {
		paths = append(paths, string(*m.Path.Type)+" "+*m.Path.Value)
	}
	if got := fmt.Sprint(paths); got != "[PathPrefix /api PathPrefix /static]" {
		t.Errorf("matches %s", got)
	}
	backend := rule.BackendRefs[0]
	if *backend.Name != "web" || *backend.Port != 8080 || *backend.Kind != "Service" || *backend.Group != "" || *backend.Weight != 1 {
		t.Errorf("backend %s port %d kind %s group %q weight %d: want Service web on 8080", *backend.Name, *backend.Port, *backend.Kind, *backend.Group, *backend.Weight)
	}
	if route.Annotations[AnnotationSpecHash] == "" {
		t.Error("no spec hash: a hostname the Robot drops would never be removed")
	}

	robot.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "public"}}}
	route, err = NewHTTPRoute(robot)
	if err != nil {
		t.Fatal(err)
	}
	if m := route.Spec.Rules[0].Matches; len(m) != 1 || *m[0].Path.Value != "/" || *m[0].Path.Type != gatewayv1.PathMatchPathPrefix {
		t.Errorf("default matches %v, want PathPrefix /", m)
	}
	if *route.Spec.Rules[0].BackendRefs[0].Port != 9090 {
		t.Errorf("default port %d, want the first, 9090", *route.Spec.Rules[0].BackendRefs[0].Port)
	}

	// Stored through v1alpha1 around the v1beta1 rules: reported, not sent.
	for _, broken := range []func(*robotv1beta1.Robot){
		func(r *robotv1beta1.Robot) { r.Spec.HTTP.Port = "nope" },
		func(r *robotv1beta1.Robot) {
			r.Spec.Service = &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeNone}
		},
	} {
		r := robot.DeepCopy()
		broken(r)
		var invalid *outcome.InvalidSpecError
		if _, err := NewHTTPRoute(r); !errors.As(err, &invalid) {
			t.Errorf("spec %+v: %v, want an invalid spec", r.Spec.HTTP, err)
		}
	}
}

func ptrString[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// TestHTTPRouteOnTheServicePort: the route reaches the Service, so it sends
// requests to the port's servicePort, not to the container's number.
func TestHTTPRouteOnTheServicePort(t *testing.T) {
	robot := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeClusterIP)
	robot.Spec.Ports = []robotv1beta1.RobotPort{
		{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
		{Name: "http", ContainerPort: 8080, ServicePort: 80, Protocol: corev1.ProtocolTCP},
	}
	robot.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "public"}}, Port: "http"}
	route, err := NewHTTPRoute(robot)
	if err != nil {
		t.Fatal(err)
	}
	if port := *route.Spec.Rules[0].BackendRefs[0].Port; port != 80 {
		t.Errorf("backend port %d, want the Service's, 80", port)
	}
}
