package transform

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	"github.com/robot-operator/robot-operator/internal/workload"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// big is a megabyte of anything.
var big = strings.Repeat("x", 1<<20)

// webRobot is a Robot cache holding one Robot, tenant/web, whose UID is
// owner-uid and whose objects are named web.
func webRobot(namespace, name string) (*robotv1beta1.Robot, bool) {
	if namespace != "tenant" || name != "web" {
		return nil, false
	}
	return &robotv1beta1.Robot{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "web", UID: "owner-uid"}}, true
}

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
			got, err := Workloads(webRobot)(in)
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
			got, err := Workloads(webRobot)(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := diff.Diff(want, got); diff != "" {
				t.Errorf("cached (-want +got), first 2000 bytes:\n%.2000s", diff)
			}
		})
	}
}

// TestWorkloadsKeepsOnlyCachedRobotsObjects: an object is cached whole only
// when its controller reference names a Robot the Robot cache holds, by
// UID, and the object has the name that Robot gives its objects. Anyone
// who may create a Deployment may write any controller reference on it,
// and the garbage collector leaves it while the Robot it names exists, so
// forged ones (a Robot's real UID on objects of other names, a made-up
// UID, a Robot not cached) are kept as stubs.
func TestWorkloadsKeepsOnlyCachedRobotsObjects(t *testing.T) {
	withUID := func(ref metav1.OwnerReference, uid string) metav1.OwnerReference {
		ref.UID = types.UID(uid)
		return ref
	}
	robot := controller("robot.dev/v1beta1", "Robot", "web")
	named := func(name string, robots RobotLookup) RobotLookup {
		return func(namespace, robotName string) (*robotv1beta1.Robot, bool) {
			r, ok := robots(namespace, robotName)
			if !ok {
				return nil, false
			}
			r = r.DeepCopy()
			r.Spec.DeploymentName = name
			return r, true
		}
	}
	notCached := func(string, string) (*robotv1beta1.Robot, bool) { return nil, false }
	for _, tc := range []struct {
		name   string
		robots RobotLookup
		object string // the object's name
		owner  metav1.OwnerReference
		whole  bool
	}{
		{name: "the Robot's own object", robots: webRobot, object: "web", owner: robot, whole: true},
		{name: "the Robot's own object, its deploymentName set", robots: named("api", webRobot), object: "api", owner: robot, whole: true},
		{name: "the Robot's UID on an object of another name", robots: webRobot, object: "forged-1", owner: robot},
		{name: "the Robot's UID on the Robot's name, with deploymentName set", robots: named("api", webRobot), object: "web", owner: robot},
		{name: "a made-up UID", robots: webRobot, object: "web", owner: withUID(robot, "made-up")},
		{name: "a Robot the cache does not hold", robots: notCached, object: "web", owner: robot},
		{name: "a Robot of another name", robots: webRobot, object: "web", owner: controller("robot.dev/v1beta1", "Robot", "other")},
	} {
		stub := metav1.ObjectMeta{Name: tc.object, Namespace: "tenant", UID: "uid-1", ResourceVersion: "42", OwnerReferences: []metav1.OwnerReference{tc.owner}}
		t.Run(tc.name+", Deployment", func(t *testing.T) {
			in := bigDeployment(tc.owner)
			in.Name = tc.object
			want := bigDeployment(tc.owner)
			want.Name = tc.object
			if !tc.whole {
				want = &appsv1.Deployment{ObjectMeta: stub}
			}
			got, err := Workloads(tc.robots)(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := diff.Diff(want, got); diff != "" {
				t.Errorf("cached (-want +got), first 2000 bytes:\n%.2000s", diff)
			}
		})
		t.Run(tc.name+", PodDisruptionBudget", func(t *testing.T) {
			in := &policyv1.PodDisruptionBudget{ObjectMeta: labelledMeta(tc.owner)}
			in.Name = tc.object
			want := in.DeepCopy()
			if !tc.whole {
				want = &policyv1.PodDisruptionBudget{ObjectMeta: stub}
			}
			got, err := Workloads(tc.robots)(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := diff.Diff(want, got); diff != "" {
				t.Errorf("cached (-want +got), first 2000 bytes:\n%.2000s", diff)
			}
		})
	}
}
