package drift

import (
	"errors"
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// liveService returns robot's Service as the API server holds it after the
// operator applied it: with the fields the API server fills in.
func liveService(t *testing.T, robot *robotv1beta1.Robot) *corev1.Service {
	desired := workload.NewService(robot)
	if desired == nil {
		t.Fatalf("Robot %s asks for no Service", robot.Name)
	}
	return robottest.LiveServiceOf(t, desired)
}

func TestServiceDrift(t *testing.T) {
	for _, tt := range []struct {
		name        string
		serviceType robotv1beta1.ServiceType
		edit        func(*corev1.Service)
		want        string // a substring of the drift; "" for none
	}{
		{"as applied, ClusterIP", robotv1beta1.ServiceTypeClusterIP, func(*corev1.Service) {}, ""},
		{"as applied, NodePort", robotv1beta1.ServiceTypeNodePort, func(*corev1.Service) {}, ""},
		{"as applied, LoadBalancer", robotv1beta1.ServiceTypeLoadBalancer, func(*corev1.Service) {}, ""},
		{"others' label and annotation", robotv1beta1.ServiceTypeClusterIP, func(s *corev1.Service) {
			s.Labels["team"] = "blue"
			s.Annotations["example.com/note"] = "x"
		}, ""},
		{"another writer's extra port", robotv1beta1.ServiceTypeClusterIP, func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9090)})
		}, ""},
		{"selector", robotv1beta1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "other"} }, "spec.selector"},
		{"selector gains a label", robotv1beta1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.Selector["extra"] = "x" }, "spec.selector"},
		{"target port", robotv1beta1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(8080) },
			`targetPort is 8080; the Robot asks for "http"`},
		{"port name", robotv1beta1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.Ports[0].Name = "web" }, ".name"},
		{"port changed", robotv1beta1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.Ports[0].Port = 9090 }, "is not set"},
		{"type", robotv1beta1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }, "spec.type"},
		{"label removed", robotv1beta1.ServiceTypeClusterIP, func(s *corev1.Service) { delete(s.Labels, workload.LabelManagedBy) }, "metadata.labels"},
		{"owner", robotv1beta1.ServiceTypeClusterIP, func(s *corev1.Service) { s.OwnerReferences[0].UID = "other" }, "controller reference"},
		{"owner of robot.dev/v1alpha1", robotv1beta1.ServiceTypeClusterIP, func(s *corev1.Service) { s.OwnerReferences[0].APIVersion = "robot.dev/v1alpha1" }, "controller reference"},
		{"spec hash", robotv1beta1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Annotations[workload.AnnotationSpecHash] = "old" }, "the Robot's spec changed"},
		{"no spec hash", robotv1beta1.ServiceTypeClusterIP, func(s *corev1.Service) { s.Annotations = nil }, "the Robot's spec changed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.NewServiceRobot("web", tt.serviceType)
			live := liveService(t, robot)
			tt.edit(live)
			got := ServiceDrift(workload.NewService(robot), live)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("drift %q, want none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("drift %q, want it to name %q", got, tt.want)
			}
		})
	}
}

// TestServiceDriftAfterChangesOfTheRobot: what the Robot asks for differs
// from the Service it had before.
func TestServiceDriftAfterChangesOfTheRobot(t *testing.T) {
	robot := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeNodePort)
	live := liveService(t, robot)
	robot.Spec.Service.Type = robotv1beta1.ServiceTypeClusterIP
	if got := ServiceDrift(workload.NewService(robot), live); !strings.Contains(got, `spec.type is "NodePort"`) {
		t.Errorf("NodePort to ClusterIP: drift %q", got)
	}
	robot.Spec.Ports[0].ContainerPort = 9090
	if got := ServiceDrift(workload.NewService(robot), liveService(t, robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeClusterIP))); got == "" {
		t.Error("port 8080 to 9090: no drift")
	}
}

