package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/status"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	"github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/fake"
	informers "github.com/robot-operator/robot-operator/pkg/generated/informers/externalversions"
)

// fixture is one controller test: the objects in the informer caches and in
// the fake API servers, and the API requests the sync is expected to make.
type fixture struct {
	t *testing.T

	robotClient *fake.Clientset
	kubeClient  *k8sfake.Clientset
	recorder    *record.FakeRecorder
	// realRecorder is the one NewController made, which writes Events
	// through the fake clientset; tests that need it put it back.
	realRecorder record.EventRecorder
	// options, when set, changes the Options of the Controller that
	// newController makes.
	options func(*Options)
	// What the Controller's writer writes through and records with.
	wiredKube     kubernetes.Interface
	wiredRecorder record.EventRecorder

	// Objects in the informer caches.
	robotLister      []*robotv1alpha1.Robot
	deploymentLister []*appsv1.Deployment
	serviceLister    []*corev1.Service
	// The informer caches, for a test that changes them between syncs.
	robotIndexer      cache.Indexer
	deploymentIndexer cache.Indexer
	serviceIndexer    cache.Indexer
	// Objects in the fake API servers.
	robotObjects []runtime.Object
	kubeObjects  []runtime.Object

	// Expected requests, in order.
	robotActions []core.Action
	kubeActions  []core.Action
}

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t}
}

func (f *fixture) newController(ctx context.Context) *Controller {
	f.robotClient = fake.NewClientset(f.robotObjects...)
	f.kubeClient = k8sfake.NewClientset(f.kubeObjects...)
	// The fake clientset cannot apply to custom resources
	// (kubernetes/kubernetes#126850): answer status applies as the API
	// server would, with the applied status and a new resourceVersion.
	f.robotClient.PrependReactor("patch", "robots", func(action core.Action) (bool, runtime.Object, error) {
		patch := action.(core.PatchAction)
		obj, err := f.robotClient.Tracker().Get(robottest.RobotsResource, patch.GetNamespace(), patch.GetName())
		if err != nil {
			return true, nil, err
		}
		robot := obj.(*robotv1alpha1.Robot).DeepCopy()
		var applied robotv1alpha1.Robot
		if err := json.Unmarshal(patch.GetPatch(), &applied); err != nil {
			return true, nil, err
		}
		robot.Status = applied.Status
		rv, _ := strconv.Atoi(robot.ResourceVersion)
		robot.ResourceVersion = strconv.Itoa(rv + 1)
		return true, robot, f.robotClient.Tracker().Update(robottest.RobotsResource, robot, robot.Namespace)
	})

	robotInformers := informers.NewSharedInformerFactory(f.robotClient, 0)
	kubeInformers := kubeinformers.NewSharedInformerFactory(f.kubeClient, 0)
	f.recorder = record.NewFakeRecorder(10)
	opts := Options{
		KubeClient:         f.kubeClient,
		RobotClient:        f.robotClient,
		DeploymentInformer: kubeInformers.Apps().V1().Deployments(),
		ServiceInformer:    kubeInformers.Core().V1().Services(),
		RobotInformer:      robotInformers.Robot().V1alpha1().Robots(),
		ShutdownTimeout:    20 * time.Second,
		Recorder:           f.recorder,
		Clock:              clocktesting.NewFakePassiveClock(robottest.FixtureNow),
	}
	if f.options != nil {
		f.options(&opts)
	}
	c, err := NewController(ctx, opts)
	if err != nil {
		f.t.Fatalf("NewController: %v", err)
	}
	f.realRecorder = c.events.Recorder
	f.wiredKube, f.wiredRecorder = opts.KubeClient, opts.Recorder
	c.robotsSynced = alwaysReady
	c.deploymentsSynced = alwaysReady
	c.servicesSynced = alwaysReady

	f.robotIndexer = robotInformers.Robot().V1alpha1().Robots().Informer().GetIndexer()
	f.deploymentIndexer = kubeInformers.Apps().V1().Deployments().Informer().GetIndexer()
	f.serviceIndexer = kubeInformers.Core().V1().Services().Informer().GetIndexer()
	for _, robot := range f.robotLister {
		if err := f.robotIndexer.Add(robot); err != nil {
			f.t.Fatal(err)
		}
	}
	for _, deployment := range f.deploymentLister {
		if err := f.deploymentIndexer.Add(deployment); err != nil {
			f.t.Fatal(err)
		}
	}
	for _, service := range f.serviceLister {
		if err := f.serviceIndexer.Add(service); err != nil {
			f.t.Fatal(err)
		}
	}
	return c
}

