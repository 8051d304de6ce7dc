package owned

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/status"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// serviceNameTakenHint is what a Robot whose Service name is taken is told
// to do, besides deleting that Service.
const serviceNameTakenHint = "set spec.service.type to None, or recreate the Robot with another spec.deploymentName"

// serviceFixture is a fixture of robot, converged on objects, which are in
// the caches and the API server.
func serviceFixture(t *testing.T, robot *robotv1beta1.Robot, objects Objects) *policyFixture {
	converged(robot, objects)
	f := newPolicyFixture(t, robot)
	if objects.Deployment != nil {
		f.add(t, objects.Deployment)
	}
	if objects.Service != nil {
		f.add(t, objects.Service)
	}
	return f
}

// unchanged fails t unless the status of what a sync returned is what the
// Robot says already: the sync wrote nothing, its status included, and
// warned of nothing.
func (f *policyFixture) unchanged(t *testing.T, robot *robotv1beta1.Robot, objects Objects, syncErr error) {
	t.Helper()
	f.statusUnchanged(t, robot, objects, syncErr)
	f.check(t)
	if events := f.events(); len(events) != 0 {
		t.Errorf("events %q, want none", events)
	}
}

// statusUnchanged fails t unless the status of what a sync returned is
// what the Robot says already: no status is written.
func (f *policyFixture) statusUnchanged(t *testing.T, robot *robotv1beta1.Robot, objects Objects, syncErr error) {
	t.Helper()
	if got := f.statusOf(robot, objects, syncErr); !apiequality.Semantic.DeepEqual(got, robot.Status) {
		t.Errorf("the status changed (-was +now):\n%s", diff.Diff(robot.Status, got))
	}
}

// warned returns the Warning the Controller records when the Robot, which
// reported before, now reports now.
func warned(before, now robotv1beta1.RobotStatus) []string {
	if warning := status.NewWarning(before, now); warning != nil {
		return []string{corev1.EventTypeWarning + " " + warning.Reason + " " + warning.Message}
	}
	return nil
}

func TestServiceCreated(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeClusterIP)
	deployment := liveDeployment(t, robot)
	f := serviceFixture(t, robot, Objects{Deployment: deployment})

	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	if err != nil {
		t.Fatal(err)
	}
	f.check(t, createService(t, robot))
	// The fake API server fills in nothing: the Service as created.
	var created corev1.Service
	if err := workload.RoundTrip(workload.NewService(robot), &created); err != nil {
		t.Fatal(err)
	}
	status := status.Compute(robot, deployment, &created, nil, metav1.NewTime(robottest.FixtureNow))
	if status.ServiceName != "test" {
		t.Fatalf("status.serviceName %q, want %q", status.ServiceName, "test")
	}
	if got := f.statusOf(robot, objects, err); !apiequality.Semantic.DeepEqual(got, status) {
		t.Errorf("status (-want +got):\n%s", diff.Diff(status, got))
	}
	if events := f.events(); fmt.Sprint(events) != fmt.Sprint([]string{corev1.EventTypeNormal + " " + writer.EventCreated + ` Created Service "test"`}) {
		t.Errorf("events %q, want the Service's creation", events)
	}
}

// TestServiceNameThatCannotBeIsNotSent: a Robot stored with a name that no
// Service may have (dots; the CRD refuses it now) keeps its Deployment, and
// says InvalidSpec about its Service once, without sending a create that the
// API server would refuse, on this sync or the next.
func TestServiceNameThatCannotBeIsNotSent(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewServiceRobot("web.v2", robotv1beta1.ServiceTypeClusterIP)
	f := serviceFixture(t, robot, Objects{Deployment: liveDeployment(t, robot)})
	paths := f.paths(t, policy.Policy{})

	objects, err := paths.Sync(ctx, robot)
	f.check(t)
	written := f.statusOf(robot, objects, err)
	synced := meta.FindStatusCondition(written.Conditions, robotv1beta1.ConditionSynced)
	if synced.Reason != robotv1beta1.ReasonInvalidSpec || !strings.Contains(synced.Message, "DNS-1035") {
		t.Errorf("Synced condition %s: %s, want %s naming the Service name's rule", synced.Reason, synced.Message, robotv1beta1.ReasonInvalidSpec)
	}
	if events := append(f.events(), warned(robot.Status, written)...); len(events) != 1 || !strings.HasPrefix(events[0], corev1.EventTypeWarning+" "+robotv1beta1.ReasonInvalidSpec) {
		t.Errorf("expected one %s warning, got %q", robotv1beta1.ReasonInvalidSpec, events)
	}

	robot.Status = written
	objects, err = paths.Sync(ctx, robot)
	f.unchanged(t, robot, objects, err)
}