// TestServiceDriftOfSeveralPorts: each of a Robot's ports is the Service's,
// found by its number and protocol; a port the Robot adds is drift by its
// value, and one it removes by the spec hash, so that the apply drops it.
func TestServiceDriftOfSeveralPorts(t *testing.T) {
	ports := func(s *corev1.Service) []corev1.ServicePort { return s.Spec.Ports }
	for _, tt := range []struct {
		name  string
		robot func(*robotv1beta1.Robot)
		edit  func(*corev1.Service)
		want  string // a substring of the drift; "" for none
	}{
		{name: "as applied"},
		{name: "as applied, NodePort", robot: func(r *robotv1beta1.Robot) { r.Spec.Service.Type = robotv1beta1.ServiceTypeNodePort }},
		{name: "a port's protocol", edit: func(s *corev1.Service) { ports(s)[0].Protocol = corev1.ProtocolTCP },
			want: `spec.ports[port=5353,protocol="UDP"] is not set`},
		{name: "a port's target", edit: func(s *corev1.Service) { ports(s)[2].TargetPort = intstr.FromString("http") },
			want: `spec.ports[port=9090,protocol="TCP"].targetPort is "http"; the Robot asks for "metrics"`},
		{name: "a port's name", edit: func(s *corev1.Service) { ports(s)[1].Name = "web" },
			want: `spec.ports[port=8080,protocol="TCP"].name is "web"; the Robot asks for "http"`},
		{name: "a port removed", edit: func(s *corev1.Service) { s.Spec.Ports = ports(s)[1:] },
			want: `spec.ports[port=5353,protocol="UDP"] is not set`},
		{name: "a port added to the Robot", robot: func(r *robotv1beta1.Robot) {
			r.Spec.Ports = append(r.Spec.Ports, robotv1beta1.RobotPort{Name: "admin", ContainerPort: 9000, Protocol: corev1.ProtocolTCP})
		}, want: `spec.ports[port=9000,protocol="TCP"] is not set`},
		{name: "a port removed from the Robot", robot: func(r *robotv1beta1.Robot) { r.Spec.Ports = r.Spec.Ports[:2] },
			want: "the Robot's spec changed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := robottest.RolloutRobot()
			robot := before.DeepCopy()
			if tt.robot != nil {
				tt.robot(robot)
				if tt.want == "" {
					before = robot
				}
			}
			live := liveService(t, before)
			if tt.edit != nil {
				tt.edit(live)
			}
			got := ServiceDrift(workload.NewService(robot), live)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("drift %q, want none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("drift %q, want it to name %q", got, tt.want)
			}
		})
	}
}