func alwaysReady() bool { return true }

// rewire gives c a writer that writes through kube and records its Events
// with recorder (nil: as before), sharing c's echo filter and spec-check
// memo.
func (f *fixture) rewire(c *Controller, kube kubernetes.Interface, recorder record.EventRecorder) {
	f.wiredKube = cmp.Or(kube, f.wiredKube)
	f.wiredRecorder = cmp.Or(recorder, f.wiredRecorder)
	kube, recorder = f.wiredKube, f.wiredRecorder
	c.writer = writer.NewWriter(kube, f.robotClient, recorder, nil,
		c.writtenDeployments, c.writtenServices, c.writtenRobots, c.specsChecked)
}

// run syncs the Robot named key and checks the requests it made.
func (f *fixture) run(ctx context.Context, key cache.ObjectName) time.Duration {
	f.t.Helper()
	c := f.newController(ctx)
	requeueAfter, err := c.syncHandler(ctx, key)
	if err != nil {
		f.t.Fatalf("syncing %v: %v", key, err)
	}
	f.checkActions("robot", f.robotActions, filterInformerActions(f.robotClient.Actions()))
	f.checkActions("kube", f.kubeActions, filterInformerActions(f.kubeClient.Actions()))
	return requeueAfter
}

func (f *fixture) checkActions(client string, expected, actual []core.Action) {
	f.t.Helper()
	for i, action := range actual {
		if i >= len(expected) {
			f.t.Errorf("%s client: %d unexpected requests, the first: %s", client, len(actual)-len(expected), describe(action))
			return
		}
		checkAction(f.t, expected[i], action)
	}
	if len(expected) > len(actual) {
		f.t.Errorf("%s client: %d more requests expected, the first: %s", client, len(expected)-len(actual), describe(expected[len(actual)]))
	}
}

// checkAction compares verb, resource, subresource, name and body.
func checkAction(t *testing.T, expected, actual core.Action) {
	t.Helper()
	if describe(expected) != describe(actual) {
		t.Errorf("expected request %s, got %s", describe(expected), describe(actual))
		return
	}
	if e, ok := expected.(core.CreateAction); ok {
		if d := diff.Diff(e.GetObject(), actual.(core.CreateAction).GetObject()); d != "" {
			t.Errorf("%s: object differs (-want +got):\n%s", describe(actual), d)
		}
		return
	}
	e, ok := expected.(core.PatchAction)
	if !ok {
		return
	}
	a := actual.(core.PatchAction)
	if e.GetPatchType() != a.GetPatchType() {
		t.Errorf("%s: expected patch type %s, got %s", describe(actual), e.GetPatchType(), a.GetPatchType())
	}
	var want, got any
	if err := json.Unmarshal(e.GetPatch(), &want); err != nil {
		t.Fatalf("expected patch of %s: %v", describe(expected), err)
	}
	if err := json.Unmarshal(a.GetPatch(), &got); err != nil {
		t.Fatalf("patch of %s: %v", describe(actual), err)
	}
	if d := diff.Diff(want, got); d != "" {
		t.Errorf("%s: patch differs (-want +got):\n%s", describe(actual), d)
	}
}

