package drift

import (
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

func TestDeploymentDrift(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   string // a substring of the drift; "" for none
	}{
		// The live field reference carries the defaulted apiVersion "v1"
		// and the request the canonical "1" for "1000m": neither is drift.
		{name: "as applied"},
		{name: "server defaults", mutate: func(d *appsv1.Deployment) {
			c := &d.Spec.Template.Spec.Containers[0]
			c.ImagePullPolicy = corev1.PullIfNotPresent
			c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
			d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
		}},
		{name: "canonical quantities", mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}},
		{name: "others' annotation, label, sidecar and env", mutate: func(d *appsv1.Deployment) {
			d.Annotations["kubectl.kubernetes.io/restartedAt"] = "now"
			d.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "now"}
			d.Labels["team"] = "blue"
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar"})
			d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "EXTRA"})
		}},
		{name: "replicas", mutate: func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](7) }, want: "spec.replicas is 7; the Robot asks for 2"},
		{name: "image", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "other:2" }, want: "image"},
		{name: "args", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Args = []string{"x"} }, want: "args"},
		{name: "args removed", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Args = nil }, want: "args"},
		{name: "env value", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env[0].Value = "prod" }, want: `env[name="MODE"].value is "prod"`},
		{name: "env removed", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env = nil }, want: `env is not set; the Robot asks for [{"name":"MODE"`},
		{name: "field reference", mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Env[1].ValueFrom.FieldRef.FieldPath = "metadata.namespace"
		}, want: `env[name="POD"].valueFrom.fieldRef is`},
		{name: "port", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort = 9090 }, want: `ports[containerPort=8080,protocol="TCP"] is not set`},
		{name: "resources", mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		}, want: `resources.requests.cpu is "2"; the Robot asks for "1"`},
		{name: "container renamed", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Name = "app" }, want: "container"},
		{name: "managed-by label removed", mutate: func(d *appsv1.Deployment) { delete(d.Labels, workload.LabelManagedBy) }, want: "label"},
		{name: "pod label removed", mutate: func(d *appsv1.Deployment) { delete(d.Spec.Template.Labels, workload.LabelRobot) }, want: "spec.template.metadata.labels.robot.dev/name is not set"},
		{name: "seccomp removed", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.SecurityContext = nil }, want: "seccomp"},
		{name: "privilege escalation allowed", mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		}, want: "allowPrivilegeEscalation"},
		{name: "spec hash", mutate: func(d *appsv1.Deployment) { d.Annotations[workload.AnnotationSpecHash] = "old" }, want: "spec changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.NewRobot("test", 2)
			robot.Spec.Env = append(robot.Spec.Env, corev1.EnvVar{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
			robot.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m")}
			robot.Spec.Args = []string{"serve"}
			desired, err := workload.NewDeployment(robot)
			if err != nil {
				t.Fatal(err)
			}
			current := liveDeployment(t, robot)
			// As the API server stores it.
			current.Spec.Template.Spec.Containers[0].Env[1].ValueFrom.FieldRef.APIVersion = "v1"
			if tt.mutate != nil {
				tt.mutate(current)
			}
			got := DeploymentDrift(desired, current)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("drift %q, want none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("drift %q, want one that mentions %q", got, tt.want)
			}
		})
	}
}

