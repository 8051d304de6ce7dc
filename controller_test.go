package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/robot-operator/robot-operator/internal/app"
	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/metrics"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/owned"
	"github.com/robot-operator/robot-operator/internal/podcache"
	"github.com/robot-operator/robot-operator/internal/podsummary"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/status"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	"github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/fake"
	informers "github.com/robot-operator/robot-operator/pkg/generated/informers/externalversions"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
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
	robotLister      []*robotv1beta1.Robot
	deploymentLister []*appsv1.Deployment
	// The managed pods and ReplicaSets, in the caches as the operator
	// summarizes them; with neither, the Controller watches no pods.
	podLister        []*corev1.Pod
	replicaSetLister []*appsv1.ReplicaSet
	// The informer caches, for a test that changes them between syncs.
	robotIndexer      cache.Indexer
	deploymentIndexer cache.Indexer
	// Objects in the fake API servers.
	robotObjects []runtime.Object
	kubeObjects  []runtime.Object

	// opts are the Options the last newController gave NewController.
	opts Options
	// budgets wires the PodDisruptionBudget informer, filled from
	// budgetLister: without it the Controller writes no budget.
	budgets      bool
	budgetLister []*policyv1.PodDisruptionBudget

	// Expected requests, in order.
	robotActions []core.Action
	kubeActions  []core.Action
}

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t}
}

// newTestFixture returns a fixture and the test's context.
func newTestFixture(t *testing.T) (*fixture, context.Context) {
	_, ctx := ktesting.NewTestContext(t)
	return newFixture(t), ctx
}

func (f *fixture) newController(ctx context.Context) *Controller {
	f.robotClient = fake.NewClientset(f.robotObjects...)
	f.kubeClient = k8sfake.NewClientset(f.kubeObjects...)
	robottest.AnswerStatusApplies(f.robotClient)

	robotInformers := informers.NewSharedInformerFactory(f.robotClient, 0)
	kubeInformers := kubeinformers.NewSharedInformerFactory(f.kubeClient, 0)
	f.recorder = record.NewFakeRecorder(10)
	opts := Options{
		Wiring: app.Wiring{
			KubeClient:    f.kubeClient,
			RobotClient:   f.robotClient,
			RobotInformer: robotInformers.Robot().V1beta1().Robots(),
			// No budget unless the test asks for one, and no history.
			Owned: owned.Sources{Kube: f.kubeClient, KubeInformers: kubeInformers, Without: []string{"PodDisruptionBudget", "ControllerRevision"}},
		},
		ShutdownTimeout: 20 * time.Second,
		Recorder:        f.recorder,
		Clock:           clocktesting.NewFakePassiveClock(robottest.FixtureNow),
	}
	podInformer := kubeInformers.Core().V1().Pods().Informer()
	replicaSetInformer := kubeInformers.Apps().V1().ReplicaSets().Informer()
	if len(f.podLister) > 0 || len(f.replicaSetLister) > 0 {
		opts.PodInformer, opts.ReplicaSetInformer = podInformer, replicaSetInformer
	}
	if f.budgets {
		opts.Owned.Without = []string{"ControllerRevision"}
		robottest.Fill(f.t, kubeInformers.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer(), f.budgetLister...)
	}
	if f.options != nil {
		f.options(&opts)
	}
	f.opts = opts
	c, err := NewController(ctx, opts)
	if err != nil {
		f.t.Fatalf("NewController: %v", err)
	}
	f.realRecorder = c.events.Recorder
	f.wiredKube, f.wiredRecorder = opts.KubeClient, opts.Recorder
	c.robotsSynced = alwaysReady
	c.ownedSynced = alwaysReady
	if opts.PodInformer != nil {
		c.podsSynced, c.replicaSetsSynced = alwaysReady, alwaysReady
	}

	f.robotIndexer = robotInformers.Robot().V1beta1().Robots().Informer().GetIndexer()
	f.deploymentIndexer = kubeInformers.Apps().V1().Deployments().Informer().GetIndexer()
	robottest.Fill(f.t, f.robotIndexer, f.robotLister...)
	robottest.Fill(f.t, f.deploymentIndexer, f.deploymentLister...)
	// The pod cache holds their summaries, as its informers' transform makes.
	fillSummaries := func(indexer cache.Indexer, obj interface{}) {
		summary, err := podsummary.Summarize(obj)
		if err != nil {
			f.t.Fatal(err)
		}
		robottest.Fill(f.t, indexer, summary)
	}
	for _, pod := range f.podLister {
		fillSummaries(podInformer.GetIndexer(), pod)
	}
	for _, rs := range f.replicaSetLister {
		fillSummaries(replicaSetInformer.GetIndexer(), rs)
	}
	return c
}

func alwaysReady() bool { return true }

// rewire gives c, just made, a writer and paths that write through kube
// and record their Events with recorder (nil: as before), and read c's
// clock as it is now.
func (f *fixture) rewire(c *Controller, kube kubernetes.Interface, recorder record.EventRecorder) {
	f.wiredKube = cmp.Or(kube, f.wiredKube)
	f.wiredRecorder = cmp.Or(recorder, f.wiredRecorder)
	kube, recorder = f.wiredKube, f.wiredRecorder
	c.writer = writer.New(f.robotClient, recorder, nil)
	deps := owned.Deps{Writer: c.writer, Robots: c.robotsLister, Clock: c.clock,
		Enqueue: func(key cache.ObjectName) { c.workqueue.Add(key) }}
	sources := f.opts.Owned
	sources.Kube, sources.Policy, sources.NewerFields = kube, f.opts.Policy, f.opts.NewerFields
	var err error
	if c.owned, err = owned.NewPaths(deps, sources); err != nil {
		f.t.Fatal(err)
	}
}

// run syncs the Robot named key and checks the requests it made.
func (f *fixture) run(ctx context.Context, key cache.ObjectName) time.Duration {
	f.t.Helper()
	c := f.newController(ctx)
	requeueAfter, err := c.syncHandler(ctx, key)
	if err != nil {
		f.t.Fatalf("syncing %v: %v", key, err)
	}
	robottest.CheckActions(f.t, "robot", f.robotActions, robottest.FilterInformerActions(f.robotClient.Actions()))
	robottest.CheckActions(f.t, "kube", f.kubeActions, robottest.FilterInformerActions(f.kubeClient.Actions()))
	return requeueAfter
}

// One expectation helper per kind of request.

func (f *fixture) expectCreateDeployment(robot *robotv1beta1.Robot) {
	var deployment appsv1.Deployment
	if err := workload.RoundTrip(desiredDeployment(f.t, robot), &deployment); err != nil {
		f.t.Fatal(err)
	}
	f.kubeActions = append(f.kubeActions, core.NewCreateAction(robottest.DeploymentsResource, robot.Namespace, &deployment))
}

// expectApplyDeployment expects the apply of robot's Deployment onto the one
// whose UID is uid.
func (f *fixture) expectApplyDeployment(robot *robotv1beta1.Robot, uid types.UID) {
	desired := desiredDeployment(f.t, robot).WithUID(uid)
	f.kubeActions = append(f.kubeActions, core.NewPatchAction(robottest.DeploymentsResource, robot.Namespace, *desired.Name, types.ApplyPatchType, robottest.MustJSON(f.t, desired)))
}

