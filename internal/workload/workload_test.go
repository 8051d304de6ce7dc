package workload

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/robottest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// deploymentOf is the Deployment NewDeployment builds for robot, as a
// Deployment.
func deploymentOf(t *testing.T, robot *robotv1beta1.Robot) *appsv1.Deployment {
	t.Helper()
	desired, err := NewDeployment(robot)
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := RoundTrip(desired, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

func TestWorkloadDeployment(t *testing.T) {
	robot := robottest.WorkloadRobot()
	d := deploymentOf(t, robot)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	for _, check := range []struct {
		field     string
		want, got any
	}{
		{"command", robot.Spec.Command, c.Command},
		{"args", robot.Spec.Args, c.Args},
		{"imagePullPolicy", robot.Spec.ImagePullPolicy, c.ImagePullPolicy},
		{"imagePullSecrets", robot.Spec.ImagePullSecrets, pod.ImagePullSecrets},
		{"envFrom", robot.Spec.EnvFrom, c.EnvFrom},
		{"readinessProbe", robot.Spec.ReadinessProbe, c.ReadinessProbe},
		{"livenessProbe", robot.Spec.LivenessProbe, c.LivenessProbe},
		{"startupProbe", robot.Spec.StartupProbe, c.StartupProbe},
		{"volumeMounts", robot.Spec.VolumeMounts, c.VolumeMounts},
		{"nodeSelector", robot.Spec.Placement.NodeSelector, pod.NodeSelector},
		{"tolerations", robot.Spec.Placement.Tolerations, pod.Tolerations},
		{"affinity", robot.Spec.Placement.Affinity, pod.Affinity},
		{"topologySpreadConstraints", robot.Spec.Placement.TopologySpreadConstraints, pod.TopologySpreadConstraints},
		{"priorityClassName", robot.Spec.Placement.PriorityClassName, pod.PriorityClassName},
		{"podAnnotations", robot.Spec.PodAnnotations, d.Spec.Template.Annotations},
		{"serviceAccountName", robot.Spec.ServiceAccountName, pod.ServiceAccountName},
		{"automountServiceAccountToken", ptr.To(false), pod.AutomountServiceAccountToken},
		{"pod labels", map[string]string{
			LabelManagedBy: LabelManagedByValue, labelName: labelNameValue, LabelInstance: "web", LabelRobot: "web",
			"sidecar.istio.io/inject": "true",
		}, d.Spec.Template.Labels},
		{"volumes", []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: robot.Spec.Volumes[0].ConfigMap}},
			{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: robot.Spec.Volumes[1].Secret}},
			{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: robot.Spec.Volumes[2].EmptyDir}},
			// With the API server's defaults inside the atomic
			// list of sources.
			{Name: "identity", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "token", ExpirationSeconds: ptr.To[int64](3600)}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}}}}},
			}}}},
		}, pod.Volumes},
		{"pod security context", &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}, pod.SecurityContext},
		{"container security context", &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}, c.SecurityContext},
	} {
		if d := diff.Diff(asJSONValue(t, check.want), asJSONValue(t, check.got)); d != "" {
			t.Errorf("%s (-want +got):\n%s", check.field, d)
		}
	}
	if robot.Spec.Volumes[3].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds != nil {
		t.Error("newDeployment changed the Robot's projected volume")
	}
}

// asJSONValue is v as its JSON decodes into plain values, so that the
// comparison ignores the Go types (a []corev1.Capability and []string).
func asJSONValue(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWorkloadServiceAccountToken: a token only for a Robot that asks for
// one, whether it names a ServiceAccount or runs as the namespace's default.
func TestWorkloadServiceAccountToken(t *testing.T) {
	for _, tt := range []struct {
		name           string
		serviceAccount string
		automount      *bool
		want           *bool
	}{
		{name: "neither", want: ptr.To(false)},
		{name: "a ServiceAccount", serviceAccount: "web", want: ptr.To(false)},
		{name: "a ServiceAccount and a token", serviceAccount: "web", automount: ptr.To(true), want: ptr.To(true)},
		{name: "a ServiceAccount and no token", serviceAccount: "web", automount: ptr.To(false), want: ptr.To(false)},
		{name: "no token from the default ServiceAccount", automount: ptr.To(false), want: ptr.To(false)},
		{name: "a token from the default ServiceAccount", automount: ptr.To(true), want: ptr.To(true)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.NewRobot("test", 1)
			robot.Spec.ServiceAccountName, robot.Spec.AutomountServiceAccountToken = tt.serviceAccount, tt.automount
			pod := deploymentOf(t, robot).Spec.Template.Spec
			if !ptr.Equal(pod.AutomountServiceAccountToken, tt.want) {
				t.Errorf("automountServiceAccountToken %v, want %v", ptr.Deref(pod.AutomountServiceAccountToken, false), ptr.Deref(tt.want, false))
			}
			if pod.ServiceAccountName != tt.serviceAccount {
				t.Errorf("serviceAccountName %q, want %q", pod.ServiceAccountName, tt.serviceAccount)
			}
		})
	}
}

