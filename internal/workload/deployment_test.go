package workload

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/robottest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

func TestNewDeployment(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*robotv1beta1.Robot)
		check  func(t *testing.T, d *appsv1.Deployment)
	}{{
		name:   "defaults",
		mutate: func(r *robotv1beta1.Robot) { r.Spec = robotv1beta1.RobotSpec{Image: "robot:1"} },
		check: func(t *testing.T, d *appsv1.Deployment) {
			if d.Name != "test" || d.Namespace != "default" {
				t.Errorf("name %s/%s, want default/test", d.Namespace, d.Name)
			}
			if *d.Spec.Replicas != 1 {
				t.Errorf("replicas %d, want 1", *d.Spec.Replicas)
			}
			c := d.Spec.Template.Spec.Containers
			if len(c) != 1 || c[0].Name != "robot" || c[0].Image != "robot:1" || c[0].Ports != nil || c[0].Env != nil || c[0].Args != nil {
				t.Errorf("containers %+v, want one named robot running robot:1 and nothing else", c)
			}
			if c[0].Resources.Limits != nil || c[0].Resources.Requests != nil {
				t.Errorf("resources %+v, want none", c[0].Resources)
			}
		},
	}, {
		name: "owner, labels and selector",
		check: func(t *testing.T, d *appsv1.Deployment) {
			if len(d.OwnerReferences) != 1 {
				t.Fatalf("owner references %+v, want one", d.OwnerReferences)
			}
			ref := d.OwnerReferences[0]
			if ref.APIVersion != "robot.dev/v1beta1" || ref.Kind != "Robot" || ref.Name != "test" || ref.UID != "test-uid" || !ptr.Deref(ref.Controller, false) || !ptr.Deref(ref.BlockOwnerDeletion, false) {
				t.Errorf("owner reference %+v, want the Robot as controller", ref)
			}
			want := map[string]string{LabelManagedBy: "robot-operator", labelName: "robot", LabelInstance: "test", LabelRobot: "test"}
			if d := diff.Diff(want, d.Labels); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
			if d := diff.Diff(want, d.Spec.Template.Labels); d != "" {
				t.Errorf("pod labels (-want +got):\n%s", d)
			}
			if d := diff.Diff(map[string]string{LabelRobot: "test"}, d.Spec.Selector.MatchLabels); d != "" {
				t.Errorf("selector (-want +got):\n%s", d)
			}
			if d.Annotations[AnnotationSpecHash] == "" {
				t.Errorf("no %s annotation", AnnotationSpecHash)
			}
		},
	}, {
		name: "spec fields",
		mutate: func(r *robotv1beta1.Robot) {
			r.Spec.Args = []string{"serve", "--verbose"}
			r.Spec.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}
			r.Spec.Env = append(r.Spec.Env, corev1.EnvVar{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
		},
		check: func(t *testing.T, d *appsv1.Deployment) {
			c := d.Spec.Template.Spec.Containers[0]
			if *d.Spec.Replicas != 2 || c.Image != "registry.example/robot:1.0" {
				t.Errorf("replicas %d image %q", *d.Spec.Replicas, c.Image)
			}
			if d := diff.Diff([]string{"serve", "--verbose"}, c.Args); d != "" {
				t.Errorf("args (-want +got):\n%s", d)
			}
			if d := diff.Diff([]corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}, c.Ports); d != "" {
				t.Errorf("ports (-want +got):\n%s", d)
			}
			if len(c.Env) != 2 || c.Env[1].ValueFrom == nil || c.Env[1].ValueFrom.FieldRef.FieldPath != "metadata.name" {
				t.Errorf("env %+v, want MODE and a field reference", c.Env)
			}
			if q := c.Resources.Limits[corev1.ResourceMemory]; q.String() != "64Mi" {
				t.Errorf("memory limit %s, want 64Mi", q.String())
			}
		},
	}, {
		name:   "deploymentName",
		mutate: func(r *robotv1beta1.Robot) { r.Spec.DeploymentName = "robot-runner" },
		check: func(t *testing.T, d *appsv1.Deployment) {
			if d.Name != "robot-runner" || d.Labels[LabelRobot] != "test" {
				t.Errorf("name %q, robot label %q", d.Name, d.Labels[LabelRobot])
			}
		},
	}, {
		name: "two ports",
		mutate: func(r *robotv1beta1.Robot) {
			r.Spec.Ports = []robotv1beta1.RobotPort{
				{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
				// A Robot stored before the CRD defaulted the protocol.
				{Name: "web", ContainerPort: 8080},
			}
		},
		check: func(t *testing.T, d *appsv1.Deployment) {
			c := d.Spec.Template.Spec.Containers[0]
			want := []corev1.ContainerPort{
				{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
				{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			}
			if d := diff.Diff(want, c.Ports); d != "" {
				t.Errorf("ports (-want +got):\n%s", d)
			}
			if p := c.ReadinessProbe; p == nil || p.TCPSocket == nil || p.TCPSocket.Port != intstr.FromString("web") {
				t.Errorf("readiness probe %+v, want a TCP probe of port web", p)
			}
		},
	}, {
		name:   "no ports",
		mutate: func(r *robotv1beta1.Robot) { r.Spec.Ports = nil },
		check: func(t *testing.T, d *appsv1.Deployment) {
			if c := d.Spec.Template.Spec.Containers[0]; c.Ports != nil || c.ReadinessProbe != nil {
				t.Errorf("ports %+v, probe %+v; want neither", c.Ports, c.ReadinessProbe)
			}
		},
	}, {
		name: "no strategy, no minReadySeconds: the API server's defaults stand",
		check: func(t *testing.T, d *appsv1.Deployment) {
			if !reflect.ValueOf(d.Spec.Strategy).IsZero() || d.Spec.MinReadySeconds != 0 {
				t.Errorf("strategy %+v, minReadySeconds %d; want neither set", d.Spec.Strategy, d.Spec.MinReadySeconds)
			}
		},
	}, {
		name: "strategy Recreate",
		mutate: func(r *robotv1beta1.Robot) {
			r.Spec.Strategy = &robotv1beta1.RobotStrategy{Type: robotv1beta1.StrategyRecreate}
		},
		check: func(t *testing.T, d *appsv1.Deployment) {
			want := appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
			if d := diff.Diff(want, d.Spec.Strategy); d != "" {
				t.Errorf("strategy (-want +got):\n%s", d)
			}
		},
	}, {
		name: "strategy RollingUpdate with maxSurge and maxUnavailable",
		mutate: func(r *robotv1beta1.Robot) {
			r.Spec.Strategy = &robotv1beta1.RobotStrategy{Type: robotv1beta1.StrategyRollingUpdate, RollingUpdate: &robotv1beta1.RollingUpdate{
				MaxSurge:       ptr.To(intstr.FromInt32(2)),
				MaxUnavailable: ptr.To(intstr.FromString("10%")),
			}}
		},
		check: func(t *testing.T, d *appsv1.Deployment) {
			want := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge:       ptr.To(intstr.FromInt32(2)),
				MaxUnavailable: ptr.To(intstr.FromString("10%")),
			}}
			if d := diff.Diff(want, d.Spec.Strategy); d != "" {
				t.Errorf("strategy (-want +got):\n%s", d)
			}
		},
	}, {
		name: "strategy without a type is a rolling update; an unset bound is left to the API server",
		mutate: func(r *robotv1beta1.Robot) {
			r.Spec.Strategy = &robotv1beta1.RobotStrategy{RollingUpdate: &robotv1beta1.RollingUpdate{MaxUnavailable: ptr.To(intstr.FromInt32(0))}}
		},
		check: func(t *testing.T, d *appsv1.Deployment) {
			want := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			}}
			if d := diff.Diff(want, d.Spec.Strategy); d != "" {
				t.Errorf("strategy (-want +got):\n%s", d)
			}
		},
	}, {
		name: "an empty rollingUpdate sets no bound",
		mutate: func(r *robotv1beta1.Robot) {
			r.Spec.Strategy = &robotv1beta1.RobotStrategy{RollingUpdate: &robotv1beta1.RollingUpdate{}}
		},
		check: func(t *testing.T, d *appsv1.Deployment) {
			want := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
			if d := diff.Diff(want, d.Spec.Strategy); d != "" {
				t.Errorf("strategy (-want +got):\n%s", d)
			}
		},
	}, {
		name:   "minReadySeconds",
		mutate: func(r *robotv1beta1.Robot) { r.Spec.MinReadySeconds = 30 },
		check: func(t *testing.T, d *appsv1.Deployment) {
			if d.Spec.MinReadySeconds != 30 {
				t.Errorf("minReadySeconds %d, want 30", d.Spec.MinReadySeconds)
			}
		},
	}, {
		name: "placement",
		mutate: func(r *robotv1beta1.Robot) {
			r.Spec.Placement = robotv1beta1.RobotPlacement{
				NodeSelector:      map[string]string{"kubernetes.io/arch": "arm64"},
				Tolerations:       []corev1.Toleration{{Key: "arm", Operator: corev1.TolerationOpExists}},
				PriorityClassName: "batch",
			}
		},
		check: func(t *testing.T, d *appsv1.Deployment) {
			pod := d.Spec.Template.Spec
			if pod.NodeSelector["kubernetes.io/arch"] != "arm64" || len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "arm" ||
				pod.PriorityClassName != "batch" || pod.Affinity != nil || pod.TopologySpreadConstraints != nil {
				t.Errorf("pod spec %+v, want the Robot's placement", pod)
			}
		},
	}, {
		name: "safe pod defaults",
		check: func(t *testing.T, d *appsv1.Deployment) {
			pod := d.Spec.Template.Spec
			if pod.SecurityContext == nil || pod.SecurityContext.SeccompProfile == nil || pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod security context %+v, want seccomp RuntimeDefault", pod.SecurityContext)
			}
			if sc := pod.Containers[0].SecurityContext; sc == nil || !ptr.Equal(sc.AllowPrivilegeEscalation, ptr.To(false)) {
				t.Errorf("container security context %+v, want no privilege escalation", sc)
			}
			if pod.HostNetwork || pod.HostPID || pod.ServiceAccountName != "" {
				t.Errorf("pod spec %+v reaches beyond its namespace's defaults", pod)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.NewRobot("test", 2)
			if tt.mutate != nil {
				tt.mutate(robot)
			}
			before := robot.DeepCopy()
			desired, err := NewDeployment(robot)
			if err != nil {
				t.Fatal(err)
			}
			if d := diff.Diff(before, robot); d != "" {
				t.Errorf("newDeployment changed the Robot:\n%s", d)
			}
			var d appsv1.Deployment
			if err := RoundTrip(desired, &d); err != nil {
				t.Fatal(err)
			}
			tt.check(t, &d)
		})
	}
}