func (f *fixture) expectApplyStatus(robot *robotv1beta1.Robot, want robotv1beta1.RobotStatus) {
	f.robotActions = append(f.robotActions, core.NewPatchSubresourceAction(robottest.RobotsResource, robot.Namespace, robot.Name, types.ApplyPatchType,
		robottest.MustJSON(f.t, status.ApplyConfiguration(robot, &want)), "status"))
}

// desiredDeployment is the Deployment robot asks for, as the operator
// writes it: stamped with the Robot's generation.
func desiredDeployment(t *testing.T, robot *robotv1beta1.Robot) *appsv1ac.DeploymentApplyConfiguration {
	t.Helper()
	desired, err := workload.NewDeployment(robot)
	if err != nil {
		t.Fatal(err)
	}
	return workload.Stamped(desired, robot)
}

// liveDeployment returns robot's Deployment as the API server holds it
// after the operator applied it and the Deployment controller rolled it out.
func liveDeployment(t *testing.T, robot *robotv1beta1.Robot) *appsv1.Deployment {
	desired, err := workload.NewDeployment(robot)
	return robottest.LiveDeploymentOf(t, desired, err)
}

// converged sets robot's status to what the operator would write for
// deployment, so that a sync has nothing left to do.
func converged(robot *robotv1beta1.Robot, deployment *appsv1.Deployment) {
	robot.Status = status.Compute(robot, deployment, nil, nil, metav1.NewTime(robottest.FixtureNow.Add(-time.Hour)))
}

func (f *fixture) addRobot(robot *robotv1beta1.Robot) {
	f.robotLister = append(f.robotLister, robot)
	f.robotObjects = append(f.robotObjects, robot)
}

// add puts robot and its deployment in the caches and the API servers.
func (f *fixture) add(robot *robotv1beta1.Robot, deployment *appsv1.Deployment) {
	f.addRobot(robot)
	f.addDeployment(deployment)
}

func (f *fixture) addDeployment(deployment *appsv1.Deployment) {
	f.deploymentLister = append(f.deploymentLister, deployment)
	f.kubeObjects = append(f.kubeObjects, deployment)
}

// addPod puts pod's summary in the pod cache. The operator never reads a
// pod from the API server.
func (f *fixture) addPod(pod *corev1.Pod) {
	f.podLister = append(f.podLister, pod)
}

// addReplicaSet puts rs in the ReplicaSet cache.
func (f *fixture) addReplicaSet(rs *appsv1.ReplicaSet) {
	f.replicaSetLister = append(f.replicaSetLister, rs)
}

func TestCreatesDeployment(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 2)
	f.addRobot(robot)

	// Not in the cache: created, with no read first.
	f.expectCreateDeployment(robot)
	// The fake API server sets neither generation nor status: the Robot
	// reports that no replica runs yet.
	created := liveDeployment(t, robot)
	created.Generation, created.Status = 0, appsv1.DeploymentStatus{}
	f.expectApplyStatus(robot, status.Compute(robot, created, nil, nil, metav1.NewTime(robottest.FixtureNow)))

	f.run(ctx, cache.MetaObjectToName(robot))
	f.expectEvents(corev1.EventTypeNormal + " " + writer.EventCreated + ` Created Deployment "test"`)
}

func TestConvergedRobotCostsNothing(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	converged(robot, deployment)
	f.add(robot, deployment)

	f.run(ctx, cache.MetaObjectToName(robot))
	f.expectEvents()
}

func TestStatusUnchangedByIrrelevantDeploymentChange(t *testing.T) {
	f, ctx := newTestFixture(t)
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
	f.add(robot, deployment)

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
			f, ctx := newTestFixture(t)
			robot := robottest.NewRobot("test", 2)
			deployment := liveDeployment(t, robot)
			converged(robot, deployment)
			drift(deployment)
			f.add(robot, deployment)

			f.expectApplyDeployment(robot, deployment.UID)
			f.run(ctx, cache.MetaObjectToName(robot))
			f.expectOneEvent(corev1.EventTypeNormal, owned.EventDeploymentUpdated)
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
			f, ctx := newTestFixture(t)
			robot := robottest.NewRobot("test", 1)
			deployment := liveDeployment(t, robot)
			foreign(deployment)
			f.add(robot, deployment)

			// No write to the Deployment; the Robot says why.
			status := status.Compute(robot, nil, nil, &outcome.NameTakenError{Name: deployment.Name, Owner: outcome.ControllerName(deployment)}, metav1.NewTime(robottest.FixtureNow))
			if ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady); ready.Reason != robotv1beta1.ReasonDeploymentNameTaken {
				t.Fatalf("Ready reason %q, want %q", ready.Reason, robotv1beta1.ReasonDeploymentNameTaken)
			}
			f.expectApplyStatus(robot, status)

			if requeueAfter := f.run(ctx, cache.MetaObjectToName(robot)); requeueAfter != nameTakenRecheck {
				t.Errorf("requeue after %v, want %v", requeueAfter, nameTakenRecheck)
			}
			f.expectOneEvent(corev1.EventTypeWarning, robotv1beta1.ReasonDeploymentNameTaken)
		})
	}
}

func TestNameTakenReportedOnce(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 1)
	deployment := liveDeployment(t, robot)
	deployment.OwnerReferences = nil
	// The Robot already says so: nothing to write, nothing to record.
	robot.Status = status.Compute(robot, nil, nil, &outcome.NameTakenError{Name: deployment.Name, Owner: outcome.ControllerName(deployment)}, metav1.NewTime(robottest.FixtureNow.Add(-time.Minute)))
	f.add(robot, deployment)

	f.run(ctx, cache.MetaObjectToName(robot))
	f.expectEvents()
}

func TestRobotDeleted(t *testing.T) {
	f, ctx := newTestFixture(t)
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
	f, ctx := newTestFixture(t)
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
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 2)
	converged(robot, liveDeployment(t, robot))
	f.addRobot(robot)

	f.robotActions = append(f.robotActions, core.NewGetAction(robottest.RobotsResource, robot.Namespace, robot.Name))
	f.expectCreateDeployment(robot)
	created := liveDeployment(t, robot)
	created.Generation, created.Status = 0, appsv1.DeploymentStatus{}
	f.expectApplyStatus(robot, status.Compute(robot, created, nil, nil, metav1.NewTime(robottest.FixtureNow)))

	f.run(ctx, cache.MetaObjectToName(robot))
	f.expectEvents(corev1.EventTypeNormal + " " + writer.EventCreated + ` Created Deployment "test"`)
}

