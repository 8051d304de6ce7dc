package workload

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// AnnotationConfigDigest is the pod template's annotation of a Robot that
// rolls on config changes (spec.rollOnConfigChange): a digest of the
// identity and version of every ConfigMap and Secret its pods read. A new
// version of one of them is a new digest, so a new template, and the
// Deployment rolls the pods.
const AnnotationConfigDigest = "robot.dev/config-digest"

// ConfigKind is the kind of an object a Robot's pods read their config from.
type ConfigKind string

// The kinds of config a Robot's pods read.
const (
	ConfigMapKind ConfigKind = "ConfigMap"
	SecretKind    ConfigKind = "Secret"
)

// ConfigRef names a ConfigMap or a Secret that a Robot's pods read, in the
// Robot's namespace (a pod reads none of another).
type ConfigRef struct {
	Kind ConfigKind
	Name string
}

// ConfigObject is a referenced object as the operator sees it: its UID and
// resourceVersion, from its metadata alone. An empty UID means it does not
// exist (a reference marked optional, or one the pods wait for).
type ConfigObject struct {
	ConfigRef
	UID             types.UID
	ResourceVersion string
}

// RollsOnConfigChange reports whether robot asks for its pods to roll when
// a ConfigMap or Secret they read changes.
func RollsOnConfigChange(robot *robotv1beta1.Robot) bool {
	return ptr.Deref(robot.Spec.RollOnConfigChange, false)
}

// ConfigRefs returns the ConfigMaps and Secrets robot's pods read, through
// its volumes (projected ones too), env valueFrom and envFrom, in every
// container: sorted, each once. It does not look at whether the Robot
// rolls on config changes.
func ConfigRefs(robot *robotv1beta1.Robot) []ConfigRef {
	var refs []ConfigRef
	add := func(kind ConfigKind, name string) {
		if name != "" {
			refs = append(refs, ConfigRef{Kind: kind, Name: name})
		}
	}
	for _, volume := range robot.Spec.Volumes {
		if volume.ConfigMap != nil {
			add(ConfigMapKind, volume.ConfigMap.Name)
		}
		if volume.Secret != nil {
			add(SecretKind, volume.Secret.SecretName)
		}
		if volume.Projected != nil {
			for _, source := range volume.Projected.Sources {
				if source.ConfigMap != nil {
					add(ConfigMapKind, source.ConfigMap.Name)
				}
				if source.Secret != nil {
					add(SecretKind, source.Secret.Name)
				}
			}
		}
	}
	envs := [][]corev1.EnvVar{robot.Spec.Env}
	envFroms := [][]corev1.EnvFromSource{robot.Spec.EnvFrom}
	for _, c := range robot.Spec.InitContainers {
		envs, envFroms = append(envs, c.Env), append(envFroms, c.EnvFrom)
	}
	for _, c := range robot.Spec.Sidecars {
		envs, envFroms = append(envs, c.Env), append(envFroms, c.EnvFrom)
	}
	for _, env := range envs {
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
				add(ConfigMapKind, ref.Name)
			}
			if ref := e.ValueFrom.SecretKeyRef; ref != nil {
				add(SecretKind, ref.Name)
			}
		}
	}
	for _, envFrom := range envFroms {
		for _, from := range envFrom {
			if from.ConfigMapRef != nil {
				add(ConfigMapKind, from.ConfigMapRef.Name)
			}
			if from.SecretRef != nil {
				add(SecretKind, from.SecretRef.Name)
			}
		}
	}
	slices.SortFunc(refs, compareRefs)
	return slices.Compact(refs)
}

// compareRefs orders references by kind, then name.
func compareRefs(a, b ConfigRef) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
}

// ConfigDigest is a short, stable digest of objects, whatever their order:
// it changes when one of them is made, deleted, made again (a new UID) or
// changed (a new resourceVersion). It is "" for no objects, so that a Robot
// whose pods read no config gets no annotation.
func ConfigDigest(objects []ConfigObject) string {
	if len(objects) == 0 {
		return ""
	}
	sorted := slices.Clone(objects)
	slices.SortFunc(sorted, func(a, b ConfigObject) int { return compareRefs(a.ConfigRef, b.ConfigRef) })
	hash := sha256.New()
	for _, object := range sorted {
		// Every field ends with a byte none of them can hold, so no two
		// lists give the same input.
		for _, field := range []string{string(object.Kind), object.Name, string(object.UID), object.ResourceVersion} {
			hash.Write([]byte(field))
			hash.Write([]byte{0})
		}
	}
	return hex.EncodeToString(hash.Sum(nil)[:16])
}
