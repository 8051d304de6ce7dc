package drift

import (
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

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
