package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/writer"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2/ktesting"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// These tests cover, without a cluster, what only the end-to-end tests
// covered before: that the event handlers drop the echo of the operator's
// own writes and nothing else, the three ways processNextWorkItem puts a
// Robot back in the queue, and how Run stops.

// Bounds on waits for something that should happen at once or after a few
// milliseconds. They are generous, so that a loaded machine running the
// tests under -race never fails them; a controller that is actually broken
// misses them by far more, or never gets there at all.
const (
	soon      = 10 * time.Second
	pollEvery = time.Millisecond
)

// drainQueue takes every Robot queued right now, in order, and marks each
// one done. It never blocks: it calls Get only while the queue holds items.
func drainQueue(q workqueue.TypedRateLimitingInterface[cache.ObjectName]) []cache.ObjectName {
	var keys []cache.ObjectName
	for q.Len() > 0 {
		key, shutdown := q.Get()
		if shutdown {
			break
		}
		q.Done(key)
		keys = append(keys, key)
	}
	return keys
}

// waitFor polls cond until it holds, failing the test if it still does not
// after soon.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(soon)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting, after %v, for %s", soon, what)
		}
		time.Sleep(pollEvery)
	}
}

// TestEchoFilterDropsOnlyOwnWrites: an update or add event that brings back
// exactly the object this process last wrote (same UID, same
// resourceVersion) queues nothing, since the sync that wrote it has seen it
// all; any other version queues the Robot. A Deployment update whose
// resourceVersion did not change is a resync and is dropped as well.
func TestEchoFilterDropsOnlyOwnWrites(t *testing.T) {
	// newRobot has generation 1 and resourceVersion 10; its status reports
	// generation 1, so only the echo check decides. The Deployment, as
	// liveDeployment returns it, has resourceVersion 7.
	robotAtVersion := func(robot *robotv1alpha1.Robot, resourceVersion string) *robotv1alpha1.Robot {
		r := robot.DeepCopy()
		r.ResourceVersion = resourceVersion
		return r
	}
	deploymentAtVersion := func(deployment *appsv1.Deployment, resourceVersion string) *appsv1.Deployment {
		d := deployment.DeepCopy()
		d.ResourceVersion = resourceVersion
		return d
	}
	tests := []struct {
		name string
		// event remembers what the operator wrote, if anything, and
		// delivers one event. The informer hands handlers objects of its
		// own, never the ones the operator holds: each is a copy.
		event  func(c *Controller, robot *robotv1alpha1.Robot, deployment *appsv1.Deployment)
		queued bool
	}{{
		name: "updateRobot: the Robot last written",
		event: func(c *Controller, robot *robotv1alpha1.Robot, _ *appsv1.Deployment) {
			c.writtenRobots.Remember(robotAtVersion(robot, "11"))
			c.updateRobot(robot, robotAtVersion(robot, "11"))
		},
	}, {
		name: "updateRobot: a later resourceVersion than the one written",
		event: func(c *Controller, robot *robotv1alpha1.Robot, _ *appsv1.Deployment) {
			c.writtenRobots.Remember(robotAtVersion(robot, "11"))
			c.updateRobot(robotAtVersion(robot, "11"), robotAtVersion(robot, "12"))
		},
		queued: true,
	}, {
		name: "updateRobot: an earlier resourceVersion than the one written",
		event: func(c *Controller, robot *robotv1alpha1.Robot, _ *appsv1.Deployment) {
			c.writtenRobots.Remember(robotAtVersion(robot, "12"))
			c.updateRobot(robot, robotAtVersion(robot, "11"))
		},
		queued: true,
	}, {
		name: "updateRobot: another Robot of the name, at the resourceVersion written",
		event: func(c *Controller, robot *robotv1alpha1.Robot, _ *appsv1.Deployment) {
			c.writtenRobots.Remember(robotAtVersion(robot, "11"))
			recreated := robotAtVersion(robot, "11")
			recreated.UID = "a-recreated-robot"
			c.updateRobot(robot, recreated)
		},
		queued: true,
	}, {
		name: "updateRobot: nothing written",
		event: func(c *Controller, robot *robotv1alpha1.Robot, _ *appsv1.Deployment) {
			c.updateRobot(robot, robotAtVersion(robot, "11"))
		},
		queued: true,
	}, {
		name: "addDeployment: the Deployment last written",
		event: func(c *Controller, _ *robotv1alpha1.Robot, deployment *appsv1.Deployment) {
			c.writtenDeployments.Remember(deploymentAtVersion(deployment, "8"))
			c.addDeployment(deploymentAtVersion(deployment, "8"))
		},
	}, {
		name: "addDeployment: another resourceVersion than the one written",
		event: func(c *Controller, _ *robotv1alpha1.Robot, deployment *appsv1.Deployment) {
			c.writtenDeployments.Remember(deploymentAtVersion(deployment, "8"))
			c.addDeployment(deploymentAtVersion(deployment, "9"))
		},
		queued: true,
	}, {
		name: "addDeployment: another Deployment, at the resourceVersion written",
		event: func(c *Controller, _ *robotv1alpha1.Robot, deployment *appsv1.Deployment) {
			c.writtenDeployments.Remember(deploymentAtVersion(deployment, "8"))
			other := deploymentAtVersion(deployment, "8")
			other.UID = "another-deployment"
			c.addDeployment(other)
		},
		queued: true,
	}, {
		name: "addDeployment: nothing written",
		event: func(c *Controller, _ *robotv1alpha1.Robot, deployment *appsv1.Deployment) {
			c.addDeployment(deployment.DeepCopy())
		},
		queued: true,
	}, {
		name: "updateDeployment: the Deployment last written",
		event: func(c *Controller, _ *robotv1alpha1.Robot, deployment *appsv1.Deployment) {
			c.writtenDeployments.Remember(deploymentAtVersion(deployment, "8"))
			c.updateDeployment(deployment.DeepCopy(), deploymentAtVersion(deployment, "8"))
		},
	}, {
		name: "updateDeployment: another resourceVersion than the one written",
		event: func(c *Controller, _ *robotv1alpha1.Robot, deployment *appsv1.Deployment) {
			c.writtenDeployments.Remember(deploymentAtVersion(deployment, "8"))
			c.updateDeployment(deploymentAtVersion(deployment, "8"), deploymentAtVersion(deployment, "9"))
		},
		queued: true,
	}, {
		name: "updateDeployment: nothing written",
		event: func(c *Controller, _ *robotv1alpha1.Robot, deployment *appsv1.Deployment) {
			c.updateDeployment(deployment.DeepCopy(), deploymentAtVersion(deployment, "8"))
		},
		queued: true,
	}, {
		name: "updateDeployment: a resync, resourceVersion unchanged",
		event: func(c *Controller, _ *robotv1alpha1.Robot, deployment *appsv1.Deployment) {
			c.updateDeployment(deployment.DeepCopy(), deployment.DeepCopy())
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			robot := robottest.NewRobot("test", 1)
			robot.Status.ObservedGeneration = robot.Generation
			deployment := liveDeployment(t, robot)
			f.addRobot(robot)
			f.addDeployment(deployment)
			c := f.newController(ctx)
			if keys := drainQueue(c.workqueue); len(keys) != 0 {
				t.Fatalf("queued before any event: %v", keys)
			}

			tt.event(c, robot.DeepCopy(), deployment.DeepCopy())
			var want []cache.ObjectName
			if tt.queued {
				want = []cache.ObjectName{cache.MetaObjectToName(robot)}
			}
			if got := drainQueue(c.workqueue); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("queued %v, want %v", got, want)
			}
		})
	}
}

