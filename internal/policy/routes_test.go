package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/outcome"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// routeRobot is a Robot of namespace tenant-a whose route attaches to
// gateways (namespace/name, or a name of the Robot's namespace) and answers
// for hostnames.
func routeRobot(gateways []robotv1beta1.RobotGateway, hostnames ...string) *robotv1beta1.Robot {
	return &robotv1beta1.Robot{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "tenant-a"},
		Spec:       robotv1beta1.RobotSpec{HTTP: &robotv1beta1.RobotHTTP{Gateways: gateways, Hostnames: hostnames}},
	}
}

var (
	publicGateway = []robotv1beta1.RobotGateway{{Name: "public", Namespace: "infra"}}
	ownGateway    = []robotv1beta1.RobotGateway{{Name: "own"}}
)

// notAllowed returns the reason and message of err, a NotAllowedError, or
// fails.
func notAllowed(t *testing.T, err error) (string, string) {
	t.Helper()
	var refused *outcome.NotAllowedError
	if !errors.As(err, &refused) {
		t.Fatalf("err = %v (%T), want an outcome.NotAllowedError", err, err)
	}
	return refused.Reason, refused.Message
}

func TestRoutes(t *testing.T) {
	for _, tt := range []struct {
		name  string
		flags []string
		robot *robotv1beta1.Robot
		// refused is "" when the route is allowed, or a part of the
		// message that says why not.
		refused string
	}{
		// The defaults allow every route the CRD admits: a route made
		// before the switches existed keeps being kept.
		{"default, any Gateway and hostname", nil, routeRobot(publicGateway, "login.victim.example.com", "*.example.com"), ""},
		{"default, no hostnames", nil, routeRobot(publicGateway), ""},
		{"no spec.http, routes off", []string{"-http-routes=false"}, &robotv1beta1.Robot{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a"}}, ""},
		{"routes off", []string{"-http-routes=false"}, routeRobot(ownGateway, "shop.example.com"), "-http-routes=false"},

		{"a Gateway listed", []string{"-route-gateways=infra/public"}, routeRobot(publicGateway), ""},
		{"a Gateway of a namespace listed", []string{"-route-gateways=infra/*"}, routeRobot(publicGateway), ""},
		{"another Gateway", []string{"-route-gateways=infra/internal"}, routeRobot(publicGateway), `Gateway infra/public`},
		{"the Robot's own namespace is no exception", []string{"-route-gateways=infra/*"}, routeRobot(ownGateway), `Gateway tenant-a/own`},
		{"the namespace defaults to the Robot's", []string{"-route-gateways=tenant-a/own"}, routeRobot(ownGateway), ""},
		{"the second Gateway", []string{"-route-gateways=infra/public"},
			routeRobot(append(publicGateway, robotv1beta1.RobotGateway{Name: "internal", Namespace: "kube-system"})), "spec.http.gateways[1], Gateway kube-system/internal"},
		{"no Gateway at all", []string{"-route-gateways="}, routeRobot(publicGateway), "allows nothing"},

		{"a hostname of the namespace", []string{"-route-hostnames=tenant-a=shop.example.com"}, routeRobot(publicGateway, "shop.example.com"), ""},
		{"another namespace's hostname", []string{"-route-hostnames=tenant-b=shop.example.com"}, routeRobot(publicGateway, "shop.example.com"), `"shop.example.com", is not a hostname namespace tenant-a may use`},
		{"an exact hostname is not its subdomains", []string{"-route-hostnames=tenant-a=example.com"}, routeRobot(publicGateway, "shop.example.com"), "hostnames[0]"},
		{"an exact hostname is not a wildcard", []string{"-route-hostnames=tenant-a=shop.example.com"}, routeRobot(publicGateway, "*.shop.example.com"), "hostnames[0]"},
		{"a name under a suffix", []string{"-route-hostnames=tenant-a=*.a.example.com"}, routeRobot(publicGateway, "shop.a.example.com", "x.y.a.example.com"), ""},
		{"the suffix's own name is not under it", []string{"-route-hostnames=tenant-a=*.a.example.com"}, routeRobot(publicGateway, "a.example.com"), "hostnames[0]"},
		{"a name that only ends like the suffix", []string{"-route-hostnames=tenant-a=*.a.example.com"}, routeRobot(publicGateway, "shop.evila.example.com"), "hostnames[0]"},
		{"the suffix's wildcard", []string{"-route-hostnames=tenant-a=*.a.example.com"}, routeRobot(publicGateway, "*.a.example.com", "*.shop.a.example.com"), ""},
		{"a wider wildcard", []string{"-route-hostnames=tenant-a=*.a.example.com"}, routeRobot(publicGateway, "*.example.com"), `"*.example.com"`},
		{"the second hostname", []string{"-route-hostnames=tenant-a=*.a.example.com"}, routeRobot(publicGateway, "shop.a.example.com", "login.victim.example.com"), "hostnames[1]"},
		{"every namespace's entry", []string{"-route-hostnames=*=*.shared.example.com,tenant-a=shop.example.com"}, routeRobot(publicGateway, "shop.example.com", "a.shared.example.com"), ""},
		{"no hostnames answer for every host", []string{"-route-hostnames=tenant-a=*.a.example.com"}, routeRobot(publicGateway), "spec.http.hostnames is empty"},
		{"no hostnames with *", []string{"-route-hostnames=tenant-a=*"}, routeRobot(publicGateway), ""},
		{"a namespace with no entry", []string{"-route-hostnames=tenant-b=*"}, routeRobot(publicGateway, "shop.example.com"), "allows it nothing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parse(t, tt.flags...)
			if err != nil {
				t.Fatal(err)
			}
			err = p.CheckRoute(tt.robot)
			if tt.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			reason, message := notAllowed(t, err)
			if reason != robotv1beta1.ReasonRouteNotAllowed || !strings.Contains(message, tt.refused) {
				t.Errorf("%s: %s\nwant %s saying %q", reason, message, robotv1beta1.ReasonRouteNotAllowed, tt.refused)
			}
		})
	}
}

func TestRouteFlagsRefuseWhatTheyCannotRead(t *testing.T) {
	for _, flag := range []string{
		"-route-gateways=public",
		"-route-gateways=infra/",
		"-route-gateways=Infra_NS/public",
		"-route-hostnames=*.example.com",
		"-route-hostnames=tenant-a=",
		"-route-hostnames=tenant-a=Shop.example.com",
		"-route-hostnames=tenant-a=a.*.example.com",
		"-route-hostnames=Tenant_A=shop.example.com",
	} {
		name, _, _ := strings.Cut(strings.TrimPrefix(flag, "-"), "=")
		if _, err := parse(t, flag); err == nil || !strings.Contains(err.Error(), "-"+name) {
			t.Errorf("%s: err = %v, want one naming the flag", flag, err)
		}
	}
}

// TestZeroPolicyAllowsEverything: the zero Policy, which the tests of other
// packages use, allows what the CRD admits, however far it reaches.
func TestZeroPolicyAllowsEverything(t *testing.T) {
	var p Policy
	robot := routeRobot(publicGateway, "*.example.com")
	grace := int64(robotv1beta1.MaxTerminationGracePeriodSeconds)
	robot.Spec.TerminationGracePeriodSeconds = &grace
	robot.Spec.PreStop = &robotv1beta1.RobotPreStop{Sleep: &robotv1beta1.RobotSleep{Seconds: grace - 1}}
	robot.Spec.Service = &robotv1beta1.RobotService{
		Annotations:       map[string]string{"tailscale.com/expose": "true"},
		Labels:            map[string]string{"mirror.linkerd.io/exported": "true"},
		LoadBalancerClass: "tailscale",
	}
	for name, err := range map[string]error{"route": p.CheckRoute(robot), "service": p.CheckServiceMetadata(robot), "shutdown": p.CheckShutdown(robot)} {
		if err != nil {
			t.Errorf("the zero Policy refuses the %s: %v", name, err)
		}
	}
}