func describe(action core.Action) string {
	s := action.GetVerb() + " " + action.GetResource().Resource
	if sub := action.GetSubresource(); sub != "" {
		s += "/" + sub
	}
	s += " " + action.GetNamespace()
	switch a := action.(type) {
	case core.GetAction:
		s += "/" + a.GetName()
	case core.PatchAction:
		s += "/" + a.GetName()
	case core.CreateAction:
		if object, err := meta.Accessor(a.GetObject()); err == nil {
			s += "/" + object.GetName()
		}
	}
	return s
}

// filterInformerActions drops the list and watch requests of the informers,
// and the events the broadcaster may send.
func filterInformerActions(actions []core.Action) []core.Action {
	var out []core.Action
	for _, action := range actions {
		if action.Matches("list", action.GetResource().Resource) ||
			action.Matches("watch", action.GetResource().Resource) ||
			action.GetResource().Resource == "events" {
			continue
		}
		out = append(out, action)
	}
	return out
}

// One expectation helper per kind of request.

func (f *fixture) expectGetDeployment(namespace, name string) {
	f.kubeActions = append(f.kubeActions, core.NewGetAction(robottest.DeploymentsResource, namespace, name))
}

func (f *fixture) expectCreateDeployment(robot *robotv1alpha1.Robot) {
	desired, err := workload.NewDeployment(robot)
	if err != nil {
		f.t.Fatal(err)
	}
	var deployment appsv1.Deployment
	if err := workload.RoundTrip(desired, &deployment); err != nil {
		f.t.Fatal(err)
	}
	f.kubeActions = append(f.kubeActions, core.NewCreateAction(robottest.DeploymentsResource, robot.Namespace, &deployment))
}

func (f *fixture) expectClaimCreatedFields(deployment *appsv1.Deployment) {
	i := drift.CreatedFieldsEntry(deployment.ManagedFields)
	if i < 0 {
		f.t.Fatalf("Deployment %s has no entry of the operator's create", deployment.Name)
	}
	patch, err := drift.ClaimPatch(deployment, i)
	if err != nil {
		f.t.Fatal(err)
	}
	f.kubeActions = append(f.kubeActions, core.NewPatchAction(robottest.DeploymentsResource, deployment.Namespace, deployment.Name, types.JSONPatchType, patch))
}

func (f *fixture) expectApplyDeployment(robot *robotv1alpha1.Robot) {
	desired, err := workload.NewDeployment(robot)
	if err != nil {
		f.t.Fatal(err)
	}
	f.kubeActions = append(f.kubeActions, core.NewPatchAction(robottest.DeploymentsResource, robot.Namespace, *desired.Name, types.ApplyPatchType, robottest.MustJSON(f.t, desired)))
}

func (f *fixture) expectApplyStatus(robot *robotv1alpha1.Robot, want robotv1alpha1.RobotStatus) {
	f.robotActions = append(f.robotActions, core.NewPatchSubresourceAction(robottest.RobotsResource, robot.Namespace, robot.Name, types.ApplyPatchType,
		robottest.MustJSON(f.t, status.StatusApplyConfiguration(robot, &want)), "status"))
}

// liveDeployment returns robot's Deployment as the API server holds it
// after the operator applied it and the Deployment controller rolled it out.
func liveDeployment(t *testing.T, robot *robotv1alpha1.Robot) *appsv1.Deployment {
	desired, err := workload.NewDeployment(robot)
	return robottest.LiveDeploymentOf(t, desired, err)
}

// converged sets robot's status to what the operator would write for
// deployment, so that a sync has nothing left to do.
func converged(robot *robotv1alpha1.Robot, deployment *appsv1.Deployment) {
	robot.Status = status.ComputeStatus(robot, deployment, nil, nil, metav1.NewTime(robottest.FixtureNow.Add(-time.Hour)))
}

func (f *fixture) addRobot(robot *robotv1alpha1.Robot) {
	f.robotLister = append(f.robotLister, robot)
	f.robotObjects = append(f.robotObjects, robot)
}

func (f *fixture) addDeployment(deployment *appsv1.Deployment) {
	f.deploymentLister = append(f.deploymentLister, deployment)
	f.kubeObjects = append(f.kubeObjects, deployment)
}