// queueCall is one call that processNextWorkItem made to put a Robot back
// in the queue, or to reset its backoff.
type queueCall struct {
	method string // Add, AddAfter, AddRateLimited or Forget
	key    cache.ObjectName
	after  time.Duration // AddAfter only
}

func (c queueCall) String() string {
	if c.method == "AddAfter" {
		return fmt.Sprintf("AddAfter(%v, %v)", c.key, c.after)
	}
	return fmt.Sprintf("%s(%v)", c.method, c.key)
}

// recordingQueue passes everything to the controller's own queue, and
// records the calls that requeue an item or reset its backoff: the queue's
// state alone cannot tell, without waiting, an item added after a delay
// from one not added at all.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[cache.ObjectName]
	mu    sync.Mutex
	calls []queueCall
}

func (q *recordingQueue) record(call queueCall) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, call)
}

func (q *recordingQueue) recorded() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return fmt.Sprint(q.calls)
}

func (q *recordingQueue) Add(key cache.ObjectName) {
	q.record(queueCall{method: "Add", key: key})
	q.TypedRateLimitingInterface.Add(key)
}

func (q *recordingQueue) AddAfter(key cache.ObjectName, after time.Duration) {
	q.record(queueCall{method: "AddAfter", key: key, after: after})
	q.TypedRateLimitingInterface.AddAfter(key, after)
}

