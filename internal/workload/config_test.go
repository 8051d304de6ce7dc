package workload

import (
	"testing"

	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

func TestConfigRefs(t *testing.T) {
	configMapKey := func(name string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}}
	}
	secretKey := func(name string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}}
	}
	tests := []struct {
		name string
		spec robotv1beta1.RobotSpec
		want []ConfigRef
	}{
		{name: "none", spec: robotv1beta1.RobotSpec{Image: "nginx", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}},
		{
			name: "volumes, projected sources too",
			spec: robotv1beta1.RobotSpec{Volumes: []robotv1beta1.RobotVolume{
				{Name: "a", ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
				{Name: "b", Secret: &corev1.SecretVolumeSource{SecretName: "tls"}},
				{Name: "c", EmptyDir: &corev1.EmptyDirVolumeSource{}},
				{Name: "d", Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "token"}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{}},
				}}},
			}},
			want: []ConfigRef{{ConfigMapKind, "extra"}, {ConfigMapKind, "settings"}, {SecretKind, "tls"}, {SecretKind, "token"}},
		},
		{
			name: "env and envFrom of every container, each once",
			spec: robotv1beta1.RobotSpec{
				Env: []corev1.EnvVar{{Name: "A", ValueFrom: configMapKey("settings")}, {Name: "B", ValueFrom: secretKey("db")},
					{Name: "C", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
				InitContainers: []robotv1beta1.RobotContainer{{Name: "migrate",
					EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "migrations"}}}}}},
				Sidecars: []robotv1beta1.RobotSidecar{{RobotContainer: robotv1beta1.RobotContainer{Name: "proxy",
					Env: []corev1.EnvVar{{Name: "P", ValueFrom: configMapKey("proxy")}}}}},
			},
			want: []ConfigRef{{ConfigMapKind, "proxy"}, {ConfigMapKind, "settings"}, {SecretKind, "db"}, {SecretKind, "migrations"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			robot := &robotv1beta1.Robot{Spec: tt.spec}
			if got := ConfigRefs(robot); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ConfigRefs = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConfigDigest(t *testing.T) {
	settings := ConfigObject{ConfigRef: ConfigRef{ConfigMapKind, "settings"}, UID: "u-1", ResourceVersion: "10"}
	tls := ConfigObject{ConfigRef: ConfigRef{SecretKind, "tls"}, UID: "u-2", ResourceVersion: "11"}
	base := ConfigDigest([]ConfigObject{settings, tls})
	if base == "" {
		t.Fatal("the digest of two objects is empty")
	}
	if got := ConfigDigest([]ConfigObject{tls, settings}); got != base {
		t.Errorf("the digest depends on the order: %s, then %s", base, got)
	}
	if got := ConfigDigest(nil); got != "" {
		t.Errorf("the digest of no objects is %q, want none", got)
	}
	changed := map[string]ConfigObject{}
	for name, change := range map[string]func(o *ConfigObject){
		"a new resourceVersion":  func(o *ConfigObject) { o.ResourceVersion = "12" },
		"made again (a new UID)": func(o *ConfigObject) { o.UID = "u-3" },
		"deleted":                func(o *ConfigObject) { o.UID, o.ResourceVersion = "", "" },
		"another name":           func(o *ConfigObject) { o.Name = "settings2" },
		"another kind":           func(o *ConfigObject) { o.Kind = SecretKind },
	} {
		o := settings
		change(&o)
		changed[name] = o
	}
	seen := map[string]string{base: "the original"}
	for name, o := range changed {
		got := ConfigDigest([]ConfigObject{o, tls})
		if other, ok := seen[got]; ok {
			t.Errorf("%s gives the digest of %s: %s", name, other, got)
		}
		seen[got] = name
	}
	// Fields run into each other only if they are not delimited.
	a := ConfigDigest([]ConfigObject{{ConfigRef: ConfigRef{ConfigMapKind, "ab"}, UID: "c"}})
	b := ConfigDigest([]ConfigObject{{ConfigRef: ConfigRef{ConfigMapKind, "a"}, UID: "bc"}})
	if a == b {
		t.Errorf("two different objects give one digest: %s", a)
	}
}

func TestNewDeploymentWithConfig(t *testing.T) {
	robot := func(opt *bool) *robotv1beta1.Robot {
		return &robotv1beta1.Robot{Spec: robotv1beta1.RobotSpec{Image: "nginx", RollOnConfigChange: opt,
			PodAnnotations: map[string]string{AnnotationConfigDigest: "set by the Robot", "a": "b"}}}
	}
	tests := []struct {
		name       string
		robot      *robotv1beta1.Robot
		digest     string
		wantDigest string
	}{
		{name: "opted in", robot: robot(ptr.To(true)), digest: "d1", wantDigest: "d1"},
		{name: "opted in, no config read", robot: robot(ptr.To(true)), digest: "", wantDigest: "set by the Robot"},
		{name: "opted out", robot: robot(ptr.To(false)), digest: "d1", wantDigest: "set by the Robot"},
		{name: "unset", robot: robot(nil), digest: "d1", wantDigest: "set by the Robot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deployment, err := NewDeploymentWithConfig(tt.robot, tt.digest)
			if err != nil {
				t.Fatal(err)
			}
			annotations := deployment.Spec.Template.Annotations
			if got := annotations[AnnotationConfigDigest]; got != tt.wantDigest {
				t.Errorf("the template's %s is %q, want %q", AnnotationConfigDigest, got, tt.wantDigest)
			}
			if annotations["a"] != "b" {
				t.Errorf("the Robot's podAnnotations are lost: %v", annotations)
			}
			plain, err := NewDeployment(tt.robot)
			if err != nil {
				t.Fatal(err)
			}
			sameHash := plain.Annotations[AnnotationSpecHash] == deployment.Annotations[AnnotationSpecHash]
			if wantSame := tt.wantDigest != tt.digest || tt.digest == ""; sameHash != wantSame {
				t.Errorf("the spec hash with the digest is the same as without: %v, want %v", sameHash, wantSame)
			}
		})
	}
	// Each new digest is a new spec hash: the Deployment is applied.
	var hashes []string
	for _, digest := range []string{"d1", "d2"} {
		deployment, err := NewDeploymentWithConfig(robot(ptr.To(true)), digest)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, deployment.Annotations[AnnotationSpecHash])
	}
	if hashes[0] == hashes[1] {
		t.Errorf("two digests give one spec hash %s", hashes[0])
	}
}
