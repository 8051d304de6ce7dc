package workload

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestAPIServerDefaultsAreTheRealOnes: apiServerDefaults, which the fuzz
// tests use in place of a real API server, sets what kube-apiserver v1.37
// sets. Its answers to server-side dry-run creates are recorded in
// testdata/apiserver: for the two golden Deployments, and for
// defaultsProbe, which leaves unset every field apiServerDefaults defaults.
// To record them again, against a cluster of the Kubernetes version pinned in
// hack/tools that has a namespace "robots":
//
//	go test -run TestAPIServerDefaultsAreTheRealOnes . -update   # writes defaults-probe-request.json
//	kubectl create --dry-run=server -o json -f testdata/golden/deployment.json >testdata/apiserver/deployment.json
//	kubectl create --dry-run=server -o json -f testdata/golden/deployment-workload.json >testdata/apiserver/deployment-workload.json
//	kubectl create --dry-run=server -o json -f testdata/apiserver/defaults-probe-request.json >testdata/apiserver/defaults-probe.json
func TestAPIServerDefaultsAreTheRealOnes(t *testing.T) {
	if *update {
		data, err := json.MarshalIndent(defaultsProbe(), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("testdata/apiserver/defaults-probe-request.json", append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ request, answer string }{
		{"testdata/golden/deployment.json", "testdata/apiserver/deployment.json"},
		{"testdata/golden/deployment-workload.json", "testdata/apiserver/deployment-workload.json"},
		{"testdata/apiserver/defaults-probe-request.json", "testdata/apiserver/defaults-probe.json"},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			var request, answer appsv1.Deployment
			readJSON(t, tc.request, &request)
			readJSON(t, tc.answer, &answer)
			robottest.APIServerDefaults(&request)
			if d := diff.Diff(answer.Spec, request.Spec); d != "" {
				t.Errorf("apiServerDefaults differs from the API server's answer (-API server +apiServerDefaults):\n%s", d)
			}
		})
	}
}

func readJSON(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// defaultsProbe is a Deployment with every field that apiServerDefaults
// defaults left unset, in every place it looks.
func defaultsProbe() *appsv1.Deployment {
	probes := []*corev1.Probe{
		{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}},
		{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 8080}}},
		{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 7},
	}
	container := func(name, image string, port int32) corev1.Container {
		return corev1.Container{
			Name:  name,
			Image: image,
			Ports: []corev1.ContainerPort{{Name: name, ContainerPort: port}},
			Env: []corev1.EnvVar{
				{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "FROM_FILE", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "files", Path: "env", Key: "KEY"}}},
			},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100u"), corev1.ResourceMemory: resource.MustParse("0.5Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1.2336")},
			},
			ReadinessProbe: probes[0],
			LivenessProbe:  probes[1],
			StartupProbe:   probes[2],
		}
	}
	labels := map[string]string{"app": "defaults"}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: "robots"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "web",
					Containers:         []corev1.Container{container("tagged", "robot:1.0", 8080), container("untagged", "robot", 8081)},
					InitContainers:     []corev1.Container{{Name: "init", Image: "robot:latest"}},
					Tolerations:        []corev1.Toleration{{Key: "dedicated", Value: "web"}, {Operator: corev1.TolerationOpExists}},
					Volumes: []corev1.Volume{
						{Name: "files"},
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}},
						{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
						{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1024Mi"))}}},
						{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
							{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
							{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
							{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}},
						}}}},
					},
				},
			},
		},
	}
}