func (q *recordingQueue) AddRateLimited(key cache.ObjectName) {
	q.record(queueCall{method: "AddRateLimited", key: key})
	q.TypedRateLimitingInterface.AddRateLimited(key)
}

func (q *recordingQueue) Forget(key cache.ObjectName) {
	q.record(queueCall{method: "Forget", key: key})
	q.TypedRateLimitingInterface.Forget(key)
}

// recordQueue makes c's queue record the calls made to it from now on.
func recordQueue(c *Controller) *recordingQueue {
	q := &recordingQueue{TypedRateLimitingInterface: c.workqueue}
	c.workqueue = q
	return q
}

// failedOnce puts key through one failed attempt, as a sync error would, and
// waits for its backoff to bring it back: a retry, due now.
func failedOnce(t *testing.T, c *Controller, key cache.ObjectName) {
	t.Helper()
	c.workqueue.AddRateLimited(key)
	if n := c.workqueue.NumRequeues(key); n != 1 {
		t.Fatalf("NumRequeues after one failure = %d, want 1", n)
	}
	waitFor(t, fmt.Sprintf("%v to come back after its backoff", key), func() bool { return c.workqueue.Len() > 0 })
}

// syncCounts returns the syncs_total counter, by result.
func syncCounts(c *Controller) (success, failed float64) {
	return testutil.ToFloat64(c.metrics.Syncs.WithLabelValues("success")),
		testutil.ToFloat64(c.metrics.Syncs.WithLabelValues("error"))
}

// TestProcessNextWorkItemSuccessForgetsTheBackoff: a sync that succeeds,
// even after failures, resets the Robot's backoff and does not put it back
// in the queue: the next event about it does.
func TestProcessNextWorkItemSuccessForgetsTheBackoff(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	f.addRobot(robot)
	c := f.newController(ctx)
	key := cache.MetaObjectToName(robot)
	failedOnce(t, c, key)
	queue := recordQueue(c)

	if !c.processNextWorkItem(ctx) {
		t.Fatal("processNextWorkItem returned false: the queue is not shut down")
	}
	// The sync ran in full: it created the Deployment and wrote the status.
	if n := len(filterInformerActions(f.robotClient.Actions())); n != 1 {
		t.Fatalf("%d Robot writes, want the status write of a sync that succeeded", n)
	}
	if got, want := queue.recorded(), fmt.Sprint([]queueCall{{method: "Forget", key: key}}); got != want {
		t.Errorf("queue calls %s, want %s: the backoff reset, nothing requeued", got, want)
	}
	if n := c.workqueue.NumRequeues(key); n != 0 {
		t.Errorf("NumRequeues = %d after a successful sync, want 0: the next failure would back off from where the last one left off", n)
	}
	if n := c.workqueue.Len(); n != 0 {
		t.Errorf("%d Robots queued after a successful sync, want none", n)
	}
	if success, failed := syncCounts(c); success != 1 || failed != 0 {
		t.Errorf("syncs_total success=%v error=%v, want 1 and 0", success, failed)
	}
}

