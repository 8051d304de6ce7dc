package workload

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/robottest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

func TestNewService(t *testing.T) {
	http := robotv1beta1.RobotPort{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}
	httpPort := corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 8080, TargetPort: intstr.FromString("http")}
	withPorts := func(ports []robotv1beta1.RobotPort, service *robotv1beta1.RobotService) *robotv1beta1.Robot {
		robot := robottest.NewRobot("web", 1)
		robot.Spec.Ports, robot.Spec.Service = ports, service
		return robot
	}
	one := []robotv1beta1.RobotPort{http}
	named := withPorts(one, nil)
	named.Spec.DeploymentName = "web-v2"
	for _, tt := range []struct {
		name      string
		robot     *robotv1beta1.Robot
		wantName  string // "" for no Service
		wantType  corev1.ServiceType
		wantPorts []corev1.ServicePort
	}{
		{name: "no port", robot: withPorts(nil, nil)},
		{name: "empty ports", robot: withPorts([]robotv1beta1.RobotPort{}, nil)},
		{name: "no port, NodePort", robot: withPorts(nil, &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeNodePort})},
		{"port, no service field", withPorts(one, nil), "web", corev1.ServiceTypeClusterIP, []corev1.ServicePort{httpPort}},
		{"port, empty type", withPorts(one, &robotv1beta1.RobotService{}), "web", corev1.ServiceTypeClusterIP, []corev1.ServicePort{httpPort}},
		{"ClusterIP", withPorts(one, &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeClusterIP}), "web", corev1.ServiceTypeClusterIP, []corev1.ServicePort{httpPort}},
		{"NodePort", withPorts(one, &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeNodePort}), "web", corev1.ServiceTypeNodePort, []corev1.ServicePort{httpPort}},
		{"LoadBalancer", withPorts(one, &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeLoadBalancer}), "web", corev1.ServiceTypeLoadBalancer, []corev1.ServicePort{httpPort}},
		{name: "None", robot: withPorts(one, &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeNone})},
		{"deploymentName", named, "web-v2", corev1.ServiceTypeClusterIP, []corev1.ServicePort{httpPort}},
		{"two ports, each under its name and protocol", withPorts([]robotv1beta1.RobotPort{
			{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
			http,
		}, nil), "web", corev1.ServiceTypeClusterIP, []corev1.ServicePort{
			{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 5353, TargetPort: intstr.FromString("dns")},
			httpPort,
		}},
		{"a port without a protocol is TCP", withPorts([]robotv1beta1.RobotPort{{Name: "plain", ContainerPort: 80}}, nil), "web", corev1.ServiceTypeClusterIP, []corev1.ServicePort{
			{Name: "plain", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("plain")},
		}},
		{name: "UDP only, None", robot: withPorts([]robotv1beta1.RobotPort{{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP}},
			&robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeNone})},
		{"servicePort: the Service's number, the container port's name as target", withPorts([]robotv1beta1.RobotPort{
			{Name: "http", ContainerPort: 8080, ServicePort: 80, Protocol: corev1.ProtocolTCP},
		}, nil), "web", corev1.ServiceTypeClusterIP, []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http")},
		}},
		{"servicePort equal to containerPort: the Service without it", withPorts([]robotv1beta1.RobotPort{
			{Name: "http", ContainerPort: 8080, ServicePort: 8080, Protocol: corev1.ProtocolTCP},
		}, nil), "web", corev1.ServiceTypeClusterIP, []corev1.ServicePort{httpPort}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			desired := NewService(tt.robot)
			if tt.wantName == "" {
				if desired != nil {
					t.Fatalf("newService = %s, want no Service", robottest.MustJSON(t, desired))
				}
				if WantsService(tt.robot) {
					t.Error("WantsService = true, want false")
				}
				return
			}
			if desired == nil || !WantsService(tt.robot) {
				t.Fatal("newService = nil, want a Service")
			}
			var s corev1.Service
			if err := RoundTrip(desired, &s); err != nil {
				t.Fatal(err)
			}
			if s.Name != tt.wantName || s.Namespace != tt.robot.Namespace {
				t.Errorf("Service %s/%s, want %s/%s", s.Namespace, s.Name, tt.robot.Namespace, tt.wantName)
			}
			if s.Spec.Type != tt.wantType {
				t.Errorf("type %q, want %q", s.Spec.Type, tt.wantType)
			}
			if want := selectorLabels(tt.robot); !maps.Equal(s.Spec.Selector, want) {
				t.Errorf("selector %v, want the pods' %v", s.Spec.Selector, want)
			}
			if !maps.Equal(s.Labels, ObjectLabels(tt.robot)) {
				t.Errorf("labels %v, want %v", s.Labels, ObjectLabels(tt.robot))
			}
			if d := diff.Diff(tt.wantPorts, s.Spec.Ports); d != "" {
				t.Errorf("ports (-want +got):\n%s", d)
			}
			ref := metav1.GetControllerOf(&s)
			if ref == nil || ref.UID != tt.robot.UID || ref.APIVersion != "robot.dev/v1beta1" || ref.Kind != "Robot" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
				t.Errorf("controller reference %+v, want the Robot's, robot.dev/v1beta1, with blockOwnerDeletion", ref)
			}
			// Nothing the API server allocates or defaults.
			if s.Spec.ClusterIP != "" || s.Spec.SessionAffinity != "" || s.Spec.ExternalTrafficPolicy != "" || s.Spec.Ports[0].NodePort != 0 {
				t.Errorf("the Service sets fields the API server fills in: %+v", s.Spec)
			}
		})
	}
}