func TestInvalidSpecIsReportedNotRetried(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 1)
	robot.Spec.Replicas = ptr.To[int32](5000) // stored before the schema said no
	f.addRobot(robot)

	_, err := workload.NewDeployment(robot)
	f.expectApplyStatus(robot, status.Compute(robot, nil, nil, err, metav1.NewTime(robottest.FixtureNow)))
	if requeueAfter := f.run(ctx, cache.MetaObjectToName(robot)); requeueAfter != 0 {
		t.Errorf("requeue after %v, want none", requeueAfter)
	}
	f.expectOneEvent(corev1.EventTypeWarning, robotv1beta1.ReasonInvalidSpec)
}

// TestFailedWriteIsRetriedAndReported: a create or an apply of the Deployment
// that the API server refuses is retried with backoff, and the Robot says so.
func TestFailedWriteIsRetriedAndReported(t *testing.T) {
	for verb, cached := range map[string]func(*testing.T, *robotv1beta1.Robot) *appsv1.Deployment{
		// A new Robot: its Deployment is created.
		"create": func(*testing.T, *robotv1beta1.Robot) *appsv1.Deployment { return nil },
		// A Robot whose Deployment someone scaled: it is applied.
		"patch": func(t *testing.T, robot *robotv1beta1.Robot) *appsv1.Deployment {
			deployment := liveDeployment(t, robot)
			deployment.Spec.Replicas = ptr.To[int32](5)
			return deployment
		},
	} {
		t.Run(verb, func(t *testing.T) {
			f, ctx := newTestFixture(t)
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
			if synced := meta.FindStatusCondition(applied.Status.Conditions, robotv1beta1.ConditionSynced); synced.Reason != robotv1beta1.ReasonSyncFailed {
				t.Errorf("Synced reason %q, want %q", synced.Reason, robotv1beta1.ReasonSyncFailed)
			}
			// Ready is about the workload: only a Robot without a Deployment
			// is not Ready because of the failed write.
			if ready := meta.FindStatusCondition(applied.Status.Conditions, robotv1beta1.ConditionReady); (verb == "create") != (ready.Reason == robotv1beta1.ReasonSyncFailed) {
				t.Errorf("%s: Ready reason %q", verb, ready.Reason)
			}
		})
	}
}

// onlyStatusWrite returns the Robot whose status the sync applied, failing
// the test unless that was the one request to the Robot client.
func (f *fixture) onlyStatusWrite() robotv1beta1.Robot {
	f.t.Helper()
	actions := robottest.FilterInformerActions(f.robotClient.Actions())
	if len(actions) != 1 {
		f.t.Fatalf("expected one status write, got %d", len(actions))
	}
	var applied robotv1beta1.Robot
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

// expectOneEvent checks that the sync recorded one Event, of eventType and
// reason.
func (f *fixture) expectOneEvent(eventType, reason string) {
	f.t.Helper()
	if events := f.events(); len(events) != 1 || !strings.HasPrefix(events[0], eventType+" "+reason) {
		f.t.Errorf("expected one %s %s event, got %q", eventType, reason, events)
	}
}

// TestOneCreatedEventPerSync: the sync that creates a new Robot's
// Deployment, Service and PodDisruptionBudget records one Event naming the
// three, in the order they were created, not one Event each.
func TestOneCreatedEventPerSync(t *testing.T) {
	f, ctx := newTestFixture(t)
	f.budgets = true
	robot := robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeClusterIP)
	robot.Spec.Replicas = ptr.To[int32](2)
	f.addRobot(robot)
	c := f.newController(ctx)
	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
		t.Fatal(err)
	}
	var creates []string
	for _, action := range robottest.FilterInformerActions(f.kubeClient.Actions()) {
		if action.GetVerb() == "create" {
			creates = append(creates, robottest.Describe(action))
		}
	}
	if want := []string{"create deployments default/test", "create services default/test", "create poddisruptionbudgets default/test"}; fmt.Sprint(creates) != fmt.Sprint(want) {
		t.Fatalf("creates %q, want %q", creates, want)
	}
	f.expectEvents(corev1.EventTypeNormal + " " + writer.EventCreated + ` Created Deployment "test", Service "test", PodDisruptionBudget "test"`)
}

// TestProgressConditionsOfAnEarlierRelease: a converged Robot whose status
// an earlier release wrote, with Reconciling and Stalled at False, gets one
// status apply that leaves both out (the operator's field manager owned
// them, so the API server removes them); stored so, it gets no write.
func TestProgressConditionsOfAnEarlierRelease(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	converged(robot, deployment)
	current := robot.DeepCopy()
	ready := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionReady)
	for _, conditionType := range []string{robotv1beta1.ConditionReconciling, robotv1beta1.ConditionStalled} {
		robot.Status.Conditions = append(robot.Status.Conditions, metav1.Condition{Type: conditionType, Status: metav1.ConditionFalse,
			Reason: ready.Reason, Message: ready.Message, ObservedGeneration: robot.Generation, LastTransitionTime: ready.LastTransitionTime})
	}

	f := newFixture(t)
	f.add(robot, deployment)
	c := f.newController(ctx)
	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
		t.Fatal(err)
	}
	written := f.onlyStatusWrite()
	var types []string
	for _, c := range written.Status.Conditions {
		types = append(types, c.Type)
	}
	if got := strings.Join(types, ","); got != "Ready,Available,Progressing,Synced" {
		t.Errorf("applied conditions %s, want Ready,Available,Progressing,Synced", got)
	}

	// Stored without them: the next sync writes nothing.
	again := newFixture(t)
	again.addRobot(current)
	again.addDeployment(deployment)
	again.run(ctx, cache.MetaObjectToName(current))
}

func TestTimeToReadyIsObservedOncePerGeneration(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	converged(robot, deployment)
	robot.Generation = 2 // a spec change the operator has not reported yet
	f.add(robot, deployment)
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
	// The same sync applied the generation: Synced, once, 3 s after it
	// was seen.
	if err := c.metrics.TimeToSynced.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n, sum := m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum(); n != 1 || sum != 3 {
		t.Errorf("time_to_synced: %d observations, %vs in all; want 1 of 3s", n, sum)
	}
}

func TestStaleCacheAfterStatusWriteCostsNothing(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	f.addRobot(robot) // no status yet
	f.addDeployment(deployment)
	c := f.newController(ctx)

	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
		t.Fatal(err)
	}
	if n := len(robottest.FilterInformerActions(f.robotClient.Actions())); n != 1 {
		t.Fatalf("first sync: %d status writes, want 1", n)
	}
	// The cache has not seen that write yet; a second sync must not repeat it.
	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
		t.Fatal(err)
	}
	if n := len(robottest.FilterInformerActions(f.robotClient.Actions())); n != 1 {
		t.Errorf("a sync against the stale cache wrote again: %d status writes in all, want 1", n)
	}
}

func TestTerminatingNamespaceIsNotRetried(t *testing.T) {
	f, ctx := newTestFixture(t)
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
	if actions := robottest.FilterInformerActions(f.robotClient.Actions()); len(actions) != 0 {
		t.Errorf("wrote the status of a Robot whose namespace is going away: %v", actions)
	}
}