func TestNewDeploymentRejectsInvalidSpecs(t *testing.T) {
	for name, mutate := range map[string]func(*robotv1beta1.RobotSpec){
		"empty image":       func(s *robotv1beta1.RobotSpec) { s.Image = "" },
		"negative replicas": func(s *robotv1beta1.RobotSpec) { s.Replicas = ptr.To[int32](-1) },
		"too many replicas": func(s *robotv1beta1.RobotSpec) { s.Replicas = ptr.To[int32](1001) },
		"port out of range": func(s *robotv1beta1.RobotSpec) { s.Ports[0].ContainerPort = 70000 },
		"port zero":         func(s *robotv1beta1.RobotSpec) { s.Ports[0].ContainerPort = 0 },
		// Seventeen ports: the CRD allows 16, but a Robot stored before
		// the converter checked what it restores can hold any number.
		"too many ports": func(s *robotv1beta1.RobotSpec) {
			for i := range 16 {
				s.Ports = append(s.Ports, robotv1beta1.RobotPort{Name: fmt.Sprintf("p%d", i), ContainerPort: int32(9000 + i), Protocol: corev1.ProtocolTCP})
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			robot := robottest.NewRobot("test", 1)
			mutate(&robot.Spec)
			_, err := NewDeployment(robot)
			var invalid *outcome.InvalidSpecError
			if !errors.As(err, &invalid) {
				t.Fatalf("got %v, want an invalid spec error", err)
			}
			if !strings.Contains(err.Error(), "spec.") {
				t.Errorf("error %q does not name the field", err)
			}
		})
	}
}