// TestWorkloadDefaultReadinessProbe: a Robot with a TCP port and no
// readiness probe gets a TCP probe on the first TCP port, by name, so that
// Ready means the port answers; a probe of its own replaces it, and without
// a TCP port there is nothing a TCP connection can probe.
func TestWorkloadDefaultReadinessProbe(t *testing.T) {
	// By number: a name would have to be one of the Robot's ports.
	own := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}}
	tcpProbe := func(name string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(name)}}}
	}
	http := robotv1beta1.RobotPort{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}
	admin := robotv1beta1.RobotPort{Name: "admin", ContainerPort: 9000, Protocol: corev1.ProtocolTCP}
	dns := robotv1beta1.RobotPort{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP}
	sctp := robotv1beta1.RobotPort{Name: "signal", ContainerPort: 3868, Protocol: corev1.ProtocolSCTP}
	for _, tt := range []struct {
		name  string
		ports []robotv1beta1.RobotPort
		probe *corev1.Probe
		want  *corev1.Probe
	}{
		{name: "no port", want: nil},
		{name: "a port", ports: []robotv1beta1.RobotPort{http}, want: tcpProbe("http")},
		{name: "two ports: the first", ports: []robotv1beta1.RobotPort{admin, http}, want: tcpProbe("admin")},
		{name: "the first TCP port after a UDP one", ports: []robotv1beta1.RobotPort{dns, http, admin}, want: tcpProbe("http")},
		{name: "a port without a protocol is TCP", ports: []robotv1beta1.RobotPort{dns, {Name: "plain", ContainerPort: 80}}, want: tcpProbe("plain")},
		{name: "UDP only", ports: []robotv1beta1.RobotPort{dns}, want: nil},
		{name: "UDP and SCTP", ports: []robotv1beta1.RobotPort{dns, sctp}, want: nil},
		{name: "a port and a probe", ports: []robotv1beta1.RobotPort{http}, probe: own, want: own},
		{name: "a probe and no port", probe: own, want: own},
		{name: "a probe and UDP only", ports: []robotv1beta1.RobotPort{dns}, probe: own, want: own},
	} {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.NewRobot("test", 1)
			robot.Spec.Ports, robot.Spec.ReadinessProbe = tt.ports, tt.probe
			got := deploymentOf(t, robot).Spec.Template.Spec.Containers[0].ReadinessProbe
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				gotJSON, _ := json.Marshal(got)
				wantJSON, _ := json.Marshal(tt.want)
				t.Errorf("readinessProbe %s, want %s", gotJSON, wantJSON)
			}
		})
	}
}

// TestWorkloadUnsetKeepsTheDeployment: a Robot that sets a pod template
// field to what unset means builds the Deployment of a Robot that leaves it
// unset (testdata/golden/deployment.json shows that Deployment byte for
// byte), so writing an empty list or the default profile rolls no pod.
func TestWorkloadUnsetKeepsTheDeployment(t *testing.T) {
	base := robottest.NewRobot("test", 2)
	want, err := json.Marshal(deploymentOf(t, base))
	if err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*robotv1beta1.RobotSpec){
		"baseline": func(s *robotv1beta1.RobotSpec) { s.SecurityProfile = robotv1beta1.SecurityProfileBaseline },
		"empty lists": func(s *robotv1beta1.RobotSpec) {
			s.Command, s.EnvFrom, s.Volumes, s.Placement.Tolerations = []string{}, []corev1.EnvFromSource{}, nil, []corev1.Toleration{}
		},
		"empty maps": func(s *robotv1beta1.RobotSpec) {
			s.Placement.NodeSelector, s.PodLabels, s.PodAnnotations = map[string]string{}, map[string]string{}, nil
		},
		"empty others": func(s *robotv1beta1.RobotSpec) {
			s.ImagePullSecrets, s.VolumeMounts = []corev1.LocalObjectReference{}, []corev1.VolumeMount{}
		},
		"empty placement": func(s *robotv1beta1.RobotSpec) {
			s.Placement = robotv1beta1.RobotPlacement{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{}}
		},
		"no minReadySeconds": func(s *robotv1beta1.RobotSpec) { s.MinReadySeconds = 0 },
	} {
		t.Run(name, func(t *testing.T) {
			robot := base.DeepCopy()
			mutate(&robot.Spec)
			got, err := json.Marshal(deploymentOf(t, robot))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("the Deployment differs from the one without the field:\n%s", robottest.LineDiff(string(want), string(got)))
			}
		})
	}
}

