package drift

import (
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

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
			robottest.ApiServerDefaults(current)
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