// TestBadServiceAnnotationKeepsTheDeployment: a Robot stored with a Service
// annotation whose key the API server refuses on a Service (the CRD refuses
// it now) gets its Deployment all the same, and says InvalidSpec about its
// Service, which is not sent.
func TestBadServiceAnnotationKeepsTheDeployment(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeClusterIP)
	robot.Spec.Service.Annotations = map[string]string{"not a key": "x"}
	f := newPolicyFixture(t, robot)

	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	writes := f.writes()
	if !slices.Contains(writes, "create deployments") || slices.ContainsFunc(writes, func(w string) bool { return strings.HasSuffix(w, " services") }) {
		t.Errorf("requests %q, want the Deployment created and nothing sent for the Service", writes)
	}
	status := f.statusOf(robot, objects, err)
	synced := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionSynced)
	if synced == nil || synced.Reason != robotv1beta1.ReasonInvalidSpec || !strings.Contains(synced.Message, "spec.service.annotations") {
		t.Errorf("Synced condition %v, want %s naming spec.service.annotations", synced, robotv1beta1.ReasonInvalidSpec)
	}
}

// TestServiceTypeNotAllowed: with -service-types limited to ClusterIP, a
// Robot that asks for a NodePort keeps its Deployment, gets no Service, and
// says why in Synced, with one Warning; a Robot that asks for a ClusterIP gets
// its Service as before.
func TestServiceTypeNotAllowed(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clusterIP := policy.Policy{ServiceTypes: []robotv1beta1.ServiceType{robotv1beta1.ServiceTypeClusterIP}}
	robot := robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeNodePort)
	f := serviceFixture(t, robot, Objects{Deployment: liveDeployment(t, robot)})

	objects, err := f.paths(t, clusterIP).Sync(ctx, robot)
	if failure := outcome.Classify(err); err == nil || failure.Retry != outcome.RetryOnChange {
		t.Fatalf("sync: %v, classified %+v; want an error retried on change only", err, failure)
	}
	f.check(t)
	written := f.statusOf(robot, objects, err)
	synced := meta.FindStatusCondition(written.Conditions, robotv1beta1.ConditionSynced)
	if synced.Reason != robotv1beta1.ReasonServiceTypeNotAllowed || !strings.Contains(synced.Message, "NodePort") {
		t.Errorf("Synced condition %s: %s, want %s naming the type", synced.Reason, synced.Message, robotv1beta1.ReasonServiceTypeNotAllowed)
	}
	// The Deployment runs, but the Robot has no Service until a person
	// changes it or the operator's flags: not Ready, and Stalled.
	if ready := meta.FindStatusCondition(written.Conditions, robotv1beta1.ConditionReady); ready.Status != metav1.ConditionFalse || ready.Reason != robotv1beta1.ReasonServiceTypeNotAllowed {
		t.Errorf("Ready %s (%s), want False %s", ready.Status, ready.Reason, robotv1beta1.ReasonServiceTypeNotAllowed)
	}
	if !meta.IsStatusConditionTrue(written.Conditions, robotv1beta1.ConditionStalled) {
		t.Errorf("not Stalled: %v", written.Conditions)
	}
	if events := append(f.events(), warned(robot.Status, written)...); len(events) != 1 || !strings.HasPrefix(events[0], corev1.EventTypeWarning+" "+robotv1beta1.ReasonServiceTypeNotAllowed) {
		t.Errorf("expected one %s warning, got %q", robotv1beta1.ReasonServiceTypeNotAllowed, events)
	}

	robot = robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeClusterIP)
	allowed := serviceFixture(t, robot, Objects{Deployment: liveDeployment(t, robot)})
	if _, err := allowed.paths(t, clusterIP).Sync(ctx, robot); err != nil {
		t.Fatalf("sync: %v", err)
	}
	allowed.check(t, createService(t, robot))
}

func TestNewRobotWithServiceCostsTwoCreates(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeNodePort)
	f := newPolicyFixture(t, robot)

	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	if err != nil {
		t.Fatal(err)
	}
	f.check(t, createDeployment(t, robot), createService(t, robot))
	created := liveDeployment(t, robot)
	created.Generation, created.Status = 0, appsv1.DeploymentStatus{}
	// The status reads the Service the create returned, and the fake
	// clientset allocates no node port, as the API server would.
	service := liveService(t, robot)
	for i := range service.Spec.Ports {
		service.Spec.Ports[i].NodePort = 0
	}
	status := status.Compute(robot, created, service, nil, metav1.NewTime(robottest.FixtureNow))
	if status.ServiceName != "test" {
		t.Fatalf("status.serviceName %q, want %q", status.ServiceName, "test")
	}
	if got := f.statusOf(robot, objects, err); !apiequality.Semantic.DeepEqual(got, status) {
		t.Errorf("status (-want +got):\n%s", diff.Diff(status, got))
	}
}

