package transform

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/robot-operator/robot-operator/internal/workload"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// RobotLookup returns the Robot of that namespace and name from the Robot
// cache, and false when the cache has none.
type RobotLookup func(namespace, name string) (*robotv1beta1.Robot, bool)

// Workloads returns the transform of the informers of the objects a Robot
// owns, of any kind, which
// looks Robots up with robots. The informers select by the label
// app.kubernetes.io/managed-by, which anyone who may create a Deployment
// can set, and anyone may write a controller reference naming any Robot's
// UID, which the garbage collector leaves while that Robot exists: so what
// they cache is not the operator's to size. An object is cached whole, its
// managedFields trimmed (TrimManagedFields), only when the Robot its
// controller reference names is in the Robot cache with that UID and gives
// its objects the object's name: one object per Robot and kind, but for
// the ControllerRevisions of its history, each named after the hash of
// the spec it holds (workload.RevisionName), up to the limit, and cached
// without that spec (its data), which the name stands for. Any other
// is cached as a stub (stubMeta): the controller only ever asks of it
// whether a Robot controls it, and names its controller when the name is
// taken. The Robot cache must have synced before these informers start,
// or a Robot's own objects are stubs too; the controller re-reads a stub
// that its Robot controls (IsStub).
func Workloads(robots RobotLookup) func(obj interface{}) (interface{}, error) {
	return func(obj interface{}) (interface{}, error) {
		if object, ok := obj.(metav1.Object); ok && !robotsOwn(object, robots) {
			return stub(object), nil
		}
		if revision, ok := obj.(*appsv1.ControllerRevision); ok {
			// Its name says which spec it holds: the spec is read from
			// the API server when it is needed, and never kept.
			revision.Data = runtime.RawExtension{}
		}
		return TrimManagedFields(obj)
	}
}

// stub returns an object of object's type that holds only stubMeta: a
// new zero value of the type the pointer object points to, whatever kind
// it is.
func stub(object metav1.Object) metav1.Object {
	kept := reflect.New(reflect.TypeOf(object).Elem()).Interface().(metav1.Object)
	meta := stubMeta(object)
	kept.SetName(meta.Name)
	kept.SetNamespace(meta.Namespace)
	kept.SetUID(meta.UID)
	kept.SetResourceVersion(meta.ResourceVersion)
	kept.SetOwnerReferences(meta.OwnerReferences)
	return kept
}

// robotsOwn reports whether object's controller reference names a Robot
// (of any version of robot.dev) that robots holds with that UID, and
// whether object has the name that Robot gives its objects.
func robotsOwn(object metav1.Object, robots RobotLookup) bool {
	ref := metav1.GetControllerOfNoCopy(object)
	if ref == nil || ref.Kind != "Robot" {
		return false
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != robotv1beta1.SchemeGroupVersion.Group {
		return false
	}
	robot, ok := robots(object.GetNamespace(), ref.Name)
	if !ok || robot.UID != ref.UID {
		return false
	}
	if revision, isRevision := object.(*appsv1.ControllerRevision); isRevision {
		// No data: this transform dropped it, having checked it, and is
		// handed the object again (client-go may). No spec's JSON is
		// empty, so such a name never stands for a Robot's spec.
		return len(revision.Data.Raw) == 0 || object.GetName() == workload.RevisionName(robot, revision.Data.Raw)
	}
	return object.GetName() == workload.DeploymentName(robot)
}

// IsStub reports whether object, from a cache that Workloads fills, is a
// stub. Every object those informers cache carries the managed-by label
// they select by, and a stub keeps no label.
func IsStub(object metav1.Object) bool {
	return object.GetLabels() == nil
}

// stubMeta is what the cache keeps of an object no Robot controls: its
// name, namespace and UID (the key, and owner resolution by UID), its
// resourceVersion (events of an unchanged object are skipped, and the
// freshest copy is told by it), and its controller reference alone, for
// the "name taken" reason. The rest (labels, annotations, spec, status,
// other owners) is not read, and may be as large as the API server allows.
func stubMeta(object metav1.Object) metav1.ObjectMeta {
	meta := metav1.ObjectMeta{
		Name:            object.GetName(),
		Namespace:       object.GetNamespace(),
		UID:             object.GetUID(),
		ResourceVersion: object.GetResourceVersion(),
	}
	if ref := metav1.GetControllerOfNoCopy(object); ref != nil {
		meta.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return meta
}