// TestForeignFieldsAreNotDrift: what another writer adds to a field the Robot
// leaves unset is not the operator's to change. Server-side apply would never
// remove it, so calling it drift would mean a write on every sync, forever.
func TestForeignFieldsAreNotDrift(t *testing.T) {
	for name, mutate := range map[string]func(*appsv1.Deployment){
		"args":    func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Args = []string{"--theirs"} },
		"command": func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Command = []string{"/theirs"} },
		"port": func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}}
		},
		"env": func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "THEIRS", Value: "1"}}
		},
		"resources": func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
		},
		"pod annotation": func(d *appsv1.Deployment) {
			d.Spec.Template.Annotations = map[string]string{"example.com/theirs": "1"}
		},
		"security context": func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr.To(true)
		},
		"strategy": func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		},
		"rolling update bounds": func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(3))}}
		},
		"minReadySeconds":         func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 20 },
		"progressDeadlineSeconds": func(d *appsv1.Deployment) { d.Spec.ProgressDeadlineSeconds = ptr.To[int32](1200) },
	} {
		t.Run(name, func(t *testing.T) {
			// A Robot that sets none of the optional fields.
			robot := robottest.NewRobot("test", 1)
			robot.Spec.Ports, robot.Spec.Env = nil, nil
			desired, err := workload.NewDeployment(robot)
			if err != nil {
				t.Fatal(err)
			}
			current := liveDeployment(t, robot)
			mutate(current)
			if drift := DeploymentDrift(desired, current); drift != "" {
				t.Errorf("drift %q, want none: the operator does not set this field", drift)
			}
		})
	}
}

// TestRolloutDrift: for a Robot with several ports, a rolling update
// strategy and minReadySeconds, the API server's defaults (a rolling update
// bound the Robot leaves unset, the progress deadline) are not drift, and a
// change to any of those fields is, so that the operator reverts it; a
// Robot that asks for Recreate has its Deployment put back from a rolling
// update.
func TestRolloutDrift(t *testing.T) {
	recreate := func(r *robotv1beta1.Robot) {
		r.Spec.Strategy = &robotv1beta1.RobotStrategy{Type: robotv1beta1.StrategyRecreate}
	}
	onlySurge := func(r *robotv1beta1.Robot) {
		r.Spec.Strategy = &robotv1beta1.RobotStrategy{RollingUpdate: &robotv1beta1.RollingUpdate{MaxSurge: ptr.To(intstr.FromString("50%"))}}
	}
	container := func(d *appsv1.Deployment) *corev1.Container { return &d.Spec.Template.Spec.Containers[0] }
	tests := []struct {
		name   string
		robot  func(*robotv1beta1.Robot)
		mutate func(*appsv1.Deployment)
		want   string // a substring of the drift; "" for none
	}{
		{name: "as the API server stores it"},
		{name: "Recreate, as stored", robot: recreate},
		{name: "a bound the Robot leaves unset, defaulted", robot: onlySurge, mutate: func(d *appsv1.Deployment) {
			if d.Spec.Strategy.RollingUpdate.MaxUnavailable.String() != "25%" {
				t.Errorf("maxUnavailable %s, want the API server's 25%%", d.Spec.Strategy.RollingUpdate.MaxUnavailable)
			}
		}},
		{name: "others' container port", mutate: func(d *appsv1.Deployment) {
			container(d).Ports = append(container(d).Ports, corev1.ContainerPort{Name: "debug", ContainerPort: 6060, Protocol: corev1.ProtocolTCP})
		}},
		{name: "a port's number", mutate: func(d *appsv1.Deployment) { container(d).Ports[2].ContainerPort = 9091 },
			want: `ports[containerPort=9090,protocol="TCP"] is not set`},
		{name: "a port's protocol", mutate: func(d *appsv1.Deployment) { container(d).Ports[0].Protocol = corev1.ProtocolTCP },
			want: `ports[containerPort=5353,protocol="UDP"] is not set`},
		{name: "a port's name", mutate: func(d *appsv1.Deployment) { container(d).Ports[1].Name = "web" },
			want: `ports[containerPort=8080,protocol="TCP"].name is "web"; the Robot asks for "http"`},
		{name: "a port removed", mutate: func(d *appsv1.Deployment) { container(d).Ports = container(d).Ports[:2] },
			want: `ports[containerPort=9090,protocol="TCP"] is not set`},
		{name: "the default probe's port", mutate: func(d *appsv1.Deployment) {
			container(d).ReadinessProbe.TCPSocket.Port = intstr.FromString("metrics")
		}, want: `readinessProbe.tcpSocket.port is "metrics"; the Robot asks for "http"`},
		{name: "strategy type", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		}, want: `spec.strategy.type is "Recreate"; the Robot asks for "RollingUpdate"`},
		{name: "maxSurge", mutate: func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(2)) },
			want: "spec.strategy.rollingUpdate.maxSurge is 2; the Robot asks for 1"},
		{name: "maxUnavailable", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("25%"))
		},
			want: `spec.strategy.rollingUpdate.maxUnavailable is "25%"; the Robot asks for "0%"`},
		{name: "a rolling update instead of Recreate", robot: recreate, mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
			robottest.APIServerDefaults(d)
		}, want: `spec.strategy.type is "RollingUpdate"; the Robot asks for "Recreate"`},
		{name: "minReadySeconds", mutate: func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 5 },
			want: "spec.minReadySeconds is 5; the Robot asks for 15"},
		{name: "minReadySeconds removed", mutate: func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 0 },
			want: "spec.minReadySeconds is not set; the Robot asks for 15"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.RolloutRobot()
			if tt.robot != nil {
				tt.robot(robot)
			}
			desired, err := workload.NewDeployment(robot)
			if err != nil {
				t.Fatal(err)
			}
			current := liveDeployment(t, robot)
			robottest.APIServerDefaults(current)
			current = robottest.Decoded(t, current)
			if tt.mutate != nil {
				tt.mutate(current)
			}
			got := DeploymentDrift(desired, current)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("drift %q, want none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("drift %q, want one that mentions %q", got, tt.want)
			}
		})
	}
}