// TestProcessNextWorkItemErrorBacksOff: a sync that fails puts the Robot
// back in the queue with backoff, and counts an error.
func TestProcessNextWorkItemErrorBacksOff(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	f.addRobot(robot)
	c := f.newController(ctx)
	f.kubeClient.PrependReactor("create", "deployments", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd leader changed"))
	})
	key := cache.MetaObjectToName(robot)
	c.workqueue.Add(key)
	queue := recordQueue(c)

	if !c.processNextWorkItem(ctx) {
		t.Fatal("processNextWorkItem returned false: the queue is not shut down")
	}
	if got, want := queue.recorded(), fmt.Sprint([]queueCall{{method: "AddRateLimited", key: key}}); got != want {
		t.Errorf("queue calls %s, want %s: a retry with backoff, and the backoff kept", got, want)
	}
	if n := c.workqueue.NumRequeues(key); n != 1 {
		t.Errorf("NumRequeues = %d after one failed sync, want 1", n)
	}
	if success, failed := syncCounts(c); success != 0 || failed != 1 {
		t.Errorf("syncs_total success=%v error=%v, want 0 and 1", success, failed)
	}
	// The first backoff is a few milliseconds: then the Robot is back.
	waitFor(t, fmt.Sprintf("%v to come back after its backoff", key), func() bool { return c.workqueue.Len() > 0 })
	if keys := drainQueue(c.workqueue); len(keys) != 1 || keys[0] != key {
		t.Errorf("queued %v after the backoff, want [%v]", keys, key)
	}
}

// TestProcessNextWorkItemRecheckIsDelayedNotBackedOff: a sync that succeeds
// but asks for another look later (its Deployment name is taken by a
// Deployment the operator does not see change) puts the Robot back after
// exactly that delay, and resets its backoff instead of growing it: that is
// not a failure, and it must not end up rechecking every five minutes.
func TestProcessNextWorkItemRecheckIsDelayedNotBackedOff(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	f.addRobot(robot)
	// Unlabelled, so outside the cache: only the API server has it.
	f.kubeObjects = append(f.kubeObjects, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: robot.Name, Namespace: robot.Namespace, UID: "foreign"}})
	c := f.newController(ctx)
	key := cache.MetaObjectToName(robot)
	failedOnce(t, c, key)
	queue := recordQueue(c)

	if !c.processNextWorkItem(ctx) {
		t.Fatal("processNextWorkItem returned false: the queue is not shut down")
	}
	want := fmt.Sprint([]queueCall{{method: "Forget", key: key}, {method: "AddAfter", key: key, after: nameTakenRecheck}})
	if got := queue.recorded(); got != want {
		t.Errorf("queue calls %s, want %s", got, want)
	}
	if n := c.workqueue.NumRequeues(key); n != 0 {
		t.Errorf("NumRequeues = %d after a sync that asked for a recheck, want 0", n)
	}
	if n := c.workqueue.Len(); n != 0 {
		t.Errorf("%d Robots queued at once, want none until the recheck", n)
	}
	if success, failed := syncCounts(c); success != 1 || failed != 0 {
		t.Errorf("syncs_total success=%v error=%v, want 1 and 0", success, failed)
	}
}

