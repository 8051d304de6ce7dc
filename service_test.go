package main

import (
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/status"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

var servicesResource = corev1.SchemeGroupVersion.WithResource("services")

func (f *fixture) addService(service *corev1.Service) {
	f.serviceLister = append(f.serviceLister, service)
	f.kubeObjects = append(f.kubeObjects, service)
}

func (f *fixture) expectCreateService(robot *robotv1alpha1.Robot) {
	var s corev1.Service
	if err := workload.RoundTrip(workload.NewService(robot), &s); err != nil {
		f.t.Fatal(err)
	}
	f.kubeActions = append(f.kubeActions, core.NewCreateAction(servicesResource, robot.Namespace, &s))
}

func (f *fixture) expectApplyService(robot *robotv1alpha1.Robot) {
	desired := workload.NewService(robot)
	f.kubeActions = append(f.kubeActions, core.NewPatchAction(servicesResource, robot.Namespace, *desired.Name, types.ApplyPatchType, robottest.MustJSON(f.t, desired)))
}

func (f *fixture) expectDeleteService(service *corev1.Service) {
	f.kubeActions = append(f.kubeActions, core.NewDeleteActionWithOptions(servicesResource, service.Namespace, service.Name,
		metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(service.UID))}))
}

// convergedWithService sets robot's status to what the operator writes for
// its Deployment and Service.
func convergedWithService(robot *robotv1alpha1.Robot, deployment *appsv1.Deployment, service *corev1.Service) {
	robot.Status = status.ComputeStatus(robot, deployment, service, nil, metav1.NewTime(robottest.FixtureNow.Add(-time.Hour)))
}

// checkDeletePreconditions fails unless every delete the sync made carries
// a UID precondition: a Service created under the same name since is never
// deleted.
func (f *fixture) checkDeletePreconditions() {
	f.t.Helper()
	for _, action := range f.kubeClient.Actions() {
		if del, ok := action.(core.DeleteAction); ok {
			if p := del.GetDeleteOptions().Preconditions; p == nil || p.UID == nil || *p.UID == "" {
				f.t.Errorf("%s has no UID precondition", describe(action))
			}
		}
	}
}

func TestServiceCreated(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewServiceRobot("test", robotv1alpha1.ServiceTypeClusterIP)
	deployment := liveDeployment(t, robot)
	converged(robot, deployment)
	f.addRobot(robot)
	f.addDeployment(deployment)

	f.expectCreateService(robot)
	// The fake API server fills in nothing: the Service as created.
	var created corev1.Service
	if err := workload.RoundTrip(workload.NewService(robot), &created); err != nil {
		t.Fatal(err)
	}
	status := status.ComputeStatus(robot, deployment, &created, nil, metav1.NewTime(robottest.FixtureNow))
	if status.ServiceName != "test" {
		t.Fatalf("status.serviceName %q, want %q", status.ServiceName, "test")
	}
	f.expectApplyStatus(robot, status)

	f.run(ctx, cache.MetaObjectToName(robot))
	f.expectEvents(corev1.EventTypeNormal + " " + writer.EventServiceCreated + ` Created Service "test"`)
}

func TestNewRobotWithServiceCostsTwoCreates(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewServiceRobot("test", robotv1alpha1.ServiceTypeNodePort)
	f.addRobot(robot)

	f.expectCreateDeployment(robot)
	f.expectCreateService(robot)
	created := liveDeployment(t, robot)
	created.Generation, created.Status = 0, appsv1.DeploymentStatus{}
	status := status.ComputeStatus(robot, created, liveService(t, robot), nil, metav1.NewTime(robottest.FixtureNow))
	if status.ServiceName != "test" {
		t.Fatalf("status.serviceName %q, want %q", status.ServiceName, "test")
	}
	f.expectApplyStatus(robot, status)
	f.run(ctx, cache.MetaObjectToName(robot))
}

func TestConvergedRobotWithServiceCostsNothing(t *testing.T) {
	for _, serviceType := range []robotv1alpha1.ServiceType{robotv1alpha1.ServiceTypeClusterIP, robotv1alpha1.ServiceTypeNodePort, robotv1alpha1.ServiceTypeLoadBalancer} {
		t.Run(string(serviceType), func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			robot := robottest.NewServiceRobot("test", serviceType)
			deployment, service := liveDeployment(t, robot), liveService(t, robot)
			convergedWithService(robot, deployment, service)
			f.addRobot(robot)
			f.addDeployment(deployment)
			f.addService(service)

			f.run(ctx, cache.MetaObjectToName(robot))
			f.expectEvents()
		})
	}
}