func TestCreatesDeployment(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 2)
	f.addRobot(robot)

	// Not in the cache: created, with no read first.
	f.expectCreateDeployment(robot)
	// The fake API server sets neither generation nor status: the Robot
	// reports that no replica runs yet.
	created := liveDeployment(t, robot)
	created.Generation, created.Status = 0, appsv1.DeploymentStatus{}
	f.expectApplyStatus(robot, status.ComputeStatus(robot, created, nil, nil, metav1.NewTime(robottest.FixtureNow)))

	f.run(ctx, cache.MetaObjectToName(robot))
	f.expectEvents(corev1.EventTypeNormal + " " + writer.EventDeploymentCreated + ` Created Deployment "test"`)
}

func TestConvergedRobotCostsNothing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	converged(robot, deployment)
	f.addRobot(robot)
	f.addDeployment(deployment)

	f.run(ctx, cache.MetaObjectToName(robot))
	f.expectEvents()
}

func TestStatusUnchangedByIrrelevantDeploymentChange(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	deployment := liveDeployment(t, robot)
	converged(robot, deployment)
	// What others write is theirs: a restart annotation, a label, a
	// sidecar, an env var of their own.
	deployment.Annotations["kubectl.kubernetes.io/restartedAt"] = "2026-11-22T10:00:00Z"
	deployment.Labels["team"] = "blue"
	deployment.Spec.Template.Spec.Containers = append(deployment.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "proxy:1"})
	deployment.Spec.Template.Spec.Containers[0].Env = append(deployment.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "EXTRA", Value: "1"})
	deployment.ResourceVersion = "8"
	f.addRobot(robot)
	f.addDeployment(deployment)

	f.run(ctx, cache.MetaObjectToName(robot))
	f.expectEvents()
}

func TestRevertsDrift(t *testing.T) {
	for name, drift := range map[string]func(*appsv1.Deployment){
		"replicas": func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) },
		"image":    func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:latest" },
		"env":      func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env = nil },
		"label":    func(d *appsv1.Deployment) { delete(d.Labels, workload.LabelManagedBy) },
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			robot := robottest.NewRobot("test", 2)
			deployment := liveDeployment(t, robot)
			converged(robot, deployment)
			drift(deployment)
			f.addRobot(robot)
			f.addDeployment(deployment)

			f.expectApplyDeployment(robot)
			f.run(ctx, cache.MetaObjectToName(robot))
			if events := f.events(); len(events) != 1 || !hasPrefix(events[0], corev1.EventTypeNormal+" "+writer.EventDeploymentUpdated) {
				t.Errorf("expected one %s event, got %q", writer.EventDeploymentUpdated, events)
			}
		})
	}
}

func TestLeavesDeploymentItDoesNotControl(t *testing.T) {
	for name, foreign := range map[string]func(*appsv1.Deployment){
		"no owner": func(d *appsv1.Deployment) { d.OwnerReferences = nil },
		"another controller": func(d *appsv1.Deployment) {
			d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Widget", Name: "test", UID: "widget-uid", Controller: ptr.To(true)}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			robot := robottest.NewRobot("test", 1)
			deployment := liveDeployment(t, robot)
			foreign(deployment)
			f.addRobot(robot)
			f.addDeployment(deployment)

			// No write to the Deployment; the Robot says why.
			status := status.ComputeStatus(robot, nil, nil, outcome.NotControlledError(deployment), metav1.NewTime(robottest.FixtureNow))
			if ready := robottest.FindCondition(status, robotv1alpha1.ConditionReady); ready.Reason != robotv1alpha1.ReasonDeploymentNameTaken {
				t.Fatalf("Ready reason %q, want %q", ready.Reason, robotv1alpha1.ReasonDeploymentNameTaken)
			}
			f.expectApplyStatus(robot, status)

			if requeueAfter := f.run(ctx, cache.MetaObjectToName(robot)); requeueAfter != nameTakenRecheck {
				t.Errorf("requeue after %v, want %v", requeueAfter, nameTakenRecheck)
			}
			if events := f.events(); len(events) != 1 || !hasPrefix(events[0], corev1.EventTypeWarning+" "+robotv1alpha1.ReasonDeploymentNameTaken) {
				t.Errorf("expected one %s warning, got %q", robotv1alpha1.ReasonDeploymentNameTaken, events)
			}
		})
	}
}