// TestSpecChangeInOwnStatusWriteIsNotAnEcho: a spec change that lands
// between the sync's cache read and its status apply comes back in the
// apply's answer, with the new generation. When the informer then delivers
// only that state (after a relist, say), it is the operator's own write by
// status.ResourceVersion, but it carries a change no sync has seen.
func TestSpecChangeInOwnStatusWriteIsNotAnEcho(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 1)
	f.addRobot(robot)
	c := f.newController(ctx)
	robottest.DrainQueue(c.workqueue) // whatever the informer setup queued

	written := robot.DeepCopy()
	written.ResourceVersion = "12"
	written.Generation = 2                // the user's change
	written.Status.ObservedGeneration = 1 // what the sync saw and wrote
	c.writer.RememberStatus(written)
	c.updateRobot(robot, written.DeepCopy())
	if c.workqueue.Len() != 1 {
		t.Errorf("the Robot was not queued: its generation %d is not the one its status reports (%d)", written.Generation, written.Status.ObservedGeneration)
	}

	// The echo of a status write that saw the current generation is
	// still nothing to sync.
	echo := written.DeepCopy()
	echo.ResourceVersion = "13"
	echo.Status.ObservedGeneration = 2
	c.writer.RememberStatus(echo)
	robottest.DrainQueue(c.workqueue)
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

// atVersion returns a copy of obj at resourceVersion.
func atVersion[T interface {
	metav1.Object
	runtime.Object
}](obj T, resourceVersion string) T {
	copied := obj.DeepCopyObject().(T)
	copied.SetResourceVersion(resourceVersion)
	return copied
}

// TestEchoFilterDropsOnlyOwnWrites: an update event that brings back
// exactly the object this process last wrote (same UID, same
// status.ResourceVersion) queues nothing, since the sync that wrote it has seen it
// all; any other version queues the Robot. The owned objects' events are
// filtered alike (internal/owned's TestDeploymentEchoIsDropped).
func TestEchoFilterDropsOnlyOwnWrites(t *testing.T) {
	// robottest.NewRobot has generation 1 and status.ResourceVersion 10; its status reports
	// generation 1, so only the echo check decides.
	robotAtVersion := atVersion[*robotv1beta1.Robot]
	// Each event remembers what the operator wrote, if anything, and
	// delivers one event. The informer hands handlers objects of its own,
	// never the ones the operator holds: each is a copy.
	type event func(c *Controller, robot *robotv1beta1.Robot)
	tests := []struct {
		name   string
		event  event
		queued bool
	}{
		{"updateRobot: the Robot last written", func(c *Controller, robot *robotv1beta1.Robot) {
			c.writer.RememberStatus(robotAtVersion(robot, "11"))
			c.updateRobot(robot, robotAtVersion(robot, "11"))
		}, false},
		{"updateRobot: a later resourceVersion than the one written", func(c *Controller, robot *robotv1beta1.Robot) {
			c.writer.RememberStatus(robotAtVersion(robot, "11"))
			c.updateRobot(robotAtVersion(robot, "11"), robotAtVersion(robot, "12"))
		}, true},
		{"updateRobot: an earlier resourceVersion than the one written", func(c *Controller, robot *robotv1beta1.Robot) {
			c.writer.RememberStatus(robotAtVersion(robot, "12"))
			c.updateRobot(robot, robotAtVersion(robot, "11"))
		}, true},
		{"updateRobot: another Robot of the name, at the resourceVersion written", func(c *Controller, robot *robotv1beta1.Robot) {
			c.writer.RememberStatus(robotAtVersion(robot, "11"))
			recreated := robotAtVersion(robot, "11")
			recreated.UID = "a-recreated-robot"
			c.updateRobot(robot, recreated)
		}, true},
		{"updateRobot: nothing written", func(c *Controller, robot *robotv1beta1.Robot) {
			c.updateRobot(robot, robotAtVersion(robot, "11"))
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ctx := newTestFixture(t)
			robot := robottest.NewRobot("test", 1)
			robot.Status.ObservedGeneration = robot.Generation
			f.add(robot, liveDeployment(t, robot))
			c := f.newController(ctx)
			if keys := robottest.DrainQueue(c.workqueue); len(keys) != 0 {
				t.Fatalf("queued before any event: %v", keys)
			}

			tt.event(c, robot.DeepCopy())
			var want []cache.ObjectName
			if tt.queued {
				want = []cache.ObjectName{cache.MetaObjectToName(robot)}
			}
			if got := robottest.DrainQueue(c.workqueue); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("queued %v, want %v", got, want)
			}
		})
	}
}

// recordQueue makes c's queue record the calls made to it from now on.
func recordQueue(c *Controller) *robottest.RecordingQueue {
	q := &robottest.RecordingQueue{TypedRateLimitingInterface: c.workqueue}
	c.workqueue, c.workers.Queue = q, q
	return q
}

// TestSyncOutOfTimeWritesNoStatus: a sync whose context ends (its deadline,
// or the shutdown timeout) before its status write fails, and writes no
// status with the expired context: the retry, or the next leader, does.
func TestSyncOutOfTimeWritesNoStatus(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("late", 1)
	f.addRobot(robot)
	c := f.newController(ctx)
	ctx, cancel := context.WithCancelCause(ctx)
	cancel(errors.New("out of time"))
	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err == nil {
		t.Error("the sync out of time returned no error: it would not be retried")
	}
	if actions := robottest.FilterInformerActions(f.robotClient.Actions()); len(actions) != 0 {
		t.Errorf("Robot writes %v after the sync's context ended, want none", actions)
	}
}

// TestRunWritesItsEventsBeforeReturning: the Events that the syncs record
// are written before Run returns, however slowly the API server takes them,
// and none is written after: with leader election the Lease is released
// when Run returns, and a write after that could land alongside the next
// leader's. Nothing recorded before the shutdown is dropped.
func TestRunWritesItsEventsBeforeReturning(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := newFixture(t)
	robot := robottest.NewRobot("in-flight", 1)
	f.addRobot(robot)
	// As in main: one context for NewController and Run.
	c := f.newController(ctx)
	f.rewire(c, nil, f.realRecorder)
	c.workers.ShutdownTimeout = time.Hour

	var mu sync.Mutex
	var started, finished []time.Time
	var reasons []string
	f.kubeClient.PrependReactor("create", "events", func(action core.Action) (bool, runtime.Object, error) {
		mu.Lock()
		started = append(started, time.Now())
		mu.Unlock()
		// A slow API server.
		time.Sleep(300 * time.Millisecond)
		event := action.(core.CreateAction).GetObject().(*corev1.Event)
		mu.Lock()
		finished = append(finished, time.Now())
		reasons = append(reasons, event.Reason)
		mu.Unlock()
		return false, nil, nil
	})
	// The sync is held until the shutdown has begun: its Event is
	// recorded while Run stops.
	entered, release := make(chan struct{}), make(chan struct{})
	var entering sync.Once
	c.workers.Sync = func(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
		entering.Do(func() { close(entered) })
		<-release
		return c.syncHandler(ctx, key)
	}
	c.workqueue.Add(cache.MetaObjectToName(robot))

	returned := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { returned <- c.Run(ctx, 1) })
	defer wg.Wait()
	select {
	case <-entered:
	case <-time.After(robottest.Soon):
		close(release)
		t.Fatal("the sync did not begin")
	}
	cancel()
	robottest.WaitFor(t, "Run to shut its queue down", c.workqueue.ShuttingDown)
	close(release)
	var runReturned time.Time
	select {
	case err := <-returned:
		runReturned = time.Now()
		if err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of the sync in flight being let through")
	}
	// time for a write that Run left behind to show.
	time.Sleep(time.Second)

	mu.Lock()
	defer mu.Unlock()
	if got, want := fmt.Sprint(reasons), fmt.Sprint([]string{writer.EventCreated}); got != want {
		t.Errorf("Events written %s, want %s: the sync's event, once", got, want)
	}
	for i, at := range finished {
		if at.After(runReturned) {
			t.Errorf("Event write %d finished %v after Run returned; want every write done before", i, at.Sub(runReturned))
		}
	}
	for i, at := range started {
		if at.After(runReturned) {
			t.Errorf("Event write %d began %v after Run returned", i, at.Sub(runReturned))
		}
	}
}