// TestServiceDriftOfMetadataAndTraffic: the annotations, labels and traffic
// fields the Robot sets are the operator's, each annotation and label by its
// key: another writer's keys next to them are no drift, an edit of one of
// them is, and one the Robot removes shows as its spec changed, so that the
// apply removes it.
func TestServiceDriftOfMetadataAndTraffic(t *testing.T) {
	for _, tt := range []struct {
		name  string
		robot func(*robotv1beta1.Robot)
		edit  func(*corev1.Service)
		want  string // a substring of the drift; "" for none
	}{
		{name: "as applied"},
		{name: "a cloud controller's annotation and label", edit: func(s *corev1.Service) {
			s.Annotations["service.beta.kubernetes.io/aws-load-balancer-id"] = "lb-123"
			s.Labels["cloud.example.com/zone"] = "a"
		}},
		{name: "a Robot's annotation edited", edit: func(s *corev1.Service) {
			s.Annotations["service.beta.kubernetes.io/aws-load-balancer-scheme"] = "internet-facing"
		}, want: `metadata.annotations.service.beta.kubernetes.io/aws-load-balancer-scheme is "internet-facing"; the Robot asks for "internal"`},
		{name: "a Robot's annotation removed", edit: func(s *corev1.Service) {
			delete(s.Annotations, "service.beta.kubernetes.io/aws-load-balancer-type")
		}, want: "metadata.annotations.service.beta.kubernetes.io/aws-load-balancer-type is not set"},
		{name: "a Robot's label edited", edit: func(s *corev1.Service) { s.Labels["team"] = "other" },
			want: `metadata.labels.team is "other"; the Robot asks for "edge"`},
		{name: "externalTrafficPolicy", edit: func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster },
			want: "spec.externalTrafficPolicy"},
		{name: "internalTrafficPolicy", edit: func(s *corev1.Service) {
			s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
		},
			want: "spec.internalTrafficPolicy"},
		{name: "a source range added", edit: func(s *corev1.Service) {
			s.Spec.LoadBalancerSourceRanges = append(s.Spec.LoadBalancerSourceRanges, "0.0.0.0/0")
		}, want: "spec.loadBalancerSourceRanges"},
		{name: "an annotation removed from the Robot", robot: func(r *robotv1beta1.Robot) {
			delete(r.Spec.Service.Annotations, "service.beta.kubernetes.io/aws-load-balancer-type")
		}, want: "the Robot's spec changed"},
		{name: "a label removed from the Robot", robot: func(r *robotv1beta1.Robot) { r.Spec.Service.Labels = nil },
			want: "the Robot's spec changed"},
		{name: "the policies removed from the Robot", robot: func(r *robotv1beta1.Robot) {
			r.Spec.Service.ExternalTrafficPolicy, r.Spec.Service.InternalTrafficPolicy = "", ""
		}, want: "the Robot's spec changed"},
		{name: "an annotation added to the Robot", robot: func(r *robotv1beta1.Robot) {
			r.Spec.Service.Annotations["example.com/new"] = "x"
		}, want: "metadata.annotations.example.com/new is not set"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := robottest.LoadBalancerRobot()
			robot := before.DeepCopy()
			if tt.robot != nil {
				tt.robot(robot)
			}
			live := liveService(t, before)
			if tt.edit != nil {
				tt.edit(live)
			}
			got := ServiceDrift(workload.NewService(robot), live)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("drift %q, want none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("drift %q, want it to name %q", got, tt.want)
			}
		})
	}
}