func TestNameTakenOutsideTheCache(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	// Unlabelled, so the informer never sees it; only the API server has it.
	foreign := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: robot.Namespace, UID: "foreign"}}
	f.addRobot(robot)
	f.kubeObjects = append(f.kubeObjects, foreign)

	// The create finds it there: whose is it?
	f.expectCreateDeployment(robot)
	f.expectGetDeployment(robot.Namespace, robot.Name)
	f.expectApplyStatus(robot, status.ComputeStatus(robot, nil, nil, outcome.NotControlledError(foreign), metav1.NewTime(robottest.FixtureNow)))
	f.run(ctx, cache.MetaObjectToName(robot))
}

func TestNameTakenReportedOnce(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	deployment := liveDeployment(t, robot)
	deployment.OwnerReferences = nil
	// The Robot already says so: nothing to write, nothing to record.
	robot.Status = status.ComputeStatus(robot, nil, nil, outcome.NotControlledError(deployment), metav1.NewTime(robottest.FixtureNow.Add(-time.Minute)))
	f.addRobot(robot)
	f.addDeployment(deployment)

	f.run(ctx, cache.MetaObjectToName(robot))
	f.expectEvents()
}

func TestRobotDeleted(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	// Its Deployment is still cached; the garbage collector removes it.
	robot := robottest.NewRobot("gone", 1)
	f.addDeployment(liveDeployment(t, robot))

	f.run(ctx, cache.ObjectName{Namespace: robot.Namespace, Name: robot.Name})
	f.expectEvents()
}

// TestDeploymentOfDeletedRobotIsNotRecreated: the garbage collector deletes
// the Deployment of a deleted Robot, and its delete event queues the Robot,
// which the cache may still hold. A Robot that had its Deployment must be
// asked for before the Deployment is created again: recreated for a Robot
// that is gone, it would only be deleted again, after a second
// DeploymentCreated Event for the same Robot.
func TestDeploymentOfDeletedRobotIsNotRecreated(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("gone", 1)
	converged(robot, liveDeployment(t, robot))
	// In the cache only: the API server no longer has it.
	f.robotLister = append(f.robotLister, robot)

	f.robotActions = append(f.robotActions, core.NewGetAction(robottest.RobotsResource, robot.Namespace, robot.Name))
	f.run(ctx, cache.MetaObjectToName(robot))
	f.expectEvents()
}

// TestDeletedDeploymentIsRecreated: a Robot that still exists gets its
// deleted Deployment back, after the one read that says it exists.
func TestDeletedDeploymentIsRecreated(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 2)
	converged(robot, liveDeployment(t, robot))
	f.addRobot(robot)

	f.robotActions = append(f.robotActions, core.NewGetAction(robottest.RobotsResource, robot.Namespace, robot.Name))
	f.expectCreateDeployment(robot)
	created := liveDeployment(t, robot)
	created.Generation, created.Status = 0, appsv1.DeploymentStatus{}
	f.expectApplyStatus(robot, status.ComputeStatus(robot, created, nil, nil, metav1.NewTime(robottest.FixtureNow)))

	f.run(ctx, cache.MetaObjectToName(robot))
	f.expectEvents(corev1.EventTypeNormal + " " + writer.EventDeploymentCreated + ` Created Deployment "test"`)
}

