package workload

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestSpecChanges: what changed between two specs, one phrase each, in a
// fixed order; a value written otherwise but equal is no change.
func TestSpecChanges(t *testing.T) {
	base := func() *robotv1beta1.RobotSpec {
		return &robotv1beta1.RobotSpec{
			Image:    "nginx:1.27",
			Replicas: ptr.To[int32](2),
			Ports:    []robotv1beta1.RobotPort{{Name: "http", ContainerPort: 8080}},
			Env:      []corev1.EnvVar{{Name: "MODE", Value: "a"}, {Name: "OLD", Value: "x"}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
			},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(spec *robotv1beta1.RobotSpec)
		want   []string
	}{
		{"nothing", func(*robotv1beta1.RobotSpec) {}, nil},
		{"image tag", func(s *robotv1beta1.RobotSpec) { s.Image = "nginx:1.28" }, []string{"image nginx:1.27 → 1.28"}},
		{"image repository", func(s *robotv1beta1.RobotSpec) { s.Image = "registry.example:5000/nginx:1.27" },
			[]string{"image nginx:1.27 → registry.example:5000/nginx:1.27"}},
		{"image digest", func(s *robotv1beta1.RobotSpec) { s.Image = "nginx@sha256:abc" }, []string{"image nginx:1.27 → sha256:abc"}},
		{"replicas", func(s *robotv1beta1.RobotSpec) { s.Replicas = ptr.To[int32](3) }, []string{"replicas 2 → 3"}},
		{"replicas to the default", func(s *robotv1beta1.RobotSpec) { s.Replicas = nil }, []string{"replicas 2 → 1 (default)"}},
		{"env added, changed and removed", func(s *robotv1beta1.RobotSpec) {
			s.Env = []corev1.EnvVar{{Name: "MODE", Value: "b"}, {Name: "LOG_LEVEL", Value: "debug"}}
		}, []string{"env MODE changed", "env LOG_LEVEL added", "env OLD removed"}},
		{"env reordered", func(s *robotv1beta1.RobotSpec) { s.Env[0], s.Env[1] = s.Env[1], s.Env[0] }, []string{"env reordered"}},
		{"port number", func(s *robotv1beta1.RobotSpec) { s.Ports[0].ContainerPort = 9090 }, []string{"port http 8080 → 9090"}},
		{"port protocol", func(s *robotv1beta1.RobotSpec) { s.Ports[0].Protocol = corev1.ProtocolUDP }, []string{"port http changed"}},
		{"port added and removed", func(s *robotv1beta1.RobotSpec) {
			s.Ports = []robotv1beta1.RobotPort{{Name: "web", ContainerPort: 80}}
		}, []string{"port web (80) added", "port http removed"}},
		{"resources", func(s *robotv1beta1.RobotSpec) {
			s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
			s.Resources.Limits = nil
		}, []string{"cpu request 100m → 200m", "memory request 64Mi added", "memory limit 128Mi removed"}},
		{"resources written otherwise", func(s *robotv1beta1.RobotSpec) {
			s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.1")}
		}, nil},
		{"another field", func(s *robotv1beta1.RobotSpec) {
			s.ReadinessProbe = &corev1.Probe{PeriodSeconds: 5}
			s.Args = []string{"-v"}
		}, []string{"args changed", "readinessProbe changed"}},
		{"several, in order", func(s *robotv1beta1.RobotSpec) {
			s.Args, s.Image, s.Env = []string{"-v"}, "nginx:1.28", append(s.Env, corev1.EnvVar{Name: "LOG_LEVEL"})
		}, []string{"image nginx:1.27 → 1.28", "env LOG_LEVEL added", "args changed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after := base()
			tc.change(after)
			got := SpecChanges(base(), after)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("changes %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDescribeChanges: as many changes as fit the limit, then how many
// more there are.
func TestDescribeChanges(t *testing.T) {
	changes := []string{"image nginx:1.27 → 1.28", "env LOG_LEVEL added", "args changed"}
	for _, tc := range []struct {
		name    string
		changes []string
		limit   int
		want    string
	}{
		{"none", nil, 100, ""},
		{"all fit", changes, 100, "image nginx:1.27 → 1.28; env LOG_LEVEL added; args changed"},
		{"exactly", changes, len("image nginx:1.27 → 1.28; env LOG_LEVEL added; args changed"), "image nginx:1.27 → 1.28; env LOG_LEVEL added; args changed"},
		{"one more", changes, 59, "image nginx:1.27 → 1.28; env LOG_LEVEL added; and 1 more"},
		{"two more", changes, 40, "image nginx:1.27 → 1.28; and 2 more"},
		{"none fits", changes, 10, "3 changes"},
		{"the only one does not fit", changes[:1], 10, "1 change"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DescribeChanges(tc.changes, tc.limit)
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if len(got) > tc.limit {
				t.Errorf("%d bytes, over the limit of %d", len(got), tc.limit)
			}
		})
	}
}