// TestNewRobotCostsOneRequest: the sync of a new Robot makes one request
// about its Deployment, the create: no read before it to confirm that the
// cache is right not to have it.
func TestNewRobotCostsOneRequest(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 2)
	f.addRobot(robot)
	c := f.newController(ctx)

	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
		t.Fatalf("sync: %v", err)
	}
	var requests []string
	for _, action := range robottest.FilterInformerActions(f.kubeClient.Actions()) {
		if action.GetResource() == robottest.DeploymentsResource {
			requests = append(requests, robottest.Describe(action))
		}
	}
	if len(requests) != 1 || !strings.HasPrefix(requests[0], "create deployments ") {
		t.Errorf("requests about the Deployment: %q; want one, a create", requests)
	}
	obj, err := f.kubeClient.Tracker().Get(robottest.DeploymentsResource, robot.Namespace, robot.Name)
	if err != nil {
		t.Fatalf("the Deployment was not created: %v", err)
	}
	desired, err := workload.NewDeployment(robot)
	if err != nil {
		t.Fatal(err)
	}
	if drift := drift.DeploymentDrift(desired, obj.(*appsv1.Deployment)); drift != "" {
		t.Errorf("the created Deployment is not what the Robot asks for: %s", drift)
	}
}

// A sync whose Robot's pods show a cause writes it, with one Warning, and
// the next sync writes nothing.
func TestSyncSaysWhyPodsDoNotRun(t *testing.T) {
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	deployment := unavailable(t, robot)
	converged(robot, deployment)
	f.add(robot, deployment)
	f.addReplicaSet(robottest.ReplicaSet(deployment, "1"))
	f.addPod(robottest.Pod(robot, "test-a", robottest.Waiting("ErrImagePull", "not found")))
	f.addPod(robottest.Pod(robottest.NewRobot("other", 1), "other-a", robottest.Waiting("CrashLoopBackOff", "")))
	ctrl := f.newController(t.Context())
	if _, err := ctrl.syncHandler(t.Context(), cache.MetaObjectToName(robot)); err != nil {
		t.Fatal(err)
	}
	written := f.onlyStatusWrite()
	if ready := meta.FindStatusCondition(written.Status.Conditions, robotv1beta1.ConditionReady); ready == nil || ready.Reason != robotv1beta1.ReasonImagePullFailed {
		t.Fatalf("Ready: got %v, want %s", ready, robotv1beta1.ReasonImagePullFailed)
	}
	f.expectEvents(fmt.Sprintf("Warning %s %s", robotv1beta1.ReasonImagePullFailed,
		`cannot pull image "registry.example/robot:1.0" (ErrImagePull): not found`))
}

// A Robot deleted and recreated under the same name is another Robot: the
// pods its predecessor left behind carry the same name label and image,
// but they are no cause of the new Robot's, whose own ReplicaSet has no
// pod yet.
func TestSyncIgnoresTheEarlierRobotsPods(t *testing.T) {
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	deployment := unavailable(t, robot)
	converged(robot, deployment)
	f.add(robot, deployment)
	f.addReplicaSet(robottest.ReplicaSet(deployment, "1"))
	earlier := robottest.ReplicaSet(liveDeployment(t, robot), "1")
	earlier.Name, earlier.UID, earlier.OwnerReferences[0].UID = "test-6b8d9f7c5", "earlier-rs-uid", "earlier-deployment-uid"
	f.addReplicaSet(earlier)
	f.addPod(robottest.OwnedBy(robottest.Pod(robot, "test-6b8d9f7c5-x", robottest.Waiting("ErrImagePull", "not found")), earlier))
	ctrl := f.newController(t.Context())
	if _, err := ctrl.syncHandler(t.Context(), cache.MetaObjectToName(robot)); err != nil {
		t.Fatal(err)
	}
	if actions := robottest.FilterInformerActions(f.robotClient.Actions()); len(actions) != 0 {
		var applied robotv1beta1.Robot
		if patch, ok := actions[0].(core.PatchAction); ok {
			_ = json.Unmarshal(patch.GetPatch(), &applied)
		}
		t.Errorf("the sync wrote the status %v; want no write: the Robot's own pods show no cause",
			meta.FindStatusCondition(applied.Status.Conditions, robotv1beta1.ConditionReady))
	}
	f.expectEvents()
}

func unavailable(t *testing.T, robot *robotv1beta1.Robot) *appsv1.Deployment {
	return robottest.UnavailableNow(liveDeployment(t, robot))
}

// TestUndecodableRobotIsReportedNotRetried: the sync handler reports it as
// InvalidSpec, once, and touches no Deployment.
func TestUndecodableRobotIsReportedNotRetried(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 1)
	robot.Spec = robotv1beta1.RobotSpec{}
	robot.Annotations = map[string]string{workload.UndecodableSpecAnnotation: `spec.replicas is "two", which the operator cannot read`}
	f.addRobot(robot)

	_, err := workload.NewDeployment(robot)
	status := status.Compute(robot, nil, nil, err, metav1.NewTime(robottest.FixtureNow))
	f.expectApplyStatus(robot, status)
	if requeueAfter := f.run(ctx, cache.MetaObjectToName(robot)); requeueAfter != 0 {
		t.Errorf("requeue after %v, want none", requeueAfter)
	}
	events := f.events()
	if len(events) != 1 || !strings.HasPrefix(events[0], corev1.EventTypeWarning+" "+robotv1beta1.ReasonInvalidSpec) || !strings.Contains(events[0], `spec.replicas is "two"`) {
		t.Errorf("expected one %s warning naming the field, got %q", robotv1beta1.ReasonInvalidSpec, events)
	}
}