func TestInvalidSpecIsReportedNotRetried(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	robot.Spec.Replicas = ptr.To[int32](5000) // stored before the schema said no
	f.addRobot(robot)

	_, err := workload.NewDeployment(robot)
	f.expectApplyStatus(robot, status.ComputeStatus(robot, nil, nil, err, metav1.NewTime(robottest.FixtureNow)))
	if requeueAfter := f.run(ctx, cache.MetaObjectToName(robot)); requeueAfter != 0 {
		t.Errorf("requeue after %v, want none", requeueAfter)
	}
	if events := f.events(); len(events) != 1 || !hasPrefix(events[0], corev1.EventTypeWarning+" "+robotv1alpha1.ReasonInvalidSpec) {
		t.Errorf("expected one %s warning, got %q", robotv1alpha1.ReasonInvalidSpec, events)
	}
}

// TestFailedWriteIsRetriedAndReported: a create or an apply of the Deployment
// that the API server refuses is retried with backoff, and the Robot says so.
func TestFailedWriteIsRetriedAndReported(t *testing.T) {
	for verb, cached := range map[string]func(*testing.T, *robotv1alpha1.Robot) *appsv1.Deployment{
		// A new Robot: its Deployment is created.
		"create": func(*testing.T, *robotv1alpha1.Robot) *appsv1.Deployment { return nil },
		// A Robot whose Deployment someone scaled: it is applied.
		"patch": func(t *testing.T, robot *robotv1alpha1.Robot) *appsv1.Deployment {
			deployment := liveDeployment(t, robot)
			deployment.Spec.Replicas = ptr.To[int32](5)
			return deployment
		},
	} {
		t.Run(verb, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			robot := robottest.NewRobot("test", 1)
			f.addRobot(robot)
			if deployment := cached(t, robot); deployment != nil {
				f.addDeployment(deployment)
			}
			c := f.newController(ctx)
			f.kubeClient.PrependReactor(verb, "deployments", func(core.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "test", errors.New("denied by policy"))
			})

			_, err := c.syncHandler(ctx, cache.MetaObjectToName(robot))
			if !apierrors.IsForbidden(err) {
				t.Fatalf("expected the Forbidden error back, for a retry with backoff; got %v", err)
			}
			applied := f.onlyStatusWrite()
			if synced := robottest.FindCondition(applied.Status, robotv1alpha1.ConditionSynced); synced.Reason != robotv1alpha1.ReasonSyncFailed {
				t.Errorf("Synced reason %q, want %q", synced.Reason, robotv1alpha1.ReasonSyncFailed)
			}
			// Ready is about the workload: only a Robot without a Deployment
			// is not Ready because of the failed write.
			if ready := robottest.FindCondition(applied.Status, robotv1alpha1.ConditionReady); (verb == "create") != (ready.Reason == robotv1alpha1.ReasonSyncFailed) {
				t.Errorf("%s: Ready reason %q", verb, ready.Reason)
			}
		})
	}
}

func TestDeploymentEventsEnqueueTheirRobotByUID(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	f.addRobot(robot)
	c := f.newController(ctx)
	drain := func() []cache.ObjectName {
		var keys []cache.ObjectName
		for c.workqueue.Len() > 0 {
			key, _ := c.workqueue.Get()
			c.workqueue.Done(key)
			keys = append(keys, key)
		}
		return keys
	}
	drain() // whatever the informer setup queued

	ours := liveDeployment(t, robot)
	c.handleObject(ours)
	if keys := drain(); len(keys) != 1 || keys[0] != cache.MetaObjectToName(robot) {
		t.Errorf("a Deployment the Robot controls: queued %v, want [%v]", keys, cache.MetaObjectToName(robot))
	}
	c.handleObject(cache.DeletedFinalStateUnknown{Key: "default/test", Obj: ours})
	if keys := drain(); len(keys) != 1 {
		t.Errorf("a tombstone: queued %v, want the Robot", keys)
	}

	// The Deployment of an earlier Robot of the same name: its deletion
	// frees the name, so it concerns the Robot that has the name now.
	earlier := ours.DeepCopy()
	earlier.OwnerReferences[0].UID = "an-earlier-robot"
	c.deleteDeployment(cache.DeletedFinalStateUnknown{Key: "default/test", Obj: earlier})
	if keys := drain(); len(keys) != 1 || keys[0] != cache.MetaObjectToName(robot) {
		t.Errorf("the deletion of an earlier Robot's Deployment: queued %v, want [%v]", keys, cache.MetaObjectToName(robot))
	}

	for name, mutate := range map[string]func(*appsv1.Deployment){
		"other UID":   func(d *appsv1.Deployment) { d.OwnerReferences[0].UID = "other" },
		"other kind":  func(d *appsv1.Deployment) { d.OwnerReferences[0].Kind = "Widget" },
		"other group": func(d *appsv1.Deployment) { d.OwnerReferences[0].APIVersion = "example.com/v1" },
		"no owner":    func(d *appsv1.Deployment) { d.OwnerReferences = nil },
	} {
		d := ours.DeepCopy()
		mutate(d)
		c.handleObject(d)
		if keys := drain(); len(keys) != 0 {
			t.Errorf("%s: queued %v, want nothing", name, keys)
		}
	}
}