// TestRolloutChangesOfTheRobot: what the Robot asks for after a change of
// its ports, strategy or minReadySeconds differs from the Deployment it had:
// a changed field by its value, a removed one by the spec hash.
func TestRolloutChangesOfTheRobot(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*robotv1beta1.Robot)
		want   string
	}{
		{"a port added", func(r *robotv1beta1.Robot) {
			r.Spec.Ports = append(r.Spec.Ports, robotv1beta1.RobotPort{Name: "admin", ContainerPort: 9000, Protocol: corev1.ProtocolTCP})
		}, `ports[containerPort=9000,protocol="TCP"] is not set`},
		{"a port removed", func(r *robotv1beta1.Robot) { r.Spec.Ports = r.Spec.Ports[1:] }, "the Robot's spec changed"},
		{"the ports reordered, the probe with them", func(r *robotv1beta1.Robot) {
			r.Spec.Ports[1], r.Spec.Ports[2] = r.Spec.Ports[2], r.Spec.Ports[1]
		}, `readinessProbe.tcpSocket.port is "http"; the Robot asks for "metrics"`},
		{"strategy Recreate", func(r *robotv1beta1.Robot) {
			r.Spec.Strategy = &robotv1beta1.RobotStrategy{Type: robotv1beta1.StrategyRecreate}
		}, `spec.strategy.type is "RollingUpdate"; the Robot asks for "Recreate"`},
		{"strategy removed", func(r *robotv1beta1.Robot) { r.Spec.Strategy = nil }, "the Robot's spec changed"},
		{"minReadySeconds", func(r *robotv1beta1.Robot) { r.Spec.MinReadySeconds = 30 }, "spec.minReadySeconds is 15; the Robot asks for 30"},
		{"minReadySeconds removed", func(r *robotv1beta1.Robot) { r.Spec.MinReadySeconds = 0 }, "the Robot's spec changed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := robottest.RolloutRobot()
			current := liveDeployment(t, before)
			robottest.APIServerDefaults(current)
			robot := before.DeepCopy()
			tt.change(robot)
			desired, err := workload.NewDeployment(robot)
			if err != nil {
				t.Fatal(err)
			}
			if got := DeploymentDrift(desired, current); !strings.Contains(got, tt.want) {
				t.Errorf("drift %q, want one that mentions %q", got, tt.want)
			}
		})
	}
}

