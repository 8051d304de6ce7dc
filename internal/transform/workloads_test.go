package transform

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	"github.com/robot-operator/robot-operator/internal/workload"
)

// big is a megabyte of anything.
var big = strings.Repeat("x", 1<<20)

func controller(apiVersion, kind, name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "owner-uid", Controller: ptr.To(true)}
}

// labelledMeta is the metadata of an object labelled as the operator's,
// with a megabyte of annotation and the given owner references.
func labelledMeta(owners ...metav1.OwnerReference) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: "web", Namespace: "tenant", UID: "uid-1", ResourceVersion: "42", Generation: 3,
		Labels:          map[string]string{workload.LabelManagedBy: workload.LabelManagedByValue, "padding": "x"},
		Annotations:     map[string]string{"padding": big},
		OwnerReferences: owners,
	}
}

func bigDeployment(owners ...metav1.OwnerReference) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: labelledMeta(owners...),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i", Env: []corev1.EnvVar{{Name: "PADDING", Value: big}}}}}},
		},
	}
}

func bigService(owners ...metav1.OwnerReference) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: labelledMeta(owners...),
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: big, Port: 80}}},
	}
}

// TestWorkloadsKeepsOnlyRobotsObjects: a Deployment or Service that a
// Robot controls is cached whole; any other that carries the operator's
// label (which anyone may set) is reduced to what the "name taken" check
// reads: its name, namespace, UID, resourceVersion and controller
// reference.
func TestWorkloadsKeepsOnlyRobotsObjects(t *testing.T) {
	robot := controller("robot.dev/v1beta1", "Robot", "web")
	stubMeta := func(owners ...metav1.OwnerReference) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "web", Namespace: "tenant", UID: "uid-1", ResourceVersion: "42", OwnerReferences: owners}
	}
	notController := robot
	notController.Controller = nil
	for _, tc := range []struct {
		name     string
		owners   []metav1.OwnerReference
		whole    bool
		stubRefs []metav1.OwnerReference // the stub's owner references
	}{
		{name: "controlled by a Robot", owners: []metav1.OwnerReference{robot}, whole: true},
		{name: "controlled by a v1alpha1 Robot reference", owners: []metav1.OwnerReference{controller("robot.dev/v1alpha1", "Robot", "web")}, whole: true},
		{name: "controlled by a Robot, among other owners", owners: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "u"}, robot}, whole: true},
		{name: "no owner"},
		{name: "owned by a Robot, not as controller", owners: []metav1.OwnerReference{notController}},
		{name: "controlled by something else", owners: []metav1.OwnerReference{controller("example.com/v1", "Other", "web")}, stubRefs: []metav1.OwnerReference{controller("example.com/v1", "Other", "web")}},
		{name: "a Robot of another group", owners: []metav1.OwnerReference{controller("robots.example.com/v1", "Robot", "web")}, stubRefs: []metav1.OwnerReference{controller("robots.example.com/v1", "Robot", "web")}},
	} {
		t.Run(tc.name+", Deployment", func(t *testing.T) {
			in := bigDeployment(tc.owners...)
			want := bigDeployment(tc.owners...)
			if !tc.whole {
				want = &appsv1.Deployment{ObjectMeta: stubMeta(tc.stubRefs...)}
			}
			got, err := Workloads(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := diff.Diff(want, got); diff != "" {
				t.Errorf("cached (-want +got), first 2000 bytes:\n%.2000s", diff)
			}
		})
		t.Run(tc.name+", Service", func(t *testing.T) {
			in := bigService(tc.owners...)
			want := bigService(tc.owners...)
			if !tc.whole {
				want = &corev1.Service{ObjectMeta: stubMeta(tc.stubRefs...)}
			}
			got, err := Workloads(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := diff.Diff(want, got); diff != "" {
				t.Errorf("cached (-want +got), first 2000 bytes:\n%.2000s", diff)
			}
		})
	}
}
