package workload

import (
	"maps"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

func TestNewService(t *testing.T) {
	withPort := func(port *int32, service *robotv1alpha1.RobotService) *robotv1alpha1.Robot {
		robot := robottest.NewRobot("web", 1)
		robot.Spec.Port, robot.Spec.Service = port, service
		return robot
	}
	named := withPort(ptr.To[int32](8080), nil)
	named.Spec.DeploymentName = "web-v2"
	for _, tt := range []struct {
		name     string
		robot    *robotv1alpha1.Robot
		wantName string // "" for no Service
		wantType corev1.ServiceType
	}{
		{"no port", withPort(nil, nil), "", ""},
		{"no port, NodePort", withPort(nil, &robotv1alpha1.RobotService{Type: robotv1alpha1.ServiceTypeNodePort}), "", ""},
		{"port, no service field", withPort(ptr.To[int32](8080), nil), "web", corev1.ServiceTypeClusterIP},
		{"port, empty type", withPort(ptr.To[int32](8080), &robotv1alpha1.RobotService{}), "web", corev1.ServiceTypeClusterIP},
		{"ClusterIP", withPort(ptr.To[int32](8080), &robotv1alpha1.RobotService{Type: robotv1alpha1.ServiceTypeClusterIP}), "web", corev1.ServiceTypeClusterIP},
		{"NodePort", withPort(ptr.To[int32](8080), &robotv1alpha1.RobotService{Type: robotv1alpha1.ServiceTypeNodePort}), "web", corev1.ServiceTypeNodePort},
		{"LoadBalancer", withPort(ptr.To[int32](8080), &robotv1alpha1.RobotService{Type: robotv1alpha1.ServiceTypeLoadBalancer}), "web", corev1.ServiceTypeLoadBalancer},
		{"None", withPort(ptr.To[int32](8080), &robotv1alpha1.RobotService{Type: robotv1alpha1.ServiceTypeNone}), "", ""},
		{"deploymentName", named, "web-v2", corev1.ServiceTypeClusterIP},
	} {
		t.Run(tt.name, func(t *testing.T) {
			desired := NewService(tt.robot)
			if tt.wantName == "" {
				if desired != nil {
					t.Fatalf("newService = %s, want no Service", robottest.MustJSON(t, desired))
				}
				return
			}
			if desired == nil {
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
			wantPort := corev1.ServicePort{Name: PortName, Protocol: corev1.ProtocolTCP, Port: 8080, TargetPort: intstr.FromInt32(8080)}
			if len(s.Spec.Ports) != 1 || s.Spec.Ports[0] != wantPort {
				t.Errorf("ports %+v, want [%+v]", s.Spec.Ports, wantPort)
			}
			ref := metav1.GetControllerOf(&s)
			if ref == nil || ref.UID != tt.robot.UID || ref.Kind != "Robot" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
				t.Errorf("controller reference %+v, want the Robot's with blockOwnerDeletion", ref)
			}
			// Nothing the API server allocates or defaults.
			if s.Spec.ClusterIP != "" || s.Spec.SessionAffinity != "" || s.Spec.ExternalTrafficPolicy != "" || s.Spec.Ports[0].NodePort != 0 {
				t.Errorf("the Service sets fields the API server fills in: %+v", s.Spec)
			}
		})
	}
}