// BenchmarkDeploymentDrift measures the drift check that every sync of a
// Robot with a Deployment runs.
func BenchmarkDeploymentDrift(b *testing.B) {
	robot := robottest.NewRobot("test", 2)
	robot.Spec.Args = []string{"serve", "--verbose"}
	robot.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	desired, err := workload.NewDeployment(robot)
	if err != nil {
		b.Fatal(err)
	}
	var current appsv1.Deployment
	if err := workload.RoundTrip(desired, &current); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if drift := DeploymentDrift(desired, &current); drift != "" {
			b.Fatal(drift)
		}
	}
}

// TestWorkloadDrift: the API server's defaults inside the fields a Robot sets
// are not drift, and a hand edit of any of them is.
func TestWorkloadDrift(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(d *appsv1.Deployment, pod *corev1.PodSpec, c *corev1.Container)
		want   string // a substring of the drift; "" for none
	}{
		{name: "as the API server stores it"},
		{name: "others' toleration, pod annotation and volume", mutate: func(d *appsv1.Deployment, pod *corev1.PodSpec, c *corev1.Container) {
			d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = "now"
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "istio-envoy", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "istio-envoy", MountPath: "/etc/istio/proxy"})
		}},
		{name: "command", mutate: func(_ *appsv1.Deployment, _ *corev1.PodSpec, c *corev1.Container) { c.Command = []string{"/bin/sh"} }, want: "command"},
		{name: "imagePullPolicy", mutate: func(_ *appsv1.Deployment, _ *corev1.PodSpec, c *corev1.Container) {
			c.ImagePullPolicy = corev1.PullAlways
		}, want: "imagePullPolicy"},
		{name: "imagePullSecrets", mutate: func(_ *appsv1.Deployment, pod *corev1.PodSpec, _ *corev1.Container) { pod.ImagePullSecrets = nil }, want: "imagePullSecrets"},
		{name: "envFrom", mutate: func(_ *appsv1.Deployment, _ *corev1.PodSpec, c *corev1.Container) { c.EnvFrom[1].Prefix = "X_" }, want: "envFrom"},
		{name: "readinessProbe", mutate: func(_ *appsv1.Deployment, _ *corev1.PodSpec, c *corev1.Container) {
			c.ReadinessProbe.HTTPGet.Path = "/"
		}, want: "readinessProbe.httpGet.path"},
		{name: "livenessProbe removed", mutate: func(_ *appsv1.Deployment, _ *corev1.PodSpec, c *corev1.Container) { c.LivenessProbe = nil }, want: "livenessProbe is not set"},
		{name: "startupProbe", mutate: func(_ *appsv1.Deployment, _ *corev1.PodSpec, c *corev1.Container) {
			c.StartupProbe.FailureThreshold = 3
		}, want: "startupProbe.failureThreshold"},
		{name: "volume", mutate: func(_ *appsv1.Deployment, pod *corev1.PodSpec, _ *corev1.Container) {
			pod.Volumes[0].ConfigMap.Name = "other"
		}, want: `volumes[name="config"].configMap.name`},
		{name: "hostPath instead", mutate: func(_ *appsv1.Deployment, pod *corev1.PodSpec, _ *corev1.Container) {
			pod.Volumes[2].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}
		}, want: `volumes[name="cache"].emptyDir`},
		{name: "projected token", mutate: func(_ *appsv1.Deployment, pod *corev1.PodSpec, _ *corev1.Container) {
			pod.Volumes[3].Projected.Sources[0].ServiceAccountToken.Audience = "other"
		}, want: `volumes[name="identity"].projected.sources`},
		{name: "volumeMount", mutate: func(_ *appsv1.Deployment, _ *corev1.PodSpec, c *corev1.Container) { c.VolumeMounts[0].ReadOnly = false }, want: "volumeMounts"},
		{name: "nodeSelector", mutate: func(_ *appsv1.Deployment, pod *corev1.PodSpec, _ *corev1.Container) { pod.NodeSelector["extra"] = "1" }, want: "nodeSelector"},
		{name: "tolerations", mutate: func(_ *appsv1.Deployment, pod *corev1.PodSpec, _ *corev1.Container) {
			pod.Tolerations[0].Value = "other"
		}, want: "tolerations"},
		{name: "affinity", mutate: func(_ *appsv1.Deployment, pod *corev1.PodSpec, _ *corev1.Container) {
			pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight = 1
		}, want: "affinity.podAntiAffinity"},
		{name: "topologySpreadConstraints", mutate: func(_ *appsv1.Deployment, pod *corev1.PodSpec, _ *corev1.Container) {
			pod.TopologySpreadConstraints[0].MaxSkew = 5
		}, want: "topologySpreadConstraints"},
		{name: "priorityClassName", mutate: func(_ *appsv1.Deployment, pod *corev1.PodSpec, _ *corev1.Container) { pod.PriorityClassName = "" }, want: "priorityClassName"},
		{name: "podLabels", mutate: func(d *appsv1.Deployment, _ *corev1.PodSpec, _ *corev1.Container) {
			d.Spec.Template.Labels["sidecar.istio.io/inject"] = "false"
		}, want: "sidecar.istio.io/inject"},
		{name: "podAnnotations", mutate: func(d *appsv1.Deployment, _ *corev1.PodSpec, _ *corev1.Container) {
			delete(d.Spec.Template.Annotations, "prometheus.io/scrape")
		}, want: "prometheus.io/scrape"},
		{name: "serviceAccountName", mutate: func(_ *appsv1.Deployment, pod *corev1.PodSpec, _ *corev1.Container) {
			pod.ServiceAccountName, pod.DeprecatedServiceAccount = "admin", "admin"
		}, want: "serviceAccountName"},
		{name: "automountServiceAccountToken", mutate: func(_ *appsv1.Deployment, pod *corev1.PodSpec, _ *corev1.Container) {
			pod.AutomountServiceAccountToken = ptr.To(true)
		}, want: "automountServiceAccountToken is true; the Robot asks for false"},
		{name: "runAsNonRoot", mutate: func(_ *appsv1.Deployment, pod *corev1.PodSpec, _ *corev1.Container) {
			pod.SecurityContext.RunAsNonRoot = ptr.To(false)
		}, want: "securityContext.runAsNonRoot"},
		{name: "capabilities", mutate: func(_ *appsv1.Deployment, _ *corev1.PodSpec, c *corev1.Container) {
			c.SecurityContext.Capabilities.Drop = nil
		}, want: "capabilities"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.WorkloadRobot()
			desired, err := workload.NewDeployment(robot)
			if err != nil {
				t.Fatal(err)
			}
			current := liveDeployment(t, robot)
			robottest.APIServerDefaults(current)
			if tt.mutate != nil {
				tt.mutate(current, &current.Spec.Template.Spec, &current.Spec.Template.Spec.Containers[0])
			}
			got := DeploymentDrift(desired, current)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("drift %q, want none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("drift %q, want one that mentions %q", got, tt.want)
			}
		})
	}
}