func TestConvergedRobotWithServiceCostsNothing(t *testing.T) {
	for _, serviceType := range []robotv1beta1.ServiceType{robotv1beta1.ServiceTypeClusterIP, robotv1beta1.ServiceTypeNodePort, robotv1beta1.ServiceTypeLoadBalancer} {
		t.Run(string(serviceType), func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			robot := robottest.NewServiceRobot("test", serviceType)
			f := serviceFixture(t, robot, Objects{Deployment: liveDeployment(t, robot), Service: liveService(t, robot)})

			objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
			f.unchanged(t, robot, objects, err)
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
			robot := robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeClusterIP)
			deployment, service := liveDeployment(t, robot), liveService(t, robot)
			converged(robot, Objects{Deployment: deployment, Service: service})
			edit(service)
			f := newPolicyFixture(t, robot)
			f.add(t, deployment, service)

			if _, err := f.paths(t, policy.Policy{}).Sync(ctx, robot); err != nil {
				t.Fatal(err)
			}
			f.check(t, applyService(t, robot, service.UID))
			if events := f.events(); len(events) != 1 || !strings.HasPrefix(events[0], corev1.EventTypeNormal+" "+EventServiceUpdated) {
				t.Errorf("expected one %s event, got %q", EventServiceUpdated, events)
			}
		})
	}
}

// TestServiceTypeChange: the Robot asks for another type; the fields the
// create set are made the apply's first, so that what the Robot no longer
// asks for can go.
func TestServiceTypeChange(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeNodePort)
	deployment, service := liveDeployment(t, robot), liveService(t, robot)
	service.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: workload.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate}}
	converged(robot, Objects{Deployment: deployment, Service: service})
	robot.Spec.Service.Type = robotv1beta1.ServiceTypeClusterIP
	robot.Generation = 2
	f := newPolicyFixture(t, robot)
	f.add(t, deployment, service)

	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	if err != nil {
		t.Fatal(err)
	}
	f.check(t, claim(t, servicesResource, service, 0), applyService(t, robot, service.UID))
	// The new generation is reported; the Service is still "test".
	want := status.Compute(robot, deployment, service, nil, metav1.NewTime(robottest.FixtureNow))
	if got := f.statusOf(robot, objects, err); !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("status (-want +got):\n%s", diff.Diff(want, got))
	}
	if events := f.events(); len(events) != 1 || !strings.Contains(events[0], `spec.type is "NodePort"; the Robot asks for "ClusterIP"`) {
		t.Errorf("events %q, want one saying the type changed", events)
	}
}

// TestPortRemovedFromTheService: a port the Robot no longer has differs in
// no field of the Service, but in its spec hash: the Service is applied, so
// that server-side apply drops the port.
func TestPortRemovedFromTheService(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.RolloutRobot()
	deployment, service := liveDeployment(t, robot), liveService(t, robot)
	robottest.APIServerDefaults(deployment)
	converged(robot, Objects{Deployment: deployment, Service: service})
	robot.Spec.Ports = robot.Spec.Ports[:2]
	robot.Generation = 2
	f := newPolicyFixture(t, robot)
	f.add(t, deployment, service)

	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	if err != nil {
		t.Fatal(err)
	}
	f.check(t, applyDeployment(t, robot, deployment.UID), applyService(t, robot, service.UID))
	want := status.Compute(robot, deployment, service, nil, metav1.NewTime(robottest.FixtureNow))
	if got := f.statusOf(robot, objects, err); !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("status (-want +got):\n%s", diff.Diff(want, got))
	}
	events := f.events()
	if len(events) != 2 || !strings.Contains(events[1], `Updated Service "relay": the Robot's spec changed`) {
		t.Errorf("events %q, want the Deployment's and the Service's update", events)
	}
}