// TestLoadBalancerClassChange: a LoadBalancer Service whose class the Robot
// asks to change is refused before any request, and so is one whose class
// the Robot dropped once the API server refused that spec; every other
// case, another writer's class among them, goes on to the usual drift.
func TestLoadBalancerClassChange(t *testing.T) {
	withClass := func(serviceType robotv1beta1.ServiceType, class string) *robotv1beta1.Robot {
		robot := robottest.NewServiceRobot("web", serviceType)
		robot.Spec.Service.LoadBalancerClass = class
		return robot
	}
	for _, tt := range []struct {
		name            string
		before, robot   *robotv1beta1.Robot
		foreignClass    string // set on the live Service by another writer
		refusedBefore   bool   // the Robot's status says the API server refused this spec
		refused         bool
		current, wanted string
	}{
		{name: "same class", before: withClass(robotv1beta1.ServiceTypeLoadBalancer, "example.com/a"), robot: withClass(robotv1beta1.ServiceTypeLoadBalancer, "example.com/a")},
		{name: "another class", before: withClass(robotv1beta1.ServiceTypeLoadBalancer, "example.com/a"), robot: withClass(robotv1beta1.ServiceTypeLoadBalancer, "example.com/b"),
			refused: true, current: "example.com/a", wanted: "example.com/b"},
		{name: "a class where there was none", before: withClass(robotv1beta1.ServiceTypeLoadBalancer, ""), robot: withClass(robotv1beta1.ServiceTypeLoadBalancer, "example.com/b"),
			refused: true, wanted: "example.com/b"},
		{name: "no class where there was one: left to the apply", before: withClass(robotv1beta1.ServiceTypeLoadBalancer, "example.com/a"), robot: withClass(robotv1beta1.ServiceTypeLoadBalancer, "")},
		{name: "no class where there was one, the apply refused before", before: withClass(robotv1beta1.ServiceTypeLoadBalancer, "example.com/a"), robot: withClass(robotv1beta1.ServiceTypeLoadBalancer, ""),
			refusedBefore: true, refused: true, current: "example.com/a"},
		{name: "another writer's class, the Robot sets none", before: withClass(robotv1beta1.ServiceTypeLoadBalancer, ""), robot: withClass(robotv1beta1.ServiceTypeLoadBalancer, ""),
			foreignClass: "example.com/webhook"},
		{name: "the same class after a refusal", before: withClass(robotv1beta1.ServiceTypeLoadBalancer, "example.com/a"), robot: withClass(robotv1beta1.ServiceTypeLoadBalancer, "example.com/a"),
			refusedBefore: true},
		{name: "no class on either after a refusal (the Service made again)", before: withClass(robotv1beta1.ServiceTypeLoadBalancer, ""), robot: withClass(robotv1beta1.ServiceTypeLoadBalancer, ""),
			refusedBefore: true},
		{name: "to ClusterIP after a refusal", before: withClass(robotv1beta1.ServiceTypeLoadBalancer, "example.com/a"), robot: withClass(robotv1beta1.ServiceTypeClusterIP, ""),
			refusedBefore: true},
		{name: "from ClusterIP to LoadBalancer with a class", before: withClass(robotv1beta1.ServiceTypeClusterIP, ""), robot: withClass(robotv1beta1.ServiceTypeLoadBalancer, "example.com/b")},
		{name: "from LoadBalancer to NodePort", before: withClass(robotv1beta1.ServiceTypeLoadBalancer, "example.com/a"), robot: withClass(robotv1beta1.ServiceTypeNodePort, "")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			live := liveService(t, tt.before)
			if tt.foreignClass != "" {
				live.Spec.LoadBalancerClass = &tt.foreignClass
			}
			err := LoadBalancerClassChange(workload.NewService(tt.robot), live, tt.refusedBefore)
			var immutable *outcome.LoadBalancerClassImmutableError
			switch {
			case !tt.refused && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.refused && !errors.As(err, &immutable):
				t.Errorf("error %v, want a LoadBalancerClassImmutableError", err)
			case tt.refused && (immutable.Current != tt.current || immutable.Desired != tt.wanted || immutable.Service != live.Name || immutable.Namespace != live.Namespace):
				t.Errorf("error %+v, want Service %s/%s from %q to %q", immutable, live.Namespace, live.Name, tt.current, tt.wanted)
			}
		})
	}
}

// TestLoadBalancerClassRefused: the API server's refusal of an apply that
// changes the class is told apart from every other answer.
func TestLoadBalancerClassRefused(t *testing.T) {
	robot := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeLoadBalancer)
	before := robot.DeepCopy()
	before.Spec.Service.LoadBalancerClass = "example.com/a"
	live := liveService(t, before)
	desired := workload.NewService(robot)
	invalid := func(causes ...field.Error) error {
		var list field.ErrorList
		for i := range causes {
			list = append(list, &causes[i])
		}
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "web", list)
	}
	classPath := field.NewPath("spec", "loadBalancerClass")
	refusal := invalid(*field.Invalid(classPath, nil, "may not change once set"))
	var immutable *outcome.LoadBalancerClassImmutableError
	err := LoadBalancerClassRefused(desired, live, &outcome.InvalidSpecError{Err: refusal})
	var invalidSpec *outcome.InvalidSpecError
	if !errors.As(err, &immutable) || immutable.Current != "example.com/a" || immutable.Desired != "" || !apierrors.IsInvalid(immutable) || errors.As(err, &invalidSpec) {
		t.Errorf("the refusal, wrapped: %#v, want a LoadBalancerClassImmutableError from example.com/a to none, wrapping the API server's answer and not the invalid spec it was taken for", err)
	}
	for name, other := range map[string]error{
		"no error":       nil,
		"conflict":       apierrors.NewConflict(schema.GroupResource{Resource: "services"}, "web", errors.New("uid")),
		"another field":  invalid(*field.Invalid(field.NewPath("spec", "ports"), nil, "may not change once set")),
		"another reason": invalid(*field.Invalid(classPath, "-x", "a qualified name must consist of alphanumeric characters")),
	} {
		if err := LoadBalancerClassRefused(desired, live, other); err != nil {
			t.Errorf("%s: %v, want nil", name, err)
		}
	}
}