// TestTrackedObjects: the gauge reports each per-object map's size, and a
// deleted Robot, with its Deployment and Service, leaves nothing in any.
func TestTrackedObjects(t *testing.T) {
	f, ctx := newTestFixture(t)
	c := f.newController(ctx)
	registry := prometheus.NewRegistry()
	if err := c.RegisterMetrics(registry); err != nil {
		t.Fatal(err)
	}
	// So that the alert on "no leader" sees every replica's 0 or 1
	// (metrics' TestLeaderGauge).
	if n, err := testutil.GatherAndCount(registry, "robot_operator_leader"); err != nil || n != 1 {
		t.Errorf("robot_operator_leader gathered %d times (error %v), want once", n, err)
	}
	want := func(sizes map[string]int) {
		t.Helper()
		var b strings.Builder
		b.WriteString("# HELP robot_operator_tracked_objects " + metrics.TrackedHelp + "\n# TYPE robot_operator_tracked_objects gauge\n")
		for _, name := range []string{"fights", "inflight", "parked", "readiness", "specs_checked", "synced", "written_deployments", "written_robots", "written_services"} {
			fmt.Fprintf(&b, "robot_operator_tracked_objects{map=%q} %d\n", name, sizes[name])
		}
		if err := testutil.GatherAndCompare(registry, strings.NewReader(b.String()), "robot_operator_tracked_objects"); err != nil {
			t.Error(err)
		}
	}
	want(nil)

	robot := robottest.NewRobot("tracked", 1)
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "tracked", Namespace: robot.Namespace, UID: "tracked-deployment", ResourceVersion: "11"}}
	service := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "tracked", Namespace: robot.Namespace, UID: "tracked-service", ResourceVersion: "12"}}
	c.readiness.Seen(robot, robottest.FixtureNow)
	c.synced.Seen(robot, robottest.FixtureNow)
	c.writer.RememberStatus(robot)
	c.owned.Deployments.Objects().Remember(deployment)
	c.owned.Services.Objects().Remember(service)
	c.owned.Deployments.Fights().Reverted(deployment.UID, robottest.FixtureNow, "replicas", "other")
	untrack := c.workers.Track(cache.ObjectName{Namespace: robot.Namespace, Name: robot.Name}, robottest.FixtureNow.Add(-time.Minute))
	if key, took := c.LongestSync(); key != cache.MetaObjectToName(robot) || took != time.Minute {
		t.Errorf("LongestSync: %v for %v, want %v for a minute", key, took, cache.MetaObjectToName(robot))
	}
	want(map[string]int{"fights": 1, "inflight": 1, "readiness": 1, "synced": 1, "written_deployments": 1, "written_robots": 1, "written_services": 1})

	untrack()
	c.deleteRobot(robot)
	c.owned.Deployments.Handlers().DeleteFunc(cache.DeletedFinalStateUnknown{Key: "default/tracked", Obj: deployment})
	c.owned.Services.Handlers().DeleteFunc(service)
	want(nil)
}

// pausedStatus is the status the operator writes for a paused robot whose
// Deployment and Service, as the caches hold them, are deployment and
// service.
func pausedStatus(robot *robotv1beta1.Robot, deployment *appsv1.Deployment, service *corev1.Service, now time.Time) robotv1beta1.RobotStatus {
	return status.Compute(robot, deployment, service, &outcome.PausedError{Deployment: workload.DeploymentName(robot)}, metav1.NewTime(now))
}

// TestUnpauseIsQueuedAndSynced: removing the annotation, or setting it to
// another value, is a change of the Robot's metadata only (its generation
// stays), yet its update event queues the Robot, even when it arrives in one
// event with the operator's own status write; and the sync that follows
// puts the Robot's spec back on the Deployment. Pausing is queued the same
// way, while the echo of a status write that saw the pause is not.
func TestUnpauseIsQueuedAndSynced(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	deployment.Spec.Replicas = ptr.To[int32](5) // scaled by hand while paused
	robot = robottest.Paused(robot, "true")
	robot.Status = pausedStatus(robot, deployment, nil, robottest.FixtureNow.Add(-time.Hour))
	f.add(robot, deployment)
	c := f.newController(ctx)
	key := cache.MetaObjectToName(robot)
	robottest.DrainQueue(c.workqueue)

	at := atVersion[*robotv1beta1.Robot]
	unpaused := at(robot, "11")
	delete(unpaused.Annotations, workload.AnnotationPaused)
	notTrue := at(robottest.Paused(robot, "false"), "11")
	// Paused again just before a status write that saw it unpaused.
	pausedAgain := at(robottest.Paused(unpaused, "true"), "12")
	pausedAgain.Status = status.Compute(unpaused, deployment, nil, nil, metav1.NewTime(robottest.FixtureNow))

	for _, tt := range []struct {
		name   string
		event  func()
		queued bool
	}{
		{"annotation removed", func() { c.updateRobot(robot, unpaused.DeepCopy()) }, true},
		{"annotation set to false", func() { c.updateRobot(robot, notTrue.DeepCopy()) }, true},
		{"annotation removed, in one event with the operator's status write", func() {
			c.writer.RememberStatus(unpaused.DeepCopy())
			c.updateRobot(robot, unpaused.DeepCopy())
		}, true},
		{"annotation set, in one event with the operator's status write", func() {
			c.writer.RememberStatus(pausedAgain.DeepCopy())
			c.updateRobot(unpaused, pausedAgain.DeepCopy())
		}, true},
		{"the echo of a status write that saw the pause", func() {
			echo := at(robot, "13")
			c.writer.RememberStatus(echo.DeepCopy())
			c.updateRobot(robot, echo)
		}, false},
	} {
		tt.event()
		if keys := robottest.DrainQueue(c.workqueue); tt.queued != (len(keys) == 1 && keys[0] == key) || len(keys) > 1 {
			t.Errorf("%s: queued %v, want queued: %v", tt.name, keys, tt.queued)
		}
		c.writer.ForgetRobot(robot.UID)
	}

	// The cache has the unpaused Robot: its spec goes back on the
	// Deployment.
	if err := f.robotIndexer.Update(unpaused); err != nil {
		t.Fatal(err)
	}
	f.expectApplyDeployment(unpaused, deployment.UID)
	if _, err := c.syncHandler(ctx, key); err != nil {
		t.Fatal(err)
	}
	robottest.CheckActions(f.t, "kube", f.kubeActions, robottest.FilterInformerActions(f.kubeClient.Actions()))
	written := f.onlyStatusWrite()
	if synced := meta.FindStatusCondition(written.Status.Conditions, robotv1beta1.ConditionSynced); synced.Status != metav1.ConditionTrue {
		t.Errorf("Synced %s %s after unpausing, want True", synced.Status, synced.Reason)
	}
	f.expectOneEvent(corev1.EventTypeNormal, owned.EventDeploymentUpdated)
}