// TestContainersDrift: what the Robot sets of its sidecars, init containers,
// grace period and preStop hook is compared like the rest, by server-side
// apply's keys (a container by its name): a sidecar deleted by kubectl edit
// is drift, put back by the next apply, and so is a changed one, or one
// moved after the init container; an init container another writer adds (a
// mesh's), wherever it is, is not.
func TestContainersDrift(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   string // a substring of the drift; "" for none
	}{
		{name: "as applied"},
		{name: "another writer's init container", mutate: func(d *appsv1.Deployment) {
			pod := &d.Spec.Template.Spec
			pod.InitContainers = append(pod.InitContainers, corev1.Container{Name: "mesh-init", Image: "mesh:1"})
		}},
		{name: "the sidecar deleted", mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.InitContainers = d.Spec.Template.Spec.InitContainers[1:]
		}, want: `spec.template.spec.initContainers[name="proxy"] is not set; the Robot asks for {"image":"proxy:1"`},
		{name: "the sidecar's restart policy removed", mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.InitContainers[0].RestartPolicy = nil
		}, want: `initContainers[name="proxy"].restartPolicy is not set`},
		{name: "the init container's args", mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.InitContainers[1].Args = []string{"down"}
		}, want: `initContainers[name="migrate"].args is ["down"]; the Robot asks for ["up"]`},
		{name: "the sidecar moved after the init container", mutate: func(d *appsv1.Deployment) {
			init := d.Spec.Template.Spec.InitContainers
			init[0], init[1] = init[1], init[0]
		}, want: "spec.template.spec.initContainers are in the order migrate, proxy; the Robot asks for proxy, migrate"},
		{name: "another writer's init container first", mutate: func(d *appsv1.Deployment) {
			pod := &d.Spec.Template.Spec
			pod.InitContainers = append([]corev1.Container{{Name: "mesh-init", Image: "mesh:1"}}, pod.InitContainers...)
		}},
		{name: "the grace period", mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
		}, want: "spec.template.spec.terminationGracePeriodSeconds is 30; the Robot asks for 45"},
		{name: "the preStop hook", mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Lifecycle = nil
		}, want: `containers[name="robot"].lifecycle is not set`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.NewRobot("test", 2)
			robot.Spec.Sidecars = []robotv1beta1.RobotSidecar{{RobotContainer: robotv1beta1.RobotContainer{Name: "proxy", Image: "proxy:1"},
				Ports: []robotv1beta1.RobotPort{{Name: "proxy", ContainerPort: 15001}}}}
			robot.Spec.InitContainers = []robotv1beta1.RobotContainer{{Name: "migrate", Image: "migrate:1", Args: []string{"up"}}}
			robot.Spec.TerminationGracePeriodSeconds = ptr.To[int64](45)
			robot.Spec.PreStop = &robotv1beta1.RobotPreStop{Sleep: &robotv1beta1.RobotSleep{Seconds: 10}}
			desired, err := workload.NewDeployment(robot)
			if err != nil {
				t.Fatal(err)
			}
			current := liveDeployment(t, robot)
			if tt.mutate != nil {
				tt.mutate(current)
			}
			got := DeploymentDrift(desired, current)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("drift %q, want none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("drift %q, want one that mentions %q", got, tt.want)
			}
		})
	}
}

