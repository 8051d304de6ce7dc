package owned

import (
	"slices"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/status"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// The resources of the requests the tests expect.
var (
	servicesResource = corev1.SchemeGroupVersion.WithResource("services")
	budgetsResource  = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
)

// withBudgets gives the paths f makes the PodDisruptionBudgets, as the
// operator always does.
func (f *policyFixture) withBudgets() *policyFixture {
	f.sources.Without = slices.DeleteFunc(slices.Clone(f.sources.Without), func(kind string) bool { return kind == "PodDisruptionBudget" })
	return f
}

// add puts objects in the API server and in their kind's cache, as the
// informers would have them.
func (f *policyFixture) add(t *testing.T, objects ...runtime.Object) {
	t.Helper()
	for _, object := range objects {
		if err := f.kube.Tracker().Add(object); err != nil {
			t.Fatal(err)
		}
	}
	f.cacheOnly(t, objects...)
}

// cacheOnly puts objects in their kind's cache alone.
func (f *policyFixture) cacheOnly(t *testing.T, objects ...runtime.Object) {
	t.Helper()
	for _, object := range objects {
		var err error
		switch object := object.(type) {
		case *appsv1.Deployment:
			err = f.deployments.Add(object)
		case *corev1.Service:
			err = f.services.Add(object)
		case *policyv1.PodDisruptionBudget:
			err = f.budgets.Add(object)
		default:
			t.Fatalf("no cache for %T", object)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// check fails t unless the requests f's API server got since the last
// check are expected, bodies included, and forgets them.
func (f *policyFixture) check(t *testing.T, expected ...core.Action) {
	t.Helper()
	robottest.CheckActions(t, "kube", expected, robottest.FilterInformerActions(f.kube.Actions()))
	f.kube.ClearActions()
}

// events returns the Events recorded since the last call.
func (f *pathFixture) events() []string {
	var events []string
	for len(f.recorder.Events) > 0 {
		events = append(events, <-f.recorder.Events)
	}
	return events
}

// statusOf is the status the Robot, which asks for no route, reports for
// what a sync of its paths returned.
func (f *policyFixture) statusOf(robot *robotv1beta1.Robot, objects Objects, syncErr error) robotv1beta1.RobotStatus {
	now := metav1.NewTime(f.clock.Now())
	computed, _ := status.Diagnosed(robot, objects.Deployment, objects.Service, nil, nil, syncErr, now)
	status.WithDisruptionBudget(robot, &computed, objects.DisruptionBudget(), now)
	return computed
}

// converged sets robot's status to what it reported an hour ago for
// objects, so that a sync has nothing left to do.
func converged(robot *robotv1beta1.Robot, objects Objects) {
	now := metav1.NewTime(robottest.FixtureNow.Add(-time.Hour))
	robot.Status, _ = status.Diagnosed(robot, objects.Deployment, objects.Service, nil, nil, nil, now)
	status.WithDisruptionBudget(robot, &robot.Status, objects.DisruptionBudget(), now)
}

// liveDeployment is robot's Deployment as the API server holds it after
// the operator applied it and the Deployment controller rolled it out.
func liveDeployment(t *testing.T, robot *robotv1beta1.Robot) *appsv1.Deployment {
	desired, err := workload.NewDeployment(robot)
	return robottest.LiveDeploymentOf(t, desired, err)
}

// liveService is robot's Service as the API server holds it.
func liveService(t *testing.T, robot *robotv1beta1.Robot) *corev1.Service {
	return robottest.LiveServiceOf(t, workload.NewService(robot))
}

// liveBudget is robot's PodDisruptionBudget as the API server holds it.
func liveBudget(t *testing.T, robot *robotv1beta1.Robot) *policyv1.PodDisruptionBudget {
	return robottest.LiveBudgetOf(t, workload.NewDisruptionBudget(robot))
}

// One expectation helper per kind of request.

func getDeployment(namespace, name string) core.Action {
	return core.NewGetAction(robottest.DeploymentsResource, namespace, name)
}

func createDeployment(t *testing.T, robot *robotv1beta1.Robot) core.Action {
	desired, err := (*Config)(nil).desiredDeployment(robot)
	if err != nil {
		t.Fatal(err)
	}
	var deployment appsv1.Deployment
	if err := workload.RoundTrip(desired, &deployment); err != nil {
		t.Fatal(err)
	}
	return core.NewCreateAction(robottest.DeploymentsResource, robot.Namespace, &deployment)
}

// applyDeployment is the apply of robot's Deployment onto the one whose
// UID is uid.
func applyDeployment(t *testing.T, robot *robotv1beta1.Robot, uid types.UID) core.Action {
	desired, err := (*Config)(nil).desiredDeployment(robot)
	if err != nil {
		t.Fatal(err)
	}
	desired.WithUID(uid)
	return core.NewPatchAction(robottest.DeploymentsResource, robot.Namespace, *desired.Name, types.ApplyPatchType, robottest.MustJSON(t, desired))
}

// claimCreatedFields is the patch that makes the fields of the operator's
// create of deployment its apply's.
func claimCreatedFields(t *testing.T, deployment *appsv1.Deployment) core.Action {
	i := drift.CreatedFieldsEntry(deployment.ManagedFields)
	if i < 0 {
		t.Fatalf("Deployment %s has no entry of the operator's create", deployment.Name)
	}
	return claim(t, robottest.DeploymentsResource, deployment, i)
}

// claim is the patch that makes object's managedFields entry i the
// operator's apply's.
func claim(t *testing.T, resource schema.GroupVersionResource, object metav1.Object, i int) core.Action {
	patch, err := writer.ClaimPatch(object, i)
	if err != nil {
		t.Fatal(err)
	}
	return core.NewPatchAction(resource, object.GetNamespace(), object.GetName(), types.JSONPatchType, patch)
}

func getService(namespace, name string) core.Action {
	return core.NewGetAction(servicesResource, namespace, name)
}

func createService(t *testing.T, robot *robotv1beta1.Robot) core.Action {
	var service corev1.Service
	if err := workload.RoundTrip(workload.NewService(robot), &service); err != nil {
		t.Fatal(err)
	}
	return core.NewCreateAction(servicesResource, robot.Namespace, &service)
}

// applyService is the apply of robot's Service onto the one whose UID is
// uid.
func applyService(t *testing.T, robot *robotv1beta1.Robot, uid types.UID) core.Action {
	desired := workload.NewService(robot).WithUID(uid)
	return core.NewPatchAction(servicesResource, robot.Namespace, *desired.Name, types.ApplyPatchType, robottest.MustJSON(t, desired))
}

// deleteService is the delete of service, with its UID precondition: a
// Service created under the same name since is never deleted.
func deleteService(service *corev1.Service) core.Action {
	return core.NewDeleteActionWithOptions(servicesResource, service.Namespace, service.Name,
		metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(service.UID))})
}

func createBudget(t *testing.T, robot *robotv1beta1.Robot) core.Action {
	var budget policyv1.PodDisruptionBudget
	if err := workload.RoundTrip(workload.NewDisruptionBudget(robot), &budget); err != nil {
		t.Fatal(err)
	}
	return core.NewCreateAction(budgetsResource, robot.Namespace, &budget)
}

// applyBudget is the apply of robot's PodDisruptionBudget onto the one
// whose UID is uid.
func applyBudget(t *testing.T, robot *robotv1beta1.Robot, uid types.UID) core.Action {
	desired := workload.NewDisruptionBudget(robot).WithUID(uid)
	return core.NewPatchAction(budgetsResource, robot.Namespace, *desired.Name, types.ApplyPatchType, robottest.MustJSON(t, desired))
}

// deleteBudget is the delete, with its UID precondition, of budget.
func deleteBudget(budget *policyv1.PodDisruptionBudget) core.Action {
	return core.NewDeleteActionWithOptions(budgetsResource, budget.Namespace, budget.Name,
		metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(budget.UID))})
}