func TestServiceDriftReverted(t *testing.T) {
	for name, edit := range map[string]func(*corev1.Service){
		"selector":    func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "other"} },
		"target port": func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(9999) },
		"type":        func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort },
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			robot := robottest.NewServiceRobot("test", robotv1alpha1.ServiceTypeClusterIP)
			deployment, service := liveDeployment(t, robot), liveService(t, robot)
			convergedWithService(robot, deployment, service)
			edit(service)
			f.addRobot(robot)
			f.addDeployment(deployment)
			f.addService(service)

			f.expectApplyService(robot)
			f.run(ctx, cache.MetaObjectToName(robot))
			if events := f.events(); len(events) != 1 || !hasPrefix(events[0], corev1.EventTypeNormal+" "+writer.EventServiceUpdated) {
				t.Errorf("expected one %s event, got %q", writer.EventServiceUpdated, events)
			}
		})
	}
}

// TestServiceTypeChange: the Robot asks for another type; the fields the
// create set are made the apply's first, so that what the Robot no longer
// asks for can go.
func TestServiceTypeChange(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewServiceRobot("test", robotv1alpha1.ServiceTypeNodePort)
	deployment, service := liveDeployment(t, robot), liveService(t, robot)
	service.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: workload.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate}}
	convergedWithService(robot, deployment, service)
	robot.Spec.Service.Type = robotv1alpha1.ServiceTypeClusterIP
	robot.Generation = 2
	f.addRobot(robot)
	f.addDeployment(deployment)
	f.addService(service)

	patch, err := drift.ClaimPatch(service, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.kubeActions = append(f.kubeActions, core.NewPatchAction(servicesResource, service.Namespace, service.Name, types.JSONPatchType, patch))
	f.expectApplyService(robot)
	// The new generation is reported; the Service is still "test".
	f.expectApplyStatus(robot, status.ComputeStatus(robot, deployment, service, nil, metav1.NewTime(robottest.FixtureNow)))
	f.run(ctx, cache.MetaObjectToName(robot))
	if events := f.events(); len(events) != 1 || !strings.Contains(events[0], `spec.type is "NodePort"; the Robot asks for "ClusterIP"`) {
		t.Errorf("events %q, want one saying the type changed", events)
	}
}

// TestServiceNotWanted: a Robot whose Service type becomes None, or whose
// port goes, loses its Service, by UID; one it does not control is left.
func TestServiceNotWanted(t *testing.T) {
	none := func(r *robotv1alpha1.Robot) { r.Spec.Service.Type = robotv1alpha1.ServiceTypeNone }
	noPort := func(r *robotv1alpha1.Robot) { r.Spec.Port = nil }
	for _, tt := range []struct {
		name    string
		change  func(*robotv1alpha1.Robot)
		foreign bool
	}{
		{"None", none, false},
		{"port removed", noPort, false},
		{"None, someone else's Service", none, true},
		{"port removed, someone else's Service", noPort, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			robot := robottest.NewServiceRobot("test", robotv1alpha1.ServiceTypeClusterIP)
			service := liveService(t, robot)
			if tt.foreign {
				service.OwnerReferences = nil
			}
			tt.change(robot)
			deployment := liveDeployment(t, robot)
			converged(robot, deployment)
			f.addRobot(robot)
			f.addDeployment(deployment)
			f.addService(service)

			if !tt.foreign {
				f.expectDeleteService(service)
			}
			f.run(ctx, cache.MetaObjectToName(robot))
			f.checkDeletePreconditions()
			if tt.foreign {
				f.expectEvents()
			} else {
				f.expectEvents(corev1.EventTypeNormal + " " + writer.EventServiceDeleted + ` Deleted Service "test": the Robot asks for none`)
			}
		})
	}
}

// TestNoServiceCostsNoRequest: a Robot without a Service makes no Service
// request at all, not even a read.
func TestNoServiceCostsNoRequest(t *testing.T) {
	for name, change := range map[string]func(*robotv1alpha1.Robot){
		"no port": func(r *robotv1alpha1.Robot) { r.Spec.Port, r.Spec.Service = nil, nil },
		"None":    func(*robotv1alpha1.Robot) {},
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			robot := robottest.NewServiceRobot("test", robotv1alpha1.ServiceTypeNone)
			change(robot)
			deployment := liveDeployment(t, robot)
			converged(robot, deployment)
			f.addRobot(robot)
			f.addDeployment(deployment)
			f.run(ctx, cache.MetaObjectToName(robot))
		})
	}
}