// onlyStatusWrite returns the Robot whose status the sync applied, failing
// the test unless that was the one request to the Robot client.
func (f *fixture) onlyStatusWrite() robotv1alpha1.Robot {
	f.t.Helper()
	actions := filterInformerActions(f.robotClient.Actions())
	if len(actions) != 1 {
		f.t.Fatalf("expected one status write, got %d", len(actions))
	}
	var applied robotv1alpha1.Robot
	if err := json.Unmarshal(actions[0].(core.PatchAction).GetPatch(), &applied); err != nil {
		f.t.Fatal(err)
	}
	return applied
}

func (f *fixture) events() []string {
	var events []string
	for {
		select {
		case e := <-f.recorder.Events:
			events = append(events, e)
		default:
			return events
		}
	}
}

func (f *fixture) expectEvents(want ...string) {
	f.t.Helper()
	got := f.events()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		f.t.Errorf("events: got %q, want %q", got, want)
	}
}

func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

func TestTimeToReadyIsObservedOncePerGeneration(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	converged(robot, deployment)
	robot.Generation = 2 // a spec change the operator has not reported yet
	f.addRobot(robot)
	f.addDeployment(deployment)
	c := f.newController(ctx)
	clock := clocktesting.NewFakeClock(robottest.FixtureNow)
	c.clock = clock

	c.handleRobot(robot)
	clock.Step(3 * time.Second)
	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
		t.Fatal(err)
	}
	if got := testutil.CollectAndCount(c.metrics.TimeToReady); got != 1 {
		t.Fatalf("time_to_ready observations: %d, want 1", got)
	}
	var m dto.Metric
	if err := c.metrics.TimeToReady.Write(&m); err != nil {
		t.Fatal(err)
	}
	if sum := m.GetHistogram().GetSampleSum(); sum != 3 {
		t.Errorf("time to ready %vs, want 3s", sum)
	}
	// Seen again at the same generation: not observed twice.
	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
		t.Fatal(err)
	}
	if err := c.metrics.TimeToReady.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetHistogram().GetSampleCount(); n != 1 {
		t.Errorf("%d observations after a second sync, want 1", n)
	}
}

func TestStaleCacheAfterStatusWriteCostsNothing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	f.addRobot(robot) // no status yet
	f.addDeployment(deployment)
	c := f.newController(ctx)

	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
		t.Fatal(err)
	}
	if n := len(filterInformerActions(f.robotClient.Actions())); n != 1 {
		t.Fatalf("first sync: %d status writes, want 1", n)
	}
	// The cache has not seen that write yet; a second sync must not repeat it.
	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
		t.Fatal(err)
	}
	if n := len(filterInformerActions(f.robotClient.Actions())); n != 1 {
		t.Errorf("a sync against the stale cache wrote again: %d status writes in all, want 1", n)
	}
}

