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
			s.Annotations = map[string]string{"example.com/note": "x"}
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