// TestServiceNotControlled: a Service of the name that the Robot does not
// control is never written; Synced says why, Ready stays about the
// Deployment, one Warning is recorded, and the Robot looks again later.
func TestServiceNotControlled(t *testing.T) {
	for name, inCache := range map[string]bool{"in the cache": true, "outside the cache": false} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			robot := robottest.NewServiceRobot("test", robotv1alpha1.ServiceTypeClusterIP)
			deployment := liveDeployment(t, robot)
			converged(robot, deployment)
			f.addRobot(robot)
			f.addDeployment(deployment)
			foreign := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: robot.Namespace, UID: "foreign", ResourceVersion: "2",
					Labels: map[string]string{workload.LabelManagedBy: workload.LabelManagedByValue}},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
			}
			if inCache {
				f.addService(foreign)
			} else {
				foreign.Labels = nil
				f.kubeObjects = append(f.kubeObjects, foreign)
				f.expectCreateService(robot)
				f.kubeActions = append(f.kubeActions, core.NewGetAction(servicesResource, robot.Namespace, "test"))
			}
			status := status.ComputeStatus(robot, deployment, nil, &outcome.ServiceNameTakenError{Name: "test"}, metav1.NewTime(robottest.FixtureNow))
			if ready := robottest.FindCondition(status, robotv1alpha1.ConditionReady); ready.Status != metav1.ConditionTrue {
				t.Errorf("Ready %s (%s), want True: the Deployment runs", ready.Status, ready.Reason)
			}
			if synced := robottest.FindCondition(status, robotv1alpha1.ConditionSynced); synced.Reason != robotv1alpha1.ReasonServiceNameTaken {
				t.Errorf("Synced reason %q, want %q", synced.Reason, robotv1alpha1.ReasonServiceNameTaken)
			}
			f.expectApplyStatus(robot, status)

			if requeueAfter := f.run(ctx, cache.MetaObjectToName(robot)); requeueAfter != nameTakenRecheck {
				t.Errorf("requeue after %v, want %v", requeueAfter, nameTakenRecheck)
			}
			if events := f.events(); len(events) != 1 || !hasPrefix(events[0], corev1.EventTypeWarning+" "+robotv1alpha1.ReasonServiceNameTaken) {
				t.Errorf("expected one %s warning, got %q", robotv1alpha1.ReasonServiceNameTaken, events)
			}
		})
	}
}

// TestServiceNameTakenWarnsOnce: the next sync with the name still taken
// writes nothing and warns no more.
func TestServiceNameTakenWarnsOnce(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewServiceRobot("test", robotv1alpha1.ServiceTypeClusterIP)
	deployment := liveDeployment(t, robot)
	robot.Status = status.ComputeStatus(robot, deployment, nil, &outcome.ServiceNameTakenError{Name: "test"}, metav1.NewTime(robottest.FixtureNow.Add(-time.Hour)))
	f.addRobot(robot)
	f.addDeployment(deployment)
	f.addService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: robot.Namespace, UID: "foreign", ResourceVersion: "2",
		Labels: map[string]string{workload.LabelManagedBy: workload.LabelManagedByValue}}})

	f.run(ctx, cache.MetaObjectToName(robot))
	f.expectEvents()
}

// TestServiceStatus: the status names the Service the Robot controls, and
// a failure of the Service alone leaves Ready about the Deployment.
func TestServiceStatus(t *testing.T) {
	robot := robottest.NewServiceRobot("web", robotv1alpha1.ServiceTypeClusterIP)
	deployment := liveDeployment(t, robot)
	now := metav1.NewTime(robottest.FixtureNow)
	if got := status.ComputeStatus(robot, deployment, liveService(t, robot), nil, now).ServiceName; got != "web" {
		t.Errorf("with its Service: serviceName %q, want %q", got, "web")
	}
	if got := status.ComputeStatus(robot, deployment, nil, nil, now).ServiceName; got != "" {
		t.Errorf("without a Service: serviceName %q, want none", got)
	}
	for _, syncErr := range []error{&outcome.ServiceNameTakenError{Name: "web"}, &outcome.EarlierRobotError{Name: "web", Kind: "Service"}} {
		status := status.ComputeStatus(robot, deployment, nil, syncErr, now)
		ready, synced := robottest.FindCondition(status, robotv1alpha1.ConditionReady), robottest.FindCondition(status, robotv1alpha1.ConditionSynced)
		if ready.Status != metav1.ConditionTrue {
			t.Errorf("%v: Ready %s (%s), want True", syncErr, ready.Status, ready.Reason)
		}
		if synced.Status != metav1.ConditionFalse || !strings.Contains(synced.Message, `Service "web"`) {
			t.Errorf("%v: Synced %s %q, want False naming the Service", syncErr, synced.Status, synced.Message)
		}
	}
	// The status apply carries serviceName only when there is one, so that
	// a Robot without a Service writes what it wrote before the field
	// existed.
	computed := status.ComputeStatus(robot, deployment, nil, nil, now)
	if body := string(robottest.MustJSON(t, status.StatusApplyConfiguration(robot, &computed))); strings.Contains(body, "serviceName") {
		t.Errorf("status apply without a Service mentions serviceName: %s", body)
	}
}

func liveService(t *testing.T, robot *robotv1alpha1.Robot) *corev1.Service {
	return robottest.LiveServiceOf(t, workload.NewService(robot))
}