// TestServiceNotWanted: a Robot whose Service type becomes None, or whose
// port goes, loses its Service, by UID; one it does not control is left.
func TestServiceNotWanted(t *testing.T) {
	none := func(r *robotv1beta1.Robot) { r.Spec.Service.Type = robotv1beta1.ServiceTypeNone }
	noPort := func(r *robotv1beta1.Robot) { r.Spec.Ports = nil }
	for _, tt := range []struct {
		name    string
		change  func(*robotv1beta1.Robot)
		foreign bool
	}{
		{"None", none, false},
		{"port removed", noPort, false},
		{"None, someone else's Service", none, true},
		{"port removed, someone else's Service", noPort, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			robot := robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeClusterIP)
			service := liveService(t, robot)
			if tt.foreign {
				service.OwnerReferences = nil
			}
			tt.change(robot)
			f := serviceFixture(t, robot, Objects{Deployment: liveDeployment(t, robot)})
			f.add(t, service)

			if _, err := f.paths(t, policy.Policy{}).Sync(ctx, robot); err != nil {
				t.Fatal(err)
			}
			// The delete carries a UID precondition: a Service created under
			// the same name since is never deleted.
			if tt.foreign {
				f.check(t)
			} else {
				f.check(t, deleteService(service))
			}
			want := []string{corev1.EventTypeNormal + " " + EventServiceDeleted + ` Deleted Service "test": the Robot asks for none`}
			if tt.foreign {
				want = nil
			}
			if events := f.events(); fmt.Sprint(events) != fmt.Sprint(want) {
				t.Errorf("events %q, want %q", events, want)
			}
		})
	}
}

// TestNoServiceCostsNoRequest: a Robot without a Service makes no Service
// request at all, not even a read.
func TestNoServiceCostsNoRequest(t *testing.T) {
	for name, change := range map[string]func(*robotv1beta1.Robot){
		"no port": func(r *robotv1beta1.Robot) { r.Spec.Ports, r.Spec.Service = nil, nil },
		"None":    func(*robotv1beta1.Robot) {},
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			robot := robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeNone)
			change(robot)
			f := serviceFixture(t, robot, Objects{Deployment: liveDeployment(t, robot)})
			objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
			f.unchanged(t, robot, objects, err)
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
			robot := robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeClusterIP)
			deployment := liveDeployment(t, robot)
			f := serviceFixture(t, robot, Objects{Deployment: deployment})
			foreign := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: robot.Namespace, UID: "foreign", ResourceVersion: "2",
					Labels: map[string]string{workload.LabelManagedBy: workload.LabelManagedByValue}},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
			}
			var expected []core.Action
			if inCache {
				f.add(t, foreign)
			} else {
				foreign.Labels = nil
				if err := f.kube.Tracker().Add(foreign); err != nil {
					t.Fatal(err)
				}
				expected = append(expected, createService(t, robot), getService(robot.Namespace, "test"))
			}
			nameTaken := &outcome.NameTakenError{Kind: "Service", Name: "test", Reason: robotv1beta1.ReasonServiceNameTaken, Hint: serviceNameTakenHint}
			status, _ := status.Diagnosed(robot, deployment, nil, nil, nil, nameTaken, metav1.NewTime(robottest.FixtureNow))
			// The Deployment runs, but the Robot has no Service until a
			// person frees the name: not Ready, and Stalled.
			if ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady); ready.Status != metav1.ConditionFalse || ready.Reason != robotv1beta1.ReasonServiceNameTaken {
				t.Errorf("Ready %s (%s), want False %s", ready.Status, ready.Reason, robotv1beta1.ReasonServiceNameTaken)
			}
			if !meta.IsStatusConditionTrue(status.Conditions, robotv1beta1.ConditionStalled) {
				t.Errorf("not Stalled: %v", status.Conditions)
			}
			if synced := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionSynced); synced.Reason != robotv1beta1.ReasonServiceNameTaken {
				t.Errorf("Synced reason %q, want %q", synced.Reason, robotv1beta1.ReasonServiceNameTaken)
			}

			objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
			f.check(t, expected...)
			if err == nil || err.Error() != nameTaken.Error() {
				t.Errorf("sync: %v, want %v", err, nameTaken)
			}
			if got := f.statusOf(robot, objects, err); !apiequality.Semantic.DeepEqual(got, status) {
				t.Errorf("status (-want +got):\n%s", diff.Diff(status, got))
			}
			if retry := outcome.Classify(err).Retry; retry != outcome.RecheckLater {
				t.Errorf("retry %v, want the name rechecked later", retry)
			}
			if events := append(f.events(), warned(robot.Status, status)...); len(events) != 1 || !strings.HasPrefix(events[0], corev1.EventTypeWarning+" "+robotv1beta1.ReasonServiceNameTaken) {
				t.Errorf("expected one %s warning, got %q", robotv1beta1.ReasonServiceNameTaken, events)
			}
		})
	}
}