// TestRunDrainsTheSyncInFlight: once Run's context is done, the sync in
// flight finishes, its writes included, and Run returns only after it. The
// Robots still queued are left for the next leader.
func TestRunDrainsTheSyncInFlight(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	inFlight, queued := robottest.NewRobot("in-flight", 1), robottest.NewRobot("queued", 1)
	f.addRobot(inFlight)
	f.addRobot(queued)
	c := f.newController(ctx)
	// Far longer than the test: only the drain may end this shutdown.
	c.shutdownTimeout = time.Hour
	applies := holdApplies(f, c, inFlight.Name)
	defer applies.letThrough()
	c.workqueue.Add(cache.MetaObjectToName(inFlight))
	c.workqueue.Add(cache.MetaObjectToName(queued))

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	returned := runInBackground(t, c, runCtx)
	waitForChannel(t, applies.entered, "the in-flight Robot's Deployment apply to begin")

	stop()
	waitFor(t, "Run to shut its queue down", c.workqueue.ShuttingDown)
	// The sync is held: Run must wait for it, however long. A short look
	// suffices to catch a Run that does not wait, which returns at once.
	select {
	case err := <-returned:
		select {
		case applyErr := <-applies.done:
			t.Fatalf("Run returned (%v) before the sync in flight was let through: its held apply ended with %v", err, applyErr)
		default:
			t.Fatalf("Run returned (%v) while the sync in flight was still held", err)
		}
	case <-time.After(100 * time.Millisecond):
	}

	applies.letThrough()
	select {
	case err := <-returned:
		if err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(soon):
		t.Fatalf("Run did not return within %v of the in-flight sync being let through", soon)
	}

	// Run has returned: every write it was going to make is made.
	if err := <-applies.done; err != nil {
		t.Errorf("the in-flight Deployment apply ended with %v, want it let through with its context live", err)
	}
	if _, err := f.kubeClient.Tracker().Get(robottest.DeploymentsResource, inFlight.Namespace, inFlight.Name); err != nil {
		t.Errorf("the in-flight sync's Deployment: %v", err)
	}
	var kubeRequests, robotRequests []string
	for _, action := range filterInformerActions(f.kubeClient.Actions()) {
		kubeRequests = append(kubeRequests, describe(action))
	}
	for _, action := range filterInformerActions(f.robotClient.Actions()) {
		robotRequests = append(robotRequests, describe(action))
	}
	// Nothing at all about the queued Robot: its sync never started.
	if got, want := fmt.Sprint(kubeRequests), fmt.Sprint([]string{"create deployments default/in-flight"}); got != want {
		t.Errorf("Deployment requests %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(robotRequests), fmt.Sprint([]string{"patch robots/status default/in-flight"}); got != want {
		t.Errorf("Robot requests %s, want %s: the in-flight sync's status write, and nothing for the Robot still queued", got, want)
	}
	if success, failed := syncCounts(c); success != 1 || failed != 0 {
		t.Errorf("syncs_total success=%v error=%v, want 1 and 0: the in-flight sync, and no other", success, failed)
	}
}

// TestRunCancelsTheSyncInFlightAfterTheShutdownTimeout: a sync in flight
// that outlasts the shutdown timeout has its context cancelled, and Run
// returns soon after the timeout instead of waiting for it.
func TestRunCancelsTheSyncInFlightAfterTheShutdownTimeout(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	stuck := robottest.NewRobot("stuck", 1)
	f.addRobot(stuck)
	c := f.newController(ctx)
	const shutdownTimeout = 200 * time.Millisecond
	c.shutdownTimeout = shutdownTimeout
	// Far longer than the test: only the shutdown may cancel this sync.
	c.syncTimeout = time.Hour
	applies := holdApplies(f, c, stuck.Name)
	defer applies.letThrough()
	c.workqueue.Add(cache.MetaObjectToName(stuck))

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	returned := runInBackground(t, c, runCtx)
	waitForChannel(t, applies.entered, "the stuck Robot's Deployment apply to begin")

	stop()
	start := time.Now()
	select {
	case err := <-returned:
		if err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(soon):
		t.Fatalf("Run did not return within %v of its context ending, though the shutdown timeout is %v: it waits for a sync that never ends", soon, shutdownTimeout)
	}
	t.Logf("Run returned %v after its context ended; the shutdown timeout is %v", time.Since(start).Round(time.Millisecond), shutdownTimeout)

	if err := <-applies.done; !errors.Is(err, context.Canceled) {
		t.Errorf("the stuck Deployment apply ended with %v, want its context cancelled", err)
	}
	if _, err := f.kubeClient.Tracker().Get(robottest.DeploymentsResource, stuck.Namespace, stuck.Name); !apierrors.IsNotFound(err) {
		t.Errorf("the cancelled apply wrote the Deployment all the same (%v)", err)
	}
	// The sync ends as a failure, without a status write: the next leader
	// syncs the Robot again.
	if actions := filterInformerActions(f.robotClient.Actions()); len(actions) != 0 {
		t.Errorf("Robot writes %v after the sync was cancelled, want none", actions)
	}
	if success, failed := syncCounts(c); success != 0 || failed != 1 {
		t.Errorf("syncs_total success=%v error=%v, want 0 and 1", success, failed)
	}
}

// runInBackground runs c.Run with one worker; the channel receives what it
// returns. The test's cleanup waits for Run to return: a test cancels ctx
// and lets held applies through in deferred calls, which come first.
func runInBackground(t *testing.T, c *Controller, ctx context.Context) <-chan error {
	t.Helper()
	returned := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { returned <- c.Run(ctx, 1) })
	t.Cleanup(wg.Wait)
	return returned
}

