package robottest

import (
	"cmp"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// GoldenRobot is a Robot that sets every field of its spec, each in a way
// that shows in the Deployment.
func GoldenRobot() *robotv1beta1.Robot {
	return &robotv1beta1.Robot{
		TypeMeta: metav1.TypeMeta{APIVersion: robotv1beta1.SchemeGroupVersion.String(), Kind: "Robot"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            "golden",
			Namespace:       "robots",
			UID:             "5b0c4d52-8f1e-4e7a-9c1d-0a2b3c4d5e6f",
			Generation:      3,
			ResourceVersion: "4711",
		},
		Spec: robotv1beta1.RobotSpec{
			Image:          "registry.example/team/robot:1.4.2",
			Replicas:       ptr.To[int32](3),
			DeploymentName: "golden-runner",
			Ports:          []robotv1beta1.RobotPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Service:        &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeNodePort},
			Args:           []string{"serve", "--verbose"},
			Env: []corev1.EnvVar{
				{Name: "MODE", Value: "demo"},
				// No apiVersion: the operator fills in the API server's
				// default, v1.
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "API_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "robot-secrets"},
					Key:                  "token",
					Optional:             ptr.To(false),
				}}},
			},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
			},
		},
	}
}

// GoldenDeployment is robot's Deployment with every replica updated and
// available, as the Deployment controller reports it.
func GoldenDeployment(robot *robotv1beta1.Robot) *appsv1.Deployment {
	replicas := *robot.Spec.Replicas
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: cmp.Or(robot.Spec.DeploymentName, robot.Name), Namespace: robot.Namespace, Generation: 2},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 2,
			Replicas:           replicas,
			UpdatedReplicas:    replicas,
			ReadyReplicas:      replicas,
			AvailableReplicas:  replicas,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: `ReplicaSet "golden-runner-6d4b9c8f7" has successfully progressed.`},
			},
		},
	}
}

// LineDiff shows how got differs from want, line by line: "-" for a line
// only want has, "+" for one only got has, with up to three unchanged lines
// around each change.
func LineDiff(want, got string) string {
	split := func(s string) []string {
		// Lines keep their newline, so that a missing last one shows.
		lines := strings.SplitAfter(s, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		return lines
	}
	a, b := split(want), split(got)
	// common[i][j]: the length of the longest common subsequence of a[i:]
	// and b[j:]. Golden files are small.
	common := make([][]int, len(a)+1)
	for i := range common {
		common[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				common[i][j] = common[i+1][j+1] + 1
			} else {
				common[i][j] = max(common[i+1][j], common[i][j+1])
			}
		}
	}
	type line struct {
		mark byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			lines = append(lines, line{' ', a[i]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || common[i+1][j] >= common[i][j+1]):
			lines = append(lines, line{'-', a[i]})
			i++
		default:
			lines = append(lines, line{'+', b[j]})
			j++
		}
	}
	const context = 3
	var out strings.Builder
	lastShown := -1
	for k, l := range lines {
		near := false
		for d := max(0, k-context); d <= min(len(lines)-1, k+context); d++ {
			if lines[d].mark != ' ' {
				near = true
				break
			}
		}
		if !near {
			continue
		}
		if lastShown >= 0 && k > lastShown+1 {
			out.WriteString("   ...\n")
		}
		text, newline := strings.CutSuffix(l.text, "\n")
		if !newline {
			text += " (no newline at the end)"
		}
		fmt.Fprintf(&out, "%c %s\n", l.mark, text)
		lastShown = k
	}
	return out.String()
}

// WorkloadRobot is a Robot that sets every pod template field, the way a
// real service would.
func WorkloadRobot() *robotv1beta1.Robot {
	robot := NewRobot("web", 2)
	robot.Spec.Command = []string{"/agnhost"}
	robot.Spec.Args = []string{"netexec", "--http-port=8080"}
	robot.Spec.ImagePullPolicy = corev1.PullIfNotPresent
	robot.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-credentials"}}
	robot.Spec.EnvFrom = []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}},
		{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-db"}, Optional: ptr.To(true)}},
	}
	robot.Spec.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}}, PeriodSeconds: 5}
	robot.Spec.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}}
	robot.Spec.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/started"}}}, FailureThreshold: 30}
	robot.Spec.Volumes = []robotv1beta1.RobotVolume{
		{Name: "config", ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}},
		{Name: "tls", Secret: &corev1.SecretVolumeSource{SecretName: "web-tls", DefaultMode: ptr.To[int32](0o400)}},
		{Name: "cache", EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("64Mi"))}},
		{Name: "identity", Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "token"}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
		}}},
	}
	robot.Spec.VolumeMounts = []corev1.VolumeMount{
		{Name: "config", MountPath: "/etc/web", ReadOnly: true},
		{Name: "tls", MountPath: "/etc/tls", ReadOnly: true},
		{Name: "cache", MountPath: "/var/cache/web"},
		{Name: "identity", MountPath: "/var/run/identity", ReadOnly: true},
	}
	robot.Spec.Placement = robotv1beta1.RobotPlacement{
		NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
		Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				TopologyKey:   "kubernetes.io/hostname",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{labelRobot: "web"}},
			},
		}}}},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
			MaxSkew:           1,
			TopologyKey:       "topology.kubernetes.io/zone",
			WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{labelRobot: "web"}},
		}},
		PriorityClassName: "web-critical",
	}
	robot.Spec.PodLabels = map[string]string{"sidecar.istio.io/inject": "true"}
	robot.Spec.PodAnnotations = map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080"}
	robot.Spec.ServiceAccountName = "web"
	robot.Spec.SecurityProfile = robotv1beta1.SecurityProfileRestricted
	return robot
}

// RolloutRobot is a Robot that sets what robot.dev/v1beta1 added to the
// spec: several ports of several protocols, a rollout strategy and
// minReadySeconds, with a Service.
func RolloutRobot() *robotv1beta1.Robot {
	robot := NewRobot("relay", 4)
	robot.Spec.Ports = []robotv1beta1.RobotPort{
		{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
		{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
	}
	robot.Spec.Service = &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeClusterIP}
	robot.Spec.Strategy = &robotv1beta1.RobotStrategy{
		Type: robotv1beta1.StrategyRollingUpdate,
		RollingUpdate: &robotv1beta1.RollingUpdate{
			MaxSurge:       ptr.To(intstr.FromInt32(1)),
			MaxUnavailable: ptr.To(intstr.FromString("0%")),
		},
	}
	robot.Spec.MinReadySeconds = 15
	return robot
}

// LoadBalancerRobot is a Robot whose LoadBalancer Service sets every field
// of spec.service: a cloud's annotations, labels, both traffic policies,
// source ranges and a class.
func LoadBalancerRobot() *robotv1beta1.Robot {
	robot := NewRobot("edge", 2)
	robot.Spec.Service = &robotv1beta1.RobotService{
		Type: robotv1beta1.ServiceTypeLoadBalancer,
		Annotations: map[string]string{
			"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal",
			"service.beta.kubernetes.io/aws-load-balancer-type":   "external",
		},
		Labels:                   map[string]string{"team": "edge", "example.com/exposure": "internal"},
		ExternalTrafficPolicy:    corev1.ServiceExternalTrafficPolicyLocal,
		InternalTrafficPolicy:    corev1.ServiceInternalTrafficPolicyLocal,
		LoadBalancerSourceRanges: []string{"10.0.0.0/8", "2001:db8::/32"},
		LoadBalancerClass:        "example.com/internal-lb",
	}
	return robot
}