// TestIgnoredAnnotationIsWarnedOnce: a Robot whose pause annotation, or
// whose budget's annotation, holds a value the operator ignores gets one
// Warning per value, not one per sync; a new value gets its own, and so
// does the same value set again after it was put right.
func TestIgnoredAnnotationIsWarnedOnce(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	converged(robot, deployment)
	f.add(robot, deployment)
	c := f.newController(ctx)
	key := cache.MetaObjectToName(robot)
	warning := func(robot *robotv1beta1.Robot) string {
		ignored := workload.IgnoredAnnotations(robot, nil)
		if len(ignored) != 1 {
			t.Fatalf("ignored %v, want the pause annotation", ignored)
		}
		return corev1.EventTypeWarning + " " + robotv1beta1.ReasonAnnotationIgnored + " " + ignored[0].Message()
	}
	sync := func(value string) *robotv1beta1.Robot {
		t.Helper()
		robot := robottest.Paused(robot, value)
		if value == "" {
			delete(robot.Annotations, workload.AnnotationPaused)
		}
		if err := f.robotIndexer.Update(robot); err != nil {
			t.Fatal(err)
		}
		if _, err := c.syncHandler(ctx, key); err != nil {
			t.Fatal(err)
		}
		return robot
	}

	maybe := sync("maybe")
	sync("maybe")
	f.expectEvents(warning(maybe))
	yes := sync("yes")
	sync("yes")
	f.expectEvents(warning(yes))
	sync("")
	f.expectEvents()
	f.expectEvents(warning(sync("yes")))

	// Once deleted, it is forgotten.
	c.deleteRobot(yes)
	f.expectEvents(warning(sync("yes")))
}

// TestStatusTooLargeIsReportedNotRetried: a Robot so large that the API
// server cannot store it with its status (etcd's request limit) gets one
// Warning Event, and no retry: not with backoff, not at its next event,
// only at its next generation.
func TestStatusTooLargeIsReportedNotRetried(t *testing.T) {
	// What the API server answers when etcd refuses the write.
	testStatusRefusedOnce(t, apierrors.NewInternalError(errors.New("etcdserver: request is too large")), "StatusTooLarge", "request is too large")
}

// TestStatusCostLimitIsReportedNotRetried: a Robot whose spec is more than
// the CRD's CEL rules can check within the API server's cost budget (a list
// far longer than its maxItems, stored around the schema) has every status
// write refused with a 422, after seconds of the API server's CPU. It gets
// one Warning Event, and no retry until its next generation, like a status
// too large for etcd.
func TestStatusCostLimitIsReportedNotRetried(t *testing.T) {
	robotKind := robotv1beta1.SchemeGroupVersion.WithKind("Robot").GroupKind()
	for _, tt := range []struct {
		name   string
		detail string
	}{
		// The API server's two answers (apiextensions-apiserver's
		// schema/cel/validation.go): a rule stopped by the per-call
		// limit, and the request's budget spent before a rule runs.
		{"actual cost", "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit " +
			"for rule: a sidecar's port cannot have the name of another port"},
		{"cost budget", "validation failed due to running out of cost budget, no further validation rules will be run"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			refusal := apierrors.NewInvalid(robotKind, "test", field.ErrorList{field.Invalid(field.NewPath("spec"), "object", tt.detail)})
			testStatusRefusedOnce(t, refusal, "StatusValidationTooCostly", "cost")
		})
	}
}

// testStatusRefusedOnce checks that a status write the API server refuses
// with refusal gets one Warning Event of reason, whose message holds text,
// and is not sent again before the Robot's next generation.
func testStatusRefusedOnce(t *testing.T, refusal error, reason, text string) {
	t.Helper()
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 1)
	f.addRobot(robot)
	c := f.newController(ctx)
	var statusWrites atomic.Int32
	f.robotClient.PrependReactor("patch", "robots", func(action core.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" {
			return false, nil, nil
		}
		statusWrites.Add(1)
		return true, nil, refusal
	})
	key := cache.MetaObjectToName(robot)
	queue := recordQueue(c)
	sync := func(what string, wantWrites int32, wantEvents int) {
		t.Helper()
		c.workqueue.Add(key)
		if !c.processNextWorkItem(ctx) {
			t.Fatal("processNextWorkItem returned false: the queue is not shut down")
		}
		if n := statusWrites.Load(); n != wantWrites {
			t.Errorf("%s: %d status writes in all, want %d", what, n, wantWrites)
		}
		var events []string
		for _, event := range f.events() {
			if strings.HasPrefix(event, corev1.EventTypeWarning) {
				events = append(events, event)
			}
		}
		if len(events) != wantEvents {
			t.Errorf("%s: Warning events %q, want %d", what, events, wantEvents)
		}
		for _, event := range events {
			if !strings.HasPrefix(event, corev1.EventTypeWarning+" "+reason+" ") || !strings.Contains(event, text) {
				t.Errorf("%s: event %q, want a Warning %s that says why (%q)", what, event, reason, text)
			}
		}
	}

	sync("first sync", 1, 1)
	if got, want := queue.Recorded(), fmt.Sprint([]robottest.QueueCall{{Method: "Add", Key: key}, {Method: "Forget", Key: key}}); got != want {
		t.Errorf("queue calls %s, want %s: no retry", got, want)
	}
	if n := c.workqueue.Len(); n != 0 {
		t.Errorf("%d Robots queued, want none", n)
	}
	// Another event about the Robot (its Deployment's status, a resync):
	// the write would be refused again, so it is not sent.
	sync("same generation", 1, 0)
	// A new generation may be smaller: its status is written again.
	changed := robot.DeepCopy()
	changed.Generation = 2
	if err := f.robotIndexer.Update(changed); err != nil {
		t.Fatal(err)
	}
	sync("next generation", 2, 1)
}

// TestIgnoredBudgetAnnotationIsWarned: a Robot whose PodDisruptionBudget
// holds a value of robot.dev/disruption-budget the operator does not read
// gets a Warning that names the budget, the value and the values read; the
// budget stays in the operator's hands.
func TestIgnoredBudgetAnnotationIsWarned(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	converged(robot, deployment)
	budget := robottest.LiveBudgetOf(t, workload.NewDisruptionBudget(robot))
	budget.Annotations[workload.AnnotationDisruptionBudget] = "off"
	f.add(robot, deployment)
	f.budgets, f.budgetLister, f.kubeObjects = true, []*policyv1.PodDisruptionBudget{budget}, append(f.kubeObjects, budget)
	f.options = func(o *Options) { o.Policy.DisruptionBudgets = policy.DisruptionBudgetsDefault }
	c := f.newController(ctx)
	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
		t.Fatal(err)
	}
	f.expectEvents(corev1.EventTypeWarning + " " + robotv1beta1.ReasonAnnotationIgnored + " " +
		`The PodDisruptionBudget "test"'s annotation robot.dev/disruption-budget is "off", which the operator ignores: it reads "unmanaged" or "managed", in any case; the operator keeps the budget as the Robot asks`)
}

// syncedAtCreation is a fixture holding robot as its creation's sync left
// it (its Deployment created, Synced for its generation, not Ready), and
// its Deployment as live is now, which the Deployment's update event has
// yet to report.
func syncedAtCreation(t *testing.T, robot *robotv1beta1.Robot, live func(*appsv1.Deployment) *appsv1.Deployment) (*fixture, *appsv1.Deployment, *appsv1.Deployment) {
	t.Helper()
	f := newFixture(t)
	available := liveDeployment(t, robot)
	// As the operator's create left it: not yet observed by the Deployment
	// controller, no status.
	created := available.DeepCopy()
	created.ResourceVersion, created.Status = "5", appsv1.DeploymentStatus{}
	robot.Status = status.Compute(robot, created, nil, nil, metav1.NewTime(robottest.FixtureNow))
	if !status.SyncedFor(robot.Status, robot.Generation) || status.ReadyFor(robot.Status, robot.Generation) {
		t.Fatalf("the fixture's Robot should be Synced and not Ready: %v", robot.Status.Conditions)
	}
	now := live(available)
	f.add(robot, now)
	return f, created, now
}