// TestServiceNameTakenWarnsOnce: the next sync with the name still taken
// writes nothing and warns no more.
func TestServiceNameTakenWarnsOnce(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeClusterIP)
	deployment := liveDeployment(t, robot)
	robot.Status, _ = status.Diagnosed(robot, deployment, nil, nil, nil, &outcome.NameTakenError{Kind: "Service", Name: "test", Reason: robotv1beta1.ReasonServiceNameTaken, Hint: serviceNameTakenHint}, metav1.NewTime(robottest.FixtureNow.Add(-time.Hour)))
	f := newPolicyFixture(t, robot)
	f.add(t, deployment, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: robot.Namespace, UID: "foreign", ResourceVersion: "2",
		Labels: map[string]string{workload.LabelManagedBy: workload.LabelManagedByValue}}})

	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	f.unchanged(t, robot, objects, err)
	if warnings := warned(robot.Status, f.statusOf(robot, objects, err)); len(warnings) != 0 {
		t.Errorf("warnings %q, want none", warnings)
	}
}

// TestLoadBalancerClassChange: a Robot that asks for another class than its
// LoadBalancer Service has gets no apply (the API server refuses to change
// a Service's class), keeps its Service and says how to proceed, with one
// Warning; Ready stays about the Deployment. A class the operator set and
// the Robot no longer asks for is refused by the API server's answer, and
// said the same way; neither is retried until something changes.
func TestLoadBalancerClassChange(t *testing.T) {
	withClass := func(class string) *robotv1beta1.Robot {
		robot := robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeLoadBalancer)
		robot.Spec.Service.LoadBalancerClass = class
		return robot
	}
	for _, tt := range []struct {
		name         string
		had, asks    string
		wantRequests []string
	}{
		{name: "another class, told from the cache", had: "example.com/a", asks: "example.com/b"},
		// The refusal names a field: the live Service is read once, to tell
		// whether another writer owns it, as for every kind.
		{name: "no class any more, told by the API server", had: "example.com/a", asks: "",
			wantRequests: []string{"patch services default/test", "get services default/test"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			robot := withClass(tt.asks)
			f := serviceFixture(t, robot, Objects{Deployment: liveDeployment(t, robot), Service: liveService(t, withClass(tt.had))})
			paths := f.paths(t, policy.Policy{})
			f.kube.PrependReactor("patch", "services", func(core.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "test", field.ErrorList{
					field.Invalid(field.NewPath("spec", "loadBalancerClass"), nil, "may not change once set")})
			})
			objects, err := paths.Sync(ctx, robot)
			if failure := outcome.Classify(err); err == nil || failure.Retry != outcome.RetryOnChange {
				t.Fatalf("sync: %v, classified %+v; want an error retried on change only", err, failure)
			}
			var requests []string
			for _, action := range robottest.FilterInformerActions(f.kube.Actions()) {
				requests = append(requests, robottest.Describe(action))
			}
			f.kube.ClearActions()
			if !slices.Equal(requests, tt.wantRequests) {
				t.Errorf("requests %q, want %q", requests, tt.wantRequests)
			}
			written := f.statusOf(robot, objects, err)
			synced := meta.FindStatusCondition(written.Conditions, robotv1beta1.ConditionSynced)
			if synced.Reason != robotv1beta1.ReasonLoadBalancerClassImmutable || !strings.Contains(synced.Message, "kubectl delete service -n default test") {
				t.Errorf("Synced condition %s: %s, want %s saying how to proceed", synced.Reason, synced.Message, robotv1beta1.ReasonLoadBalancerClassImmutable)
			}
			if ready := meta.FindStatusCondition(written.Conditions, robotv1beta1.ConditionReady); ready.Status != metav1.ConditionTrue {
				t.Errorf("Ready %s (%s): the Deployment runs, and the Service's class should not make the Robot not Ready", ready.Status, ready.Reason)
			}
			if written.ServiceName != "test" {
				t.Errorf("serviceName %q, want the Service that is still there", written.ServiceName)
			}
			if events := append(f.events(), warned(robot.Status, written)...); len(events) != 1 || !strings.HasPrefix(events[0], corev1.EventTypeWarning+" "+robotv1beta1.ReasonLoadBalancerClassImmutable) {
				t.Errorf("expected one %s warning, got %q", robotv1beta1.ReasonLoadBalancerClassImmutable, events)
			}

			// The next sync of the same spec (a pod's event, say) sends
			// nothing: the status it wrote remembers the refusal.
			robot.Status = written
			objects, err = paths.Sync(ctx, robot)
			f.unchanged(t, robot, objects, err)
		})
	}
}