// TestServiceDriftOfServiceAndNodePorts: a servicePort changed is drift; a
// node port the Robot sets is compared, one it does not set (the API
// server's) is not, whatever the API server picked.
func TestServiceDriftOfServiceAndNodePorts(t *testing.T) {
	robot := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeNodePort)
	robot.Spec.Ports[0].ServicePort = 80
	live := liveService(t, robot)
	if got := ServiceDrift(workload.NewService(robot), live); got != "" {
		t.Errorf("as applied, the node port the API server's: drift %q", got)
	}
	live.Spec.Ports[0].NodePort = 30999
	if got := ServiceDrift(workload.NewService(robot), live); got != "" {
		t.Errorf("another node port picked by the API server: drift %q", got)
	}
	changed := robot.DeepCopy()
	changed.Spec.Ports[0].ServicePort = 81
	if got := ServiceDrift(workload.NewService(changed), live); got == "" {
		t.Error("servicePort 80 to 81: no drift")
	}
	robot.Spec.Ports[0].NodePort = 30080
	live = liveService(t, robot)
	if live.Spec.Ports[0].NodePort != 30080 {
		t.Fatalf("the live Service's node port %d, want the Robot's 30080", live.Spec.Ports[0].NodePort)
	}
	if got := ServiceDrift(workload.NewService(robot), live); got != "" {
		t.Errorf("as applied, the Robot's node port: drift %q", got)
	}
	live.Spec.Ports[0].NodePort = 30999
	if got := ServiceDrift(workload.NewService(robot), live); !strings.Contains(got, "nodePort") {
		t.Errorf("the Robot's node port changed by another writer: drift %q, want it to name nodePort", got)
	}
}

// TestNodePortRefused: the API server's refusal of a node port the Robot
// sets is said with the Robot's field; every other answer is left alone.
func TestNodePortRefused(t *testing.T) {
	robot := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeNodePort)
	robot.Spec.Ports = []robotv1beta1.RobotPort{
		{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
		{Name: "http", ContainerPort: 8080, ServicePort: 80, NodePort: 40000, Protocol: corev1.ProtocolTCP},
	}
	invalid := func(path *field.Path, value any, detail string) error {
		return &outcome.InvalidSpecError{Err: apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "web",
			field.ErrorList{field.Invalid(path, value, detail)})}
	}
	nodePort := field.NewPath("spec", "ports").Index(1).Child("nodePort")
	err := NodePortRefused(robot, invalid(nodePort, int32(40000), "provided port is not in the valid range. The range of valid ports is 30000-32767"))
	var invalidSpec *outcome.InvalidSpecError
	want := `spec.ports[1].nodePort 40000: the API server refuses it on the Service "web": provided port is not in the valid range. The range of valid ports is 30000-32767`
	if !errors.As(err, &invalidSpec) || !strings.Contains(err.Error(), want) {
		t.Errorf("out of range: %v, want an invalid spec that says %q", err, want)
	}
	// Found by its number, wherever the Service has it.
	err = NodePortRefused(robot, invalid(field.NewPath("spec", "ports").Index(0).Child("nodePort"), int32(40000), "provided port is already allocated"))
	if err == nil || !strings.Contains(err.Error(), "spec.ports[1].nodePort 40000") || !strings.Contains(err.Error(), "already allocated") {
		t.Errorf("taken: %v, want it to name spec.ports[1].nodePort", err)
	}
	for name, other := range map[string]error{
		"no error":          nil,
		"conflict":          apierrors.NewConflict(schema.GroupResource{Resource: "services"}, "web", errors.New("uid")),
		"another field":     invalid(field.NewPath("spec", "ports").Index(1).Child("port"), int32(80), "must be between 1 and 65535"),
		"another node port": invalid(nodePort, int32(31000), "provided port is already allocated"),
	} {
		if err := NodePortRefused(robot, other); err != nil {
			t.Errorf("%s: %v, want nil", name, err)
		}
	}
}