// queueCreations queues n Robots that wait for their first sync.
func queueCreations(c *Controller, n int) {
	for i := range n {
		c.workqueue.Add(cache.ObjectName{Namespace: metav1.NamespaceDefault, Name: fmt.Sprintf("new-%04d", i)})
	}
}

// TestReportOvertakesTheCreations: the event that only has a Robot's
// status to report (its Deployment became Available, a pod of it changed)
// is synced before the creations queued ahead of it.
func TestReportOvertakesTheCreations(t *testing.T) {
	for name, report := range map[string]func(c *Controller, robot *robotv1beta1.Robot, created, now *appsv1.Deployment){
		"Deployment update": func(c *Controller, _ *robotv1beta1.Robot, created, now *appsv1.Deployment) {
			c.owned.Deployments.Handlers().UpdateFunc(created, now)
		},
		"pod": func(c *Controller, robot *robotv1beta1.Robot, _, _ *appsv1.Deployment) {
			podcache.QueueRobot(c.robotsLister, c.enqueueReport)(robot.Namespace, robot.Name)
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			robot := robottest.NewRobot("converged", 1)
			f, created, now := syncedAtCreation(t, robot, func(d *appsv1.Deployment) *appsv1.Deployment { return d })
			c := f.newController(ctx)
			queueCreations(c, 1000)

			report(c, robot, created, now)

			if key, _ := c.workqueue.Get(); key != cache.MetaObjectToName(robot) {
				t.Errorf("the first Robot taken is %v, want %v, whose report waited behind 1,000 creations", key, cache.MetaObjectToName(robot))
			}
		})
	}
}

// TestReportOfARobotNotSyncedWaitsItsTurn: an event of a Robot whose spec
// is not in place yet asks for work, not only a report: it waits behind the
// creations queued before it.
func TestReportOfARobotNotSyncedWaitsItsTurn(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("changed", 1)
	f, created, now := syncedAtCreation(t, robot, func(d *appsv1.Deployment) *appsv1.Deployment { return d })
	robot.Generation = 2 // a spec change the operator has yet to apply
	c := f.newController(ctx)
	queueCreations(c, 3)

	c.owned.Deployments.Handlers().UpdateFunc(created, now)

	taken := robottest.DrainQueue(c.workqueue)
	if len(taken) != 4 || taken[3] != cache.MetaObjectToName(robot) {
		t.Errorf("taken in the order %v, want the changed Robot last, behind the 3 creations", taken)
	}
}

// TestReportsOfARolloutWriteTheStatusOnce: a report whose status would only
// say how far the rollout got (replicas counted, the Deployment's
// conditions) writes nothing ahead of the creations: it waits its turn
// among them, as it did in a single queue, and the report that the
// Deployment is Available writes the status once, with everything, ahead
// of them.
func TestReportsOfARolloutWriteTheStatusOnce(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("rolling", 1)
	f, created, progressing := syncedAtCreation(t, robot, robottest.UnavailableNow)
	c := f.newController(ctx)
	queueCreations(c, 3)
	key := cache.MetaObjectToName(robot)

	// The Deployment controller created the ReplicaSet: one replica, not
	// yet available.
	c.owned.Deployments.Handlers().UpdateFunc(created, progressing)
	if !c.processNextWorkItem(ctx) {
		t.Fatal("the queue shut down")
	}
	if writes := robottest.FilterInformerActions(f.robotClient.Actions()); len(writes) != 0 {
		t.Fatalf("%d Robot writes for a rollout's progress, reported ahead of the creations: want none yet", len(writes))
	}
	if n := c.workqueue.Len(); n != 4 {
		t.Fatalf("%d Robots queued, want the 3 creations and the rolling Robot behind them", n)
	}

	// The replica became available.
	available := liveDeployment(t, robot)
	available.ResourceVersion = "8"
	if err := f.deploymentIndexer.Update(available); err != nil {
		t.Fatal(err)
	}
	c.owned.Deployments.Handlers().UpdateFunc(progressing, available)
	if !c.processNextWorkItem(ctx) {
		t.Fatal("the queue shut down")
	}
	writes := robottest.FilterInformerActions(f.robotClient.Actions())
	if len(writes) != 1 {
		t.Fatalf("%d Robot writes once the Deployment is Available, want the status write that says Ready, ahead of the creations", len(writes))
	}
	obj, err := f.robotClient.Tracker().Get(robottest.RobotsResource, robot.Namespace, robot.Name)
	if err != nil {
		t.Fatal(err)
	}
	stored := obj.(*robotv1beta1.Robot)
	if !status.ReadyFor(stored.Status, robot.Generation) || stored.Status.AvailableReplicas != 1 {
		t.Errorf("status written: Ready %v, availableReplicas %d; want Ready=True and 1", meta.FindStatusCondition(stored.Status.Conditions, robotv1beta1.ConditionReady), stored.Status.AvailableReplicas)
	}

	// The creations' turn: the rolling Robot is not queued among them any
	// more, and nothing more is written.
	taken := robottest.DrainQueue(c.workqueue)
	for _, k := range taken {
		if k == key {
			t.Errorf("the rolling Robot is still queued among the creations (%v), for a status already written", taken)
		}
	}
	if writes := robottest.FilterInformerActions(f.robotClient.Actions()); len(writes) != 1 {
		t.Errorf("%d Robot writes in all, want 1: the rollout's progress and its end in one", len(writes))
	}
}

// TestEventDuringTheCreationIsAReport: the Deployment controller may take a
// Deployment the operator just created to Available before the sync that
// created it has written the Robot's status: that event is a report too,
// not a change queued behind the creations.
func TestEventDuringTheCreationIsAReport(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("creating", 1)
	f, created, now := syncedAtCreation(t, robot, func(d *appsv1.Deployment) *appsv1.Deployment { return d })
	robot.Status = robotv1beta1.RobotStatus{} // its first status is yet to be written
	c := f.newController(ctx)
	key := cache.MetaObjectToName(robot)
	queueCreations(c, 3)
	c.workqueue.Add(key)
	for range 4 {
		if taken, _ := c.workqueue.Get(); taken == key {
			break
		}
	}
	untrack := c.workers.Track(key, robottest.FixtureNow) // as processNextWorkItem does
	queueCreations(c, 1000)

	c.owned.Deployments.Handlers().UpdateFunc(created, now)
	untrack()
	c.workqueue.Done(key)

	if taken, _ := c.workqueue.Get(); taken != key {
		t.Errorf("the first Robot taken is %v, want %v: the event during its creation's sync reports what that sync made", taken, key)
	}
}
