package workload

import (
	"errors"
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

// proxySidecar is a sidecar with every field it may have.
func proxySidecar() robotv1beta1.RobotSidecar {
	return robotv1beta1.RobotSidecar{
		RobotContainer: robotv1beta1.RobotContainer{
			Name:    "proxy",
			Image:   "registry.example/proxy:2.1",
			Command: []string{"/proxy"},
			Args:    []string{"--listen=:15001"},
			Env: []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			EnvFrom:      []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "proxy"}}}},
			Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100u")}},
			VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}},
		},
		Ports:          []robotv1beta1.RobotPort{{Name: "proxy", ContainerPort: 15001}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("proxy")}}},
		LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("proxy")}}},
		StartupProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/proxy", "check"}}}},
	}
}

// withContainers is a Robot with a sidecar, an init container and a cache
// volume both mount.
func withContainers(r *robotv1beta1.Robot) {
	r.Spec.Volumes = []robotv1beta1.RobotVolume{{Name: "cache", EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	r.Spec.Sidecars = []robotv1beta1.RobotSidecar{proxySidecar()}
	r.Spec.InitContainers = []robotv1beta1.RobotContainer{{
		Name: "migrate", Image: "registry.example/migrate:1", Args: []string{"up"},
		VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/cache", ReadOnly: true}},
	}}
}

func TestNewDeploymentContainers(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*robotv1beta1.Robot)
		check  func(t *testing.T, d *appsv1.Deployment)
	}{{
		name: "none: no init container, no lifecycle, no grace period",
		check: func(t *testing.T, d *appsv1.Deployment) {
			pod := d.Spec.Template.Spec
			if pod.InitContainers != nil || pod.TerminationGracePeriodSeconds != nil || pod.Containers[0].Lifecycle != nil {
				t.Errorf("init containers %+v, grace %v, lifecycle %+v: want none of them", pod.InitContainers, pod.TerminationGracePeriodSeconds, pod.Containers[0].Lifecycle)
			}
		},
	}, {
		name:   "sidecars first, then init containers; only the sidecar restarts always",
		mutate: withContainers,
		check: func(t *testing.T, d *appsv1.Deployment) {
			init := d.Spec.Template.Spec.InitContainers
			if len(init) != 2 || init[0].Name != "proxy" || init[1].Name != "migrate" {
				t.Fatalf("init containers %+v, want proxy then migrate", init)
			}
			if !ptr.Equal(init[0].RestartPolicy, ptr.To(corev1.ContainerRestartPolicyAlways)) || init[1].RestartPolicy != nil {
				t.Errorf("restart policies %v and %v, want Always for the sidecar and none for the init container", init[0].RestartPolicy, init[1].RestartPolicy)
			}
			if c := d.Spec.Template.Spec.Containers; len(c) != 1 || c[0].Name != ContainerName {
				t.Errorf("containers %+v, want the Robot's alone", c)
			}
		},
	}, {
		name:   "a sidecar's fields, with the API server's defaults inside atomic fields",
		mutate: withContainers,
		check: func(t *testing.T, d *appsv1.Deployment) {
			sidecar := proxySidecar()
			want := corev1.Container{
				Name:    "proxy",
				Image:   "registry.example/proxy:2.1",
				Command: []string{"/proxy"},
				Args:    []string{"--listen=:15001"},
				Env: []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
				EnvFrom:         sidecar.EnvFrom,
				Resources:       corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}},
				VolumeMounts:    sidecar.VolumeMounts,
				Ports:           []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001, Protocol: corev1.ProtocolTCP}},
				ReadinessProbe:  sidecar.ReadinessProbe,
				LivenessProbe:   sidecar.LivenessProbe,
				StartupProbe:    sidecar.StartupProbe,
				RestartPolicy:   ptr.To(corev1.ContainerRestartPolicyAlways),
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)},
			}
			if d := diff.Diff(want, d.Spec.Template.Spec.InitContainers[0]); d != "" {
				t.Errorf("sidecar (-want +got):\n%s", d)
			}
		},
	}, {
		name:   "an init container's fields",
		mutate: withContainers,
		check: func(t *testing.T, d *appsv1.Deployment) {
			want := corev1.Container{
				Name: "migrate", Image: "registry.example/migrate:1", Args: []string{"up"},
				VolumeMounts:    []corev1.VolumeMount{{Name: "cache", MountPath: "/cache", ReadOnly: true}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)},
			}
			if d := diff.Diff(want, d.Spec.Template.Spec.InitContainers[1]); d != "" {
				t.Errorf("init container (-want +got):\n%s", d)
			}
		},
	}, {
		name: "restricted covers every container",
		mutate: func(r *robotv1beta1.Robot) {
			withContainers(r)
			r.Spec.SecurityProfile = robotv1beta1.SecurityProfileRestricted
		},
		check: func(t *testing.T, d *appsv1.Deployment) {
			pod := d.Spec.Template.Spec
			want := pod.Containers[0].SecurityContext
			if want == nil || !ptr.Deref(want.RunAsNonRoot, false) || want.Capabilities == nil {
				t.Fatalf("the Robot's container is not restricted: %+v", want)
			}
			for _, c := range pod.InitContainers {
				if d := diff.Diff(want, c.SecurityContext); d != "" {
					t.Errorf("container %s's security context differs from the Robot's (-robot +%s):\n%s", c.Name, c.Name, d)
				}
			}
		},
	}, {
		name: "grace period and a preStop sleep",
		mutate: func(r *robotv1beta1.Robot) {
			r.Spec.TerminationGracePeriodSeconds = ptr.To[int64](45)
			r.Spec.PreStop = &robotv1beta1.RobotPreStop{Sleep: &robotv1beta1.RobotSleep{Seconds: 10}}
		},
		check: func(t *testing.T, d *appsv1.Deployment) {
			pod := d.Spec.Template.Spec
			if !ptr.Equal(pod.TerminationGracePeriodSeconds, ptr.To[int64](45)) {
				t.Errorf("terminationGracePeriodSeconds %v, want 45", pod.TerminationGracePeriodSeconds)
			}
			want := &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 10}}}
			if d := diff.Diff(want, pod.Containers[0].Lifecycle); d != "" {
				t.Errorf("lifecycle (-want +got):\n%s", d)
			}
		},
	}, {
		name: "a preStop command, the grace period left to Kubernetes",
		mutate: func(r *robotv1beta1.Robot) {
			r.Spec.PreStop = &robotv1beta1.RobotPreStop{Exec: &robotv1beta1.RobotExec{Command: []string{"/drain", "--wait=5s"}}}
		},
		check: func(t *testing.T, d *appsv1.Deployment) {
			pod := d.Spec.Template.Spec
			want := &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/drain", "--wait=5s"}}}}
			if d := diff.Diff(want, pod.Containers[0].Lifecycle); d != "" || pod.TerminationGracePeriodSeconds != nil {
				t.Errorf("grace %v, lifecycle (-want +got):\n%s", pod.TerminationGracePeriodSeconds, d)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.NewRobot("test", 1)
			if tt.mutate != nil {
				tt.mutate(robot)
			}
			tt.check(t, deploymentOf(t, robot))
		})
	}
}