func TestWorkloadRejectsInvalidSpecs(t *testing.T) {
	for name, tt := range map[string]struct {
		mutate func(*robotv1beta1.RobotSpec)
		want   string
	}{
		"selector label": {func(s *robotv1beta1.RobotSpec) { s.PodLabels = map[string]string{LabelRobot: "other"} }, "spec.podLabels cannot set robot.dev/name"},
		"instance label": {func(s *robotv1beta1.RobotSpec) { s.PodLabels = map[string]string{LabelInstance: "other"} }, "spec.podLabels cannot set app.kubernetes.io/instance"},
		"volume without a source": {func(s *robotv1beta1.RobotSpec) {
			s.Volumes = []robotv1beta1.RobotVolume{{Name: "host"}}
		}, `spec.volumes[0] ("host") must have exactly one of configMap, secret, emptyDir or projected, not 0`},
		"volume with two sources": {func(s *robotv1beta1.RobotSpec) {
			s.Volumes = []robotv1beta1.RobotVolume{{Name: "two", EmptyDir: &corev1.EmptyDirVolumeSource{}, Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}
		}, "not 2"},
		"mount of no volume": {func(s *robotv1beta1.RobotSpec) {
			s.VolumeMounts = []corev1.VolumeMount{{Name: "missing", MountPath: "/x"}}
		}, `spec.volumeMounts[0] names "missing"`},
		"security profile": {func(s *robotv1beta1.RobotSpec) { s.SecurityProfile = "privileged" }, `spec.securityProfile must be baseline or restricted, not "privileged"`},
		"port name":        {func(s *robotv1beta1.RobotSpec) { s.Ports[0].Name = "HTTP" }, `spec.ports[0].name "HTTP" is not a port name`},
		"no port name":     {func(s *robotv1beta1.RobotSpec) { s.Ports[0].Name = "" }, `spec.ports[0].name "" is not a port name`},
		"port name twice": {func(s *robotv1beta1.RobotSpec) {
			s.Ports = append(s.Ports, robotv1beta1.RobotPort{Name: "http", ContainerPort: 9090})
		}, `spec.ports[1].name "http" names two ports`},
		"port number and protocol twice": {func(s *robotv1beta1.RobotSpec) {
			// No protocol is TCP, the first port's.
			s.Ports = append(s.Ports, robotv1beta1.RobotPort{Name: "other", ContainerPort: 8080})
		}, "spec.ports[1]: two ports have containerPort 8080 and protocol TCP"},
		"port protocol": {func(s *robotv1beta1.RobotSpec) { s.Ports[0].Protocol = "ICMP" }, `spec.ports[0].protocol must be TCP, UDP or SCTP, not "ICMP"`},
		"strategy type": {func(s *robotv1beta1.RobotSpec) {
			s.Strategy = &robotv1beta1.RobotStrategy{Type: "BlueGreen"}
		}, `spec.strategy.type must be RollingUpdate or Recreate, not "BlueGreen"`},
		"rollingUpdate with Recreate": {func(s *robotv1beta1.RobotSpec) {
			s.Strategy = &robotv1beta1.RobotStrategy{Type: robotv1beta1.StrategyRecreate, RollingUpdate: &robotv1beta1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(1))}}
		}, "spec.strategy.rollingUpdate can be set only when spec.strategy.type is RollingUpdate"},
		"no surge and no unavailable": {func(s *robotv1beta1.RobotSpec) {
			s.Strategy = &robotv1beta1.RobotStrategy{RollingUpdate: &robotv1beta1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromString("0%"))}}
		}, "maxSurge and maxUnavailable cannot both be 0"},
		"minReadySeconds":                          {func(s *robotv1beta1.RobotSpec) { s.MinReadySeconds = -1 }, "spec.minReadySeconds must be between 0 and 599, below the Deployment's progress deadline, not -1"},
		"minReadySeconds at the progress deadline": {func(s *robotv1beta1.RobotSpec) { s.MinReadySeconds = 600 }, "spec.minReadySeconds must be between 0 and 599, below the Deployment's progress deadline, not 600"},
	} {
		t.Run(name, func(t *testing.T) {
			robot := robottest.NewRobot("test", 1)
			tt.mutate(&robot.Spec)
			_, err := NewDeployment(robot)
			var invalid *outcome.InvalidSpecError
			if !errors.As(err, &invalid) {
				t.Fatalf("got %v, want an invalid spec error", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want one that says %q", err, tt.want)
			}
		})
	}
}

// TestGoldenWorkloadDeployment is TestGoldenApplyBodies for a Robot that sets
// every pod template field: what the operator sends for it shows in review.
func TestGoldenWorkloadDeployment(t *testing.T) {
	robot := robottest.GoldenRobot()
	robotWithWorkload := robottest.WorkloadRobot()
	robotWithWorkload.Spec.Image, robotWithWorkload.Spec.Replicas, robotWithWorkload.Spec.Ports = robot.Spec.Image, robot.Spec.Replicas, robot.Spec.Ports
	robotWithWorkload.ObjectMeta = robot.ObjectMeta
	robotWithWorkload.Name = "golden-web"
	desired, err := NewDeployment(robotWithWorkload)
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, "deployment-workload.json", desired)
}

// compareGolden compares body, as indented JSON, with the file of that name
// under testdata/golden, or rewrites the file with -update.
func compareGolden(t *testing.T, file string, body any) {
	t.Helper()
	got, err := json.MarshalIndent(body, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := "testdata/golden/" + file
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (to write it: go test -run Golden . -update)", err)
	}
	if string(want) != string(got) {
		t.Errorf("the apply body differs from %s (-file +now); if the change is meant, rewrite it with `go test -run Golden . -update` and commit it:\n%s",
			path, robottest.LineDiff(string(want), string(got)))
	}
}