// TestServiceSpecHash: the Service's spec hash changes with any field the
// Robot sets on it, a port removed among them, which no comparison of live
// fields would find; and with nothing else.
func TestServiceSpecHash(t *testing.T) {
	hash := func(r *robotv1beta1.Robot) string { return NewService(r).Annotations[AnnotationSpecHash] }
	robot := robottest.RolloutRobot()
	if hash(robot) == "" || hash(robot) != hash(robot.DeepCopy()) {
		t.Fatalf("hash %q, want the same one for the same Robot", hash(robot))
	}
	for name, change := range map[string]func(*robotv1beta1.Robot){
		"a port removed": func(r *robotv1beta1.Robot) { r.Spec.Ports = r.Spec.Ports[1:] },
		"a port renamed": func(r *robotv1beta1.Robot) { r.Spec.Ports[0].Name = "resolver" },
		"the type":       func(r *robotv1beta1.Robot) { r.Spec.Service.Type = robotv1beta1.ServiceTypeNodePort },
		"an annotation":  func(r *robotv1beta1.Robot) { r.Spec.Service.Annotations = map[string]string{"example.com/a": "1"} },
		"a label":        func(r *robotv1beta1.Robot) { r.Spec.Service.Labels = map[string]string{"team": "blue"} },
		"internalTrafficPolicy": func(r *robotv1beta1.Robot) {
			r.Spec.Service.InternalTrafficPolicy = corev1.ServiceInternalTrafficPolicyLocal
		},
		"a servicePort": func(r *robotv1beta1.Robot) { r.Spec.Ports[0].ServicePort = 53 },
		"a nodePort": func(r *robotv1beta1.Robot) {
			r.Spec.Service.Type = robotv1beta1.ServiceTypeNodePort
			r.Spec.Ports[0].NodePort = 30053
		},
	} {
		changed := robot.DeepCopy()
		change(changed)
		if hash(changed) == hash(robot) {
			t.Errorf("%s: the hash is the same", name)
		}
	}
	for name, change := range map[string]func(*robotv1beta1.Robot){
		"the image":    func(r *robotv1beta1.Robot) { r.Spec.Image = "registry.example/robot:2.0" },
		"the strategy": func(r *robotv1beta1.Robot) { r.Spec.Strategy = nil },
		"the status":   func(r *robotv1beta1.Robot) { r.Status.ReadyReplicas = 3 },
	} {
		changed := robot.DeepCopy()
		change(changed)
		if hash(changed) != hash(robot) {
			t.Errorf("%s: the hash changes, and the Service would be applied for nothing", name)
		}
	}
}