// TestNewDeploymentRejectsInvalidContainers: what the CRD refuses and a
// stored Robot may hold all the same (one written through v1alpha1, whose
// annotation a rule of the operator's cannot see) is an invalid spec, named.
func TestNewDeploymentRejectsInvalidContainers(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(*robotv1beta1.RobotSpec)
		want   string
	}{
		{"a sidecar named robot", func(s *robotv1beta1.RobotSpec) { s.Sidecars[0].Name = "robot" },
			`spec.sidecars[0].name cannot be "robot"`},
		{"an init container named robot", func(s *robotv1beta1.RobotSpec) { s.InitContainers[0].Name = "robot" },
			`spec.initContainers[0].name cannot be "robot"`},
		{"a sidecar and an init container of one name", func(s *robotv1beta1.RobotSpec) { s.Sidecars[0].Name = "migrate" },
			`spec.sidecars[0].name "migrate" is the name of spec.initContainers[0] too`},
		{"a name that is no DNS label", func(s *robotv1beta1.RobotSpec) { s.InitContainers[0].Name = "Migrate" },
			`spec.initContainers[0].name "Migrate" is not a container name`},
		{"an image with a space", func(s *robotv1beta1.RobotSpec) { s.Sidecars[0].Image = "proxy 2" },
			`spec.sidecars[0].image "proxy 2" must be an image reference without spaces`},
		{"no image", func(s *robotv1beta1.RobotSpec) { s.InitContainers[0].Image = "" },
			`spec.initContainers[0].image must not be empty`},
		{"five sidecars", func(s *robotv1beta1.RobotSpec) {
			for _, name := range []string{"a", "b", "c", "d"} {
				sidecar := proxySidecar()
				sidecar.Name, sidecar.Ports = name, nil
				s.Sidecars = append(s.Sidecars, sidecar)
			}
		}, "spec.sidecars must have at most 4 containers, not 5"},
		{"a mount of no volume", func(s *robotv1beta1.RobotSpec) { s.InitContainers[0].VolumeMounts[0].Name = "data" },
			`spec.initContainers[0].volumeMounts[0] names "data", which is not a volume of spec.volumes`},
		{"a sidecar port named as the Robot's", func(s *robotv1beta1.RobotSpec) { s.Sidecars[0].Ports[0].Name = "http" },
			`spec.sidecars[0].ports[0].name "http" is the name of a port of spec.ports too`},
		{"a readiness probe on a port name that spec.ports lacks", func(s *robotv1beta1.RobotSpec) {
			s.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("htp")}}}
		}, `spec.readinessProbe.httpGet.port names "htp", which is not a port of spec.ports`},
		{"a sidecar's liveness probe on a port of spec.ports", func(s *robotv1beta1.RobotSpec) {
			s.Sidecars[0].LivenessProbe.TCPSocket.Port = intstr.FromString("http")
		}, `spec.sidecars[0].livenessProbe.tcpSocket.port names "http", which is not a port of spec.sidecars[0].ports`},
		{"a sidecar port out of range", func(s *robotv1beta1.RobotSpec) { s.Sidecars[0].Ports[0].ContainerPort = 0 },
			`spec.sidecars[0].ports[0].containerPort must be between 1 and 65535`},
		{"a preStop sleep as long as the default grace period", func(s *robotv1beta1.RobotSpec) {
			s.PreStop = &robotv1beta1.RobotPreStop{Sleep: &robotv1beta1.RobotSleep{Seconds: 30}}
		}, "spec.preStop.sleep.seconds (30) must be below terminationGracePeriodSeconds (30)"},
		{"a preStop sleep longer than the grace period", func(s *robotv1beta1.RobotSpec) {
			s.TerminationGracePeriodSeconds = ptr.To[int64](5)
			s.PreStop = &robotv1beta1.RobotPreStop{Sleep: &robotv1beta1.RobotSleep{Seconds: 10}}
		}, "spec.preStop.sleep.seconds (10) must be below terminationGracePeriodSeconds (5)"},
		{"a preStop with both sleep and exec", func(s *robotv1beta1.RobotSpec) {
			s.PreStop = &robotv1beta1.RobotPreStop{Sleep: &robotv1beta1.RobotSleep{Seconds: 1}, Exec: &robotv1beta1.RobotExec{Command: []string{"x"}}}
		}, "spec.preStop must have exactly one of sleep or exec"},
		{"an empty preStop", func(s *robotv1beta1.RobotSpec) { s.PreStop = &robotv1beta1.RobotPreStop{} },
			"spec.preStop must have exactly one of sleep or exec"},
		{"a preStop command with nothing in it", func(s *robotv1beta1.RobotSpec) {
			s.PreStop = &robotv1beta1.RobotPreStop{Exec: &robotv1beta1.RobotExec{}}
		},
			"spec.preStop.exec.command must have 1 to 256 items, not 0"},
		{"a negative grace period", func(s *robotv1beta1.RobotSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](-1) },
			"spec.terminationGracePeriodSeconds must be between 0 and 86400, not -1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.NewRobot("test", 1)
			withContainers(robot)
			tt.mutate(&robot.Spec)
			_, err := NewDeployment(robot)
			var invalid *outcome.InvalidSpecError
			if !errors.As(err, &invalid) {
				t.Fatalf("got %v, want an invalid spec error", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}