func TestTerminatingNamespaceIsNotRetried(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	f.addRobot(robot)
	c := f.newController(ctx)
	f.kubeClient.PrependReactor("create", "deployments", func(core.Action) (bool, runtime.Object, error) {
		err := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "test", errors.New("namespace default is being terminated"))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
		return true, nil, err
	})

	requeueAfter, err := c.syncHandler(ctx, cache.MetaObjectToName(robot))
	if err != nil || requeueAfter != 0 {
		t.Errorf("sync returned %v, %v; want neither a retry nor a recheck", requeueAfter, err)
	}
	if actions := filterInformerActions(f.robotClient.Actions()); len(actions) != 0 {
		t.Errorf("wrote the status of a Robot whose namespace is going away: %v", actions)
	}
}

// TestEarlierRobotsDeploymentIsWaitedFor: a Robot deleted and created again
// under the same name finds the first one's Deployment until the garbage
// collector has deleted it. That is no one else's Deployment in the way: no
// warning, and the Robot says what it waits for.
func TestEarlierRobotsDeploymentIsWaitedFor(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	deployment := liveDeployment(t, robot)
	deployment.OwnerReferences[0].UID = "an-earlier-robot"
	f.addRobot(robot)
	f.addDeployment(deployment)
	c := f.newController(ctx)

	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
		t.Fatal(err)
	}
	if events := f.events(); len(events) != 0 {
		t.Errorf("events %q, want none", events)
	}
	applied := f.onlyStatusWrite()
	ready := robottest.FindCondition(applied.Status, robotv1alpha1.ConditionReady)
	if ready.Reason != robotv1alpha1.ReasonRolloutInProgress || !strings.Contains(ready.Message, "earlier Robot") {
		t.Errorf("Ready %s %q, want %s saying it waits for the earlier Robot's Deployment to go", ready.Reason, ready.Message, robotv1alpha1.ReasonRolloutInProgress)
	}
}

// TestSpecChangeInOwnStatusWriteIsNotAnEcho: a spec change that lands
// between the sync's cache read and its status apply comes back in the
// apply's answer, with the new generation. When the informer then delivers
// only that state (after a relist, say), it is the operator's own write by
// resourceVersion, but it carries a change no sync has seen.
func TestSpecChangeInOwnStatusWriteIsNotAnEcho(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	f.addRobot(robot)
	c := f.newController(ctx)
	for c.workqueue.Len() > 0 { // whatever the informer setup queued
		key, _ := c.workqueue.Get()
		c.workqueue.Done(key)
	}

	written := robot.DeepCopy()
	written.ResourceVersion = "12"
	written.Generation = 2                // the user's change
	written.Status.ObservedGeneration = 1 // what the sync saw and wrote
	c.writtenRobots.Remember(written)
	c.updateRobot(robot, written.DeepCopy())
	if c.workqueue.Len() != 1 {
		t.Errorf("the Robot was not queued: its generation %d is not the one its status reports (%d)", written.Generation, written.Status.ObservedGeneration)
	}

	// The echo of a status write that saw the current generation is
	// still nothing to sync.
	echo := written.DeepCopy()
	echo.ResourceVersion = "13"
	echo.Status.ObservedGeneration = 2
	c.writtenRobots.Remember(echo)
	for c.workqueue.Len() > 0 {
		key, _ := c.workqueue.Get()
		c.workqueue.Done(key)
	}
	c.updateRobot(written, echo.DeepCopy())
	if c.workqueue.Len() != 0 {
		t.Errorf("the echo of the operator's own status write was queued")
	}
}

// TestRunShutdownBeforeCachesSync: a signal while the informer caches are
// still syncing is a clean stop, not a failure (the process exits 0).
func TestRunShutdownBeforeCachesSync(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	c := newFixture(t).newController(ctx)
	c.robotsSynced = func() bool { return false }
	cancel()
	if err := c.Run(ctx, 1); err != nil {
		t.Errorf("Run after a signal during the cache sync returned %v, want nil", err)
	}
}