func TestSpecHash(t *testing.T) {
	hash := func(r *robotv1beta1.Robot) string {
		d, err := NewDeployment(r)
		if err != nil {
			t.Fatal(err)
		}
		return d.Annotations[AnnotationSpecHash]
	}
	robot := robottest.NewRobot("test", 1)
	if hash(robot) != hash(robot.DeepCopy()) {
		t.Error("the same Robot hashes differently")
	}
	withoutEnv := robot.DeepCopy()
	withoutEnv.Spec.Env = nil
	if hash(robot) == hash(withoutEnv) {
		t.Error("removing an env var does not change the hash: it would never be applied")
	}
	status := robot.DeepCopy()
	status.Status.ReadyReplicas = 3
	status.ResourceVersion = "99"
	if hash(robot) != hash(status) {
		t.Error("status or resourceVersion changes the hash: every status write would reapply")
	}
}

// TestPaused: "true" pauses a Robot and "false" does not, in any case, as
// people write them; any other value pauses nothing and is reported as
// ignored, and no annotation is neither.
func TestPaused(t *testing.T) {
	for _, tt := range []struct {
		annotations map[string]string
		paused      bool
		ignored     bool
	}{
		{nil, false, false},
		{map[string]string{AnnotationPaused: "true"}, true, false},
		{map[string]string{AnnotationPaused: "True"}, true, false},
		{map[string]string{AnnotationPaused: "TRUE"}, true, false},
		{map[string]string{AnnotationPaused: "false"}, false, false},
		{map[string]string{AnnotationPaused: "False"}, false, false},
		{map[string]string{AnnotationPaused: "yes"}, false, true},
		{map[string]string{AnnotationPaused: "no"}, false, true},
		{map[string]string{AnnotationPaused: "1"}, false, true},
		{map[string]string{AnnotationPaused: "0"}, false, true},
		{map[string]string{AnnotationPaused: " true"}, false, true},
		{map[string]string{AnnotationPaused: ""}, false, true},
		{map[string]string{"example.com/paused": "true"}, false, false},
	} {
		robot := robottest.NewRobot("test", 1)
		robot.Annotations = tt.annotations
		_, ignored := PauseIgnored(robot)
		if Paused(robot) != tt.paused || ignored != tt.ignored {
			t.Errorf("%v: paused %v, ignored %v; want %v, %v", tt.annotations, Paused(robot), ignored, tt.paused, tt.ignored)
		}
	}
}
