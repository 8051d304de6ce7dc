package policy

import (
	"strings"
	"testing"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

func TestServiceMetadata(t *testing.T) {
	for _, tt := range []struct {
		name    string
		flags   []string
		service robotv1beta1.RobotService
		// reason is "" when the Service is allowed; refused is then a part
		// of the message.
		reason, refused string
	}{
		{"default, a cloud's load balancer settings", nil, robotv1beta1.RobotService{
			Annotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true", "prometheus.io/scrape": "true"},
			Labels:      map[string]string{"team": "a"}, LoadBalancerClass: "example.com/internal-lb"}, "", ""},
		// What has another controller expose a ClusterIP Service is off by
		// default.
		{"default, tailscale", nil, robotv1beta1.RobotService{Annotations: map[string]string{"tailscale.com/expose": "true"}},
			robotv1beta1.ReasonServiceMetadataNotAllowed, "service.annotations key tailscale.com/expose is not allowed"},
		{"default, external-dns", nil, robotv1beta1.RobotService{Annotations: map[string]string{"external-dns.alpha.kubernetes.io/hostname": "login.victim.example.com"}},
			robotv1beta1.ReasonServiceMetadataNotAllowed, "-service-annotations=* does not allow"},
		{"default, GKE's standalone NEGs", nil, robotv1beta1.RobotService{Annotations: map[string]string{"cloud.google.com/neg": `{"exposed_ports": {"8080":{}}}`}},
			robotv1beta1.ReasonServiceMetadataNotAllowed, "cloud.google.com/neg"},
		{"default, Linkerd's multicluster export", nil, robotv1beta1.RobotService{Labels: map[string]string{"mirror.linkerd.io/exported": "true"}},
			robotv1beta1.ReasonServiceMetadataNotAllowed, "service.labels key mirror.linkerd.io/exported"},
		{"an exposing prefix listed", []string{"-service-annotations=*,external-dns.alpha.kubernetes.io/"},
			robotv1beta1.RobotService{Annotations: map[string]string{"external-dns.alpha.kubernetes.io/hostname": "shop.example.com", "prometheus.io/scrape": "true"}}, "", ""},
		{"an exposing prefix listed is not the others", []string{"-service-annotations=*,external-dns.alpha.kubernetes.io/"},
			robotv1beta1.RobotService{Annotations: map[string]string{"external-dns.alpha.kubernetes.io/hostname": "shop.example.com", "tailscale.com/expose": "true"}},
			robotv1beta1.ReasonServiceMetadataNotAllowed, "key tailscale.com/expose is not"},
		{"a strict list", []string{"-service-annotations=prometheus.io/"},
			robotv1beta1.RobotService{Annotations: map[string]string{"prometheus.io/scrape": "true", "b.example.com/x": "1", "a.example.com/x": "1"}},
			robotv1beta1.ReasonServiceMetadataNotAllowed, `keys a.example.com/x, b.example.com/x are not allowed: -service-annotations allows only "prometheus.io/"`},
		{"none", []string{"-service-labels="}, robotv1beta1.RobotService{Labels: map[string]string{"team": "a"}},
			robotv1beta1.ReasonServiceMetadataNotAllowed, "-service-labels allows nothing"},
		{"none, and none asked", []string{"-service-labels=", "-service-annotations="}, robotv1beta1.RobotService{}, "", ""},
		{"a class listed", []string{"-service-load-balancer-classes=example.com/internal-lb"},
			robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeLoadBalancer, LoadBalancerClass: "example.com/internal-lb"}, "", ""},
		{"another class", []string{"-service-load-balancer-classes=example.com/internal-lb"},
			robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeLoadBalancer, LoadBalancerClass: "tailscale"},
			robotv1beta1.ReasonLoadBalancerClassNotAllowed, `service.loadBalancerClass "tailscale"`},
		{"no class, none allowed", []string{"-service-load-balancer-classes="},
			robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeLoadBalancer}, "", ""},
		{"a class, none allowed", []string{"-service-load-balancer-classes="},
			robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeLoadBalancer, LoadBalancerClass: "example.com/internal-lb"},
			robotv1beta1.ReasonLoadBalancerClassNotAllowed, "allows nothing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parse(t, tt.flags...)
			if err != nil {
				t.Fatal(err)
			}
			robot := routeRobot(publicGateway)
			robot.Spec.Service = &tt.service
			err = p.CheckServiceMetadata(robot)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			reason, message := notAllowed(t, err)
			if reason != tt.reason || !strings.Contains(message, tt.refused) {
				t.Errorf("%s: %s\nwant %s saying %q", reason, message, tt.reason, tt.refused)
			}
		})
	}
}

// TestExposingKeysNeedAnEntryOfTheirOwn: "*" allows no key of the exposing
// lists, and an entry that names one's prefix allows it.
func TestExposingKeysNeedAnEntryOfTheirOwn(t *testing.T) {
	for _, prefix := range ExposingAnnotations {
		key := prefix
		if strings.HasSuffix(key, "/") {
			key += "x"
		}
		if refused := refusedKeys(map[string]string{key: "v"}, []string{"*"}, ExposingAnnotations); len(refused) != 1 {
			t.Errorf("* allows the annotation %s", key)
		}
		if refused := refusedKeys(map[string]string{key: "v"}, []string{"*", prefix}, ExposingAnnotations); len(refused) != 0 {
			t.Errorf("*,%s refuses the annotation %s", prefix, key)
		}
	}
}

func TestManyKeysAreCounted(t *testing.T) {
	p, err := parse(t, "-service-annotations=")
	if err != nil {
		t.Fatal(err)
	}
	robot := routeRobot(publicGateway)
	robot.Spec.Service = &robotv1beta1.RobotService{Annotations: map[string]string{}}
	for _, key := range []string{"a/1", "a/2", "a/3", "a/4", "a/5", "a/6", "a/7"} {
		robot.Spec.Service.Annotations[key] = ""
	}
	_, message := notAllowed(t, p.CheckServiceMetadata(robot))
	if !strings.Contains(message, "a/1, a/2, a/3, a/4, a/5 are not allowed (and 2 more)") {
		t.Errorf("message %q, want the first five keys and a count of the others", message)
	}
}
