package owned

import (
	"testing"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
)

// TestNameTakenSaysWhoseAndWhatToDo: an object of the name of the Robot's
// that someone else controls is, whatever its kind, one error that names
// the kind, the object and its controller, with the kind's reason and what
// a person can do about it, in the words the Robots have always shown.
func TestNameTakenSaysWhoseAndWhatToDo(t *testing.T) {
	robot := policyRobot()
	f := newPolicyFixture(t, robot)
	kube := informers.NewSharedInformerFactory(f.kube, 0)
	found := &Discovery{}
	found.SetAvailable(true)
	owner := metav1.ObjectMeta{Name: "shop", Namespace: robot.Namespace,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: "x", Controller: ptr.To(true)}}}
	check := func(checkControlled func() error, reason, message string) {
		t.Helper()
		err := checkControlled()
		if failure := outcome.Classify(err); failure.Reason != reason || failure.Retry != outcome.RecheckLater {
			t.Errorf("%v: classified %+v, want %s rechecked later", err, failure, reason)
		}
		if err == nil || err.Error() != message {
			t.Errorf("message %v\nwant    %s", err, message)
		}
	}

	deployments, err := Deployments(f.deps, kube.Apps().V1().Deployments(), f.kube, policy.Policy{}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(func() error { return deployments.checkControlled(robot, &appsv1.Deployment{ObjectMeta: owner}) }, "DeploymentNameTaken",
		`Deployment "shop" already exists and is not controlled by this Robot (it is controlled by ReplicaSet/x); `+
			`the operator leaves it alone: delete it, or recreate the Robot with another spec.deploymentName`)
	services, err := Services(f.deps, kube.Core().V1().Services(), f.kube, policy.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	check(func() error { return services.checkControlled(robot, &corev1.Service{ObjectMeta: owner}) }, "ServiceNameTaken",
		`Service "shop" already exists and is not controlled by this Robot (it is controlled by ReplicaSet/x); `+
			`the operator leaves it alone: delete it, set spec.service.type to None, or recreate the Robot with another spec.deploymentName`)
	budgets, err := DisruptionBudgets(f.deps, kube.Policy().V1().PodDisruptionBudgets(), f.kube, policy.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	check(func() error {
		return budgets.checkControlled(robot, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: robot.Namespace}})
	}, "DisruptionBudgetNameTaken",
		`PodDisruptionBudget "shop" already exists and is not controlled by this Robot; `+
			`the operator leaves it alone: delete it, or set spec.disruptionBudget.disabled`)
	routes, err := Routes(f.deps, gatewayinformers.NewSharedInformerFactory(f.gateway, 0).Gateway().V1().HTTPRoutes(), f.gateway, found, policy.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	check(func() error { return routes.checkControlled(robot, &gatewayv1.HTTPRoute{ObjectMeta: owner}) }, "RouteNameTaken",
		`HTTPRoute "shop" already exists and is not controlled by this Robot (it is controlled by ReplicaSet/x); `+
			`the operator leaves it alone: delete it, or remove spec.http`)
}