// TestNewServiceMetadataAndTraffic: the Service carries the annotations,
// labels and traffic fields the Robot sets, next to the operator's own, and
// nothing of them when the Robot sets none, so that the API server's
// defaults stand and nobody owns them.
func TestNewServiceMetadataAndTraffic(t *testing.T) {
	base := func(serviceType robotv1beta1.ServiceType) *robotv1beta1.Robot {
		return robottest.NewServiceRobot("web", serviceType)
	}
	full := robottest.LoadBalancerRobot()
	for _, tt := range []struct {
		name        string
		robot       *robotv1beta1.Robot
		annotations map[string]string // besides the spec hash
		labels      map[string]string // besides the operator's
		spec        corev1.ServiceSpec
	}{
		{name: "none set, ClusterIP", robot: base(robotv1beta1.ServiceTypeClusterIP)},
		{name: "none set, LoadBalancer", robot: base(robotv1beta1.ServiceTypeLoadBalancer)},
		{name: "empty maps", robot: func() *robotv1beta1.Robot {
			r := base(robotv1beta1.ServiceTypeClusterIP)
			r.Spec.Service.Annotations, r.Spec.Service.Labels = map[string]string{}, map[string]string{}
			return r
		}()},
		{name: "every field, LoadBalancer", robot: full,
			annotations: full.Spec.Service.Annotations, labels: full.Spec.Service.Labels,
			spec: corev1.ServiceSpec{
				ExternalTrafficPolicy:    corev1.ServiceExternalTrafficPolicyLocal,
				InternalTrafficPolicy:    ptr.To(corev1.ServiceInternalTrafficPolicyLocal),
				LoadBalancerSourceRanges: []string{"10.0.0.0/8", "2001:db8::/32"},
				LoadBalancerClass:        ptr.To("example.com/internal-lb"),
			}},
		{name: "internalTrafficPolicy, ClusterIP", robot: func() *robotv1beta1.Robot {
			r := base(robotv1beta1.ServiceTypeClusterIP)
			r.Spec.Service.InternalTrafficPolicy = corev1.ServiceInternalTrafficPolicyCluster
			return r
		}(), spec: corev1.ServiceSpec{InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster)}},
		{name: "externalTrafficPolicy, NodePort", robot: func() *robotv1beta1.Robot {
			r := base(robotv1beta1.ServiceTypeNodePort)
			r.Spec.Service.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			return r
		}(), spec: corev1.ServiceSpec{ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s corev1.Service
			if err := RoundTrip(NewService(tt.robot), &s); err != nil {
				t.Fatal(err)
			}
			annotations := maps.Clone(s.Annotations)
			if annotations[AnnotationSpecHash] == "" {
				t.Errorf("annotations %v, want the spec hash among them", s.Annotations)
			}
			delete(annotations, AnnotationSpecHash)
			if len(annotations) > 0 || len(tt.annotations) > 0 {
				if d := diff.Diff(tt.annotations, annotations); d != "" {
					t.Errorf("annotations besides the spec hash (-want +got):\n%s", d)
				}
			}
			wantLabels := ObjectLabels(tt.robot)
			maps.Copy(wantLabels, tt.labels)
			if d := diff.Diff(wantLabels, s.Labels); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
			got := corev1.ServiceSpec{
				ExternalTrafficPolicy:    s.Spec.ExternalTrafficPolicy,
				InternalTrafficPolicy:    s.Spec.InternalTrafficPolicy,
				LoadBalancerSourceRanges: s.Spec.LoadBalancerSourceRanges,
				LoadBalancerClass:        s.Spec.LoadBalancerClass,
			}
			if d := diff.Diff(tt.spec, got); d != "" {
				t.Errorf("traffic fields (-want +got):\n%s", d)
			}
		})
	}
}

// TestServiceLabelsDoNotOverrideTheOperators: a Robot stored around the
// CRD's rule cannot take the labels the operator finds its Service by: the
// operator's win in the Service, and the Service is refused before it is
// sent. The Deployment does not depend on the Service, and is built.
func TestServiceLabelsDoNotOverrideTheOperators(t *testing.T) {
	robot := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeClusterIP)
	robot.Spec.Service.Labels = map[string]string{LabelManagedBy: "someone-else", LabelRobot: "other"}
	if s := NewService(robot); s.Labels[LabelManagedBy] != LabelManagedByValue || s.Labels[LabelRobot] != robot.Name {
		t.Errorf("labels %v, want the operator's", s.Labels)
	}
	var invalid *outcome.InvalidSpecError
	if err := ValidateServiceName(robot); !errors.As(err, &invalid) || !strings.Contains(err.Error(), "spec.service.labels cannot set") {
		t.Errorf("ValidateServiceName: %v, want the labels refused as an invalid spec", err)
	}
	if _, err := NewDeployment(robot); err != nil {
		t.Errorf("NewDeployment: %v, want the Deployment built whatever the Service's labels", err)
	}
}

// TestReservedLabelsAreTheOperators: the labels that the API's validation
// (and the CRD's rules, TestValidationMatchesTheCRD) keep out of podLabels
// and service.labels are exactly those the operator puts on its objects.
func TestReservedLabelsAreTheOperators(t *testing.T) {
	got := slices.Sorted(maps.Keys(ObjectLabels(robottest.NewRobot("web", 1))))
	want := slices.Sorted(slices.Values(robotv1beta1.ReservedLabels))
	if !slices.Equal(got, want) {
		t.Errorf("the operator's labels are %v, the reserved ones %v", got, want)
	}
	if !slices.Equal(slices.Sorted(slices.Values(ReservedPodLabels)), want) {
		t.Errorf("ReservedPodLabels %v, the API's %v", ReservedPodLabels, want)
	}
}

// TestServiceNodePorts: a port's nodePort is on the Service as the Robot
// sets it, and a port without one gets none from the operator: the API
// server picks it, and nobody fights over it.
func TestServiceNodePorts(t *testing.T) {
	robot := robottest.NewRobot("web", 1)
	robot.Spec.Service = &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeNodePort}
	robot.Spec.Ports = []robotv1beta1.RobotPort{
		{Name: "http", ContainerPort: 8080, ServicePort: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
	}
	var s corev1.Service
	if err := RoundTrip(NewService(robot), &s); err != nil {
		t.Fatal(err)
	}
	want := []corev1.ServicePort{
		{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080, TargetPort: intstr.FromString("http")},
		{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromString("metrics")},
	}
	if d := diff.Diff(want, s.Spec.Ports); d != "" {
		t.Errorf("ports (-want +got):\n%s", d)
	}
}
