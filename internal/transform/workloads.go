package transform

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// RobotLookup returns the Robot of that namespace and name from the Robot
// cache, and false when the cache has none.
type RobotLookup func(namespace, name string) (*robotv1beta1.Robot, bool)

// Workloads returns the transform of the informers of the objects a Robot
// owns (Deployments, Services, PodDisruptionBudgets, HTTPRoutes), which
// looks Robots up with robots. The informers select by the label
// app.kubernetes.io/managed-by, which anyone who may create a Deployment
// can set, so what they cache is not the operator's to size. An object a
// Robot controls is cached whole, its managedFields trimmed
// (TrimManagedFields). Any other is cached as a stub (stubMeta): the
// controller only ever asks of it whether a Robot controls it, and names
// its controller when the name is taken.
func Workloads(robots RobotLookup) func(obj interface{}) (interface{}, error) {
	return func(obj interface{}) (interface{}, error) {
		return workloads(obj)
	}
}

func workloads(obj interface{}) (interface{}, error) {
	switch object := obj.(type) {
	case *appsv1.Deployment:
		if !robotControlled(object) {
			return &appsv1.Deployment{ObjectMeta: stubMeta(object)}, nil
		}
	case *corev1.Service:
		if !robotControlled(object) {
			return &corev1.Service{ObjectMeta: stubMeta(object)}, nil
		}
	case *policyv1.PodDisruptionBudget:
		if !robotControlled(object) {
			return &policyv1.PodDisruptionBudget{ObjectMeta: stubMeta(object)}, nil
		}
	case *gatewayv1.HTTPRoute:
		if !robotControlled(object) {
			return &gatewayv1.HTTPRoute{ObjectMeta: stubMeta(object)}, nil
		}
	}
	return TrimManagedFields(obj)
}

// robotControlled reports whether object's controller reference names a
// Robot (of any version of robot.dev; the controller compares the UID).
func robotControlled(object metav1.Object) bool {
	ref := metav1.GetControllerOfNoCopy(object)
	if ref == nil || ref.Kind != "Robot" {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == robotv1beta1.SchemeGroupVersion.Group
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