// TestPodTemplateDrift: only a difference in the pod template rolls the
// pods; one of the replicas, the strategy or the Deployment's own metadata
// does not.
func TestPodTemplateDrift(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   string // a substring of the drift; "" for none
	}{
		{name: "as applied"},
		{name: "replicas", mutate: func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](7) }},
		{name: "strategy", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		}},
		{name: "spec hash", mutate: func(d *appsv1.Deployment) { d.Annotations[workload.AnnotationSpecHash] = "old" }},
		{name: "Deployment label", mutate: func(d *appsv1.Deployment) { delete(d.Labels, workload.LabelManagedBy) }},
		{name: "image", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "other:2" }, want: "image"},
		{name: "grace period", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](7200) }, want: "terminationGracePeriodSeconds is 7200"},
		{name: "pod label removed", mutate: func(d *appsv1.Deployment) { delete(d.Spec.Template.Labels, workload.LabelRobot) }, want: "spec.template.metadata.labels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.NewRobot("test", 2)
			robot.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
			desired, err := workload.NewDeployment(robot)
			if err != nil {
				t.Fatal(err)
			}
			current := liveDeployment(t, robot)
			if tt.mutate != nil {
				tt.mutate(current)
			}
			got := PodTemplateDrift(desired, current)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("pod template drift %q, want none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("pod template drift %q, want one that mentions %q", got, tt.want)
			}
		})
	}
}