func waitForChannel(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(soon):
		t.Fatalf("still waiting, after %v, for %s", soon, what)
	}
}

// heldApplies holds the create or apply of the Deployment named hold until
// the test lets it through (then it is made) or its context ends.
type heldApplies struct {
	entered             chan struct{} // closed once the held write has begun
	release             chan struct{} // close to let the held write through
	done                chan error    // what the held write returned
	entering, releasing sync.Once
}

// holdApplies makes c's creates and applies of the Deployment named hold
// wait until letThrough. A test defers letThrough, so that a Run stuck on
// the held write after a failure still returns.
func holdApplies(f *fixture, c *Controller, hold string) *heldApplies {
	h := &heldApplies{
		entered: make(chan struct{}),
		release: make(chan struct{}),
		done:    make(chan error, 1),
	}
	f.rewire(c, &interceptedWrites{Interface: f.kubeClient, name: hold,
		intercept: func(ctx context.Context, op, address string, write func() (*appsv1.Deployment, error)) (*appsv1.Deployment, error) {
			h.entering.Do(func() { close(h.entered) })
			select {
			case <-h.release:
				// Let through: made as the API server would, unless the
				// context ended meanwhile.
				if err := ctx.Err(); err != nil {
					h.finished(err)
					return nil, err
				}
				written, err := write()
				h.finished(err)
				return written, err
			case <-ctx.Done():
				h.finished(ctx.Err())
				return nil, contextError(op, address, ctx.Err())
			}
		}}, nil)
	return h
}

// letThrough lets the held write, and any later one, through.
func (c *heldApplies) letThrough() {
	c.releasing.Do(func() { close(c.release) })
}

// finished reports what the held write returned, once: a retry of it is
// not waited for.
func (c *heldApplies) finished(err error) {
	select {
	case c.done <- err:
	default:
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
	c.shutdownTimeout = time.Hour

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
	applies := holdApplies(f, c, robot.Name)
	defer applies.letThrough()
	c.workqueue.Add(cache.MetaObjectToName(robot))

	returned := runInBackground(t, c, ctx)
	waitForChannel(t, applies.entered, "the Deployment create to begin")
	cancel()
	waitFor(t, "Run to shut its queue down", c.workqueue.ShuttingDown)
	applies.letThrough()
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
	// Time for a write that Run left behind to show.
	time.Sleep(time.Second)

	mu.Lock()
	defer mu.Unlock()
	if got, want := fmt.Sprint(reasons), fmt.Sprint([]string{writer.EventDeploymentCreated}); got != want {
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
