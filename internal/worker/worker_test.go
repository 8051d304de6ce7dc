package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/outage"
	"github.com/robot-operator/robot-operator/internal/robottest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// These tests cover, with a sync function of their own, the three ways
// ProcessNextWorkItem puts a Robot back in the queue, the sync deadline,
// and how Run stops. What the Controller's sync does within them is
// controller_test.go's.

// pool is a Pool whose syncs are counted by result.
type pool struct {
	*Pool
	mu      sync.Mutex
	results map[string]int
}

// newPool returns a pool syncing with sync, parking through gate when it is
// not nil, with a one-worker-per-test queue whose first backoff is 5ms.
func newPool(gate *outage.Gate, sync SyncFunc) *pool {
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](5*time.Millisecond, 5*time.Minute),
		workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{})
	p := &pool{results: map[string]int{}}
	p.Pool = New(Options{Queue: queue, Sync: sync, SyncTimeout: 30 * time.Second, Clock: clock.RealClock{},
		Observe: func(result string, _ time.Duration) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.results[result]++
		}})
	if gate != nil {
		// Queued with its back-off forgotten, as the Controller does.
		p.Parked = outage.NewParked(gate, func(key cache.ObjectName) {
			p.Queue.Forget(key)
			p.Queue.Add(key)
		})
	}
	return p
}

// syncCounts returns the syncs counted, by result.
func (p *pool) syncCounts() (success, failed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.results["success"], p.results["error"]
}

// recordQueue makes p's queue record the calls made to it from now on.
func (p *pool) recordQueue() *robottest.RecordingQueue {
	q := &robottest.RecordingQueue{TypedRateLimitingInterface: p.Queue}
	p.Queue = q
	return q
}

// failedOnce puts key through one failed attempt, as a sync error would, and
// waits for its backoff to bring it back: a retry, due now.
func failedOnce(t *testing.T, p *pool, key cache.ObjectName) {
	t.Helper()
	p.Queue.AddRateLimited(key)
	if n := p.Queue.NumRequeues(key); n != 1 {
		t.Fatalf("NumRequeues after one failure = %d, want 1", n)
	}
	robottest.WaitFor(t, fmt.Sprintf("%v to come back after its backoff", key), func() bool { return p.Queue.Len() > 0 })
}

// robot is the key of the Robot named name.
func robot(name string) cache.ObjectName {
	return cache.ObjectName{Namespace: metav1.NamespaceDefault, Name: name}
}

// TestProcessNextWorkItemSuccessForgetsTheBackoff: a sync that succeeds,
// even after failures, resets the Robot's backoff and does not put it back
// in the queue: the next event about it does.
func TestProcessNextWorkItemSuccessForgetsTheBackoff(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	key := robot("test")
	var synced []cache.ObjectName
	p := newPool(nil, func(_ context.Context, key cache.ObjectName) (time.Duration, error) {
		synced = append(synced, key)
		return 0, nil
	})
	failedOnce(t, p, key)
	queue := p.recordQueue()

	if !p.ProcessNextWorkItem(ctx) {
		t.Fatal("ProcessNextWorkItem returned false: the queue is not shut down")
	}
	// The sync ran, once, for the Robot taken.
	if got, want := fmt.Sprint(synced), fmt.Sprint([]cache.ObjectName{key}); got != want {
		t.Fatalf("synced %s, want %s", got, want)
	}
	if got, want := queue.Recorded(), fmt.Sprint([]robottest.QueueCall{{Method: "Forget", Key: key}}); got != want {
		t.Errorf("queue calls %s, want %s: the backoff reset, nothing requeued", got, want)
	}
	if n := p.Queue.NumRequeues(key); n != 0 {
		t.Errorf("NumRequeues = %d after a successful sync, want 0: the next failure would back off from where the last one left off", n)
	}
	if n := p.Queue.Len(); n != 0 {
		t.Errorf("%d Robots queued after a successful sync, want none", n)
	}
	if success, failed := p.syncCounts(); success != 1 || failed != 0 {
		t.Errorf("syncs_total success=%v error=%v, want 1 and 0", success, failed)
	}
}

// downGate returns an outage gate that says the API server is down, and a
// function that brings it back.
func downGate(t *testing.T, ctx context.Context) (*outage.Gate, func()) {
	t.Helper()
	var back atomic.Bool
	gate := outage.New(ctx, func(context.Context) error {
		if back.Load() {
			return nil
		}
		return syscall.ECONNREFUSED
	}, 5*time.Millisecond)
	refused := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, syscall.ECONNREFUSED })
	req, err := http.NewRequest(http.MethodPost, "https://apiserver/apis", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gate.Wrap(refused).RoundTrip(req); err == nil || !gate.Down() {
		t.Fatalf("the gate did not go down on a refused request (%v)", err)
	}
	return gate, func() { back.Store(true) }
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestProcessNextWorkItemWaitsOutAnOutage: a sync that fails while the API
// server is down is not backed off: the Robot waits for the API server, and
// is queued, its backoff forgotten, the moment it answers. A backoff built
// up over an outage would delay the Robot long after the API server is
// back.
func TestProcessNextWorkItemWaitsOutAnOutage(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	gate, bringBack := downGate(t, ctx)
	p, queue, key := failOneSync(t, ctx, gate, fmt.Errorf("Post \"https://apiserver/apis/apps/v1/namespaces/default/deployments\": %w", outage.ErrDown))
	if got := queue.Recorded(); got != "[]" {
		t.Errorf("queue calls %s while the API server is down, want none: the Robot waits for it", got)
	}
	if n := p.Queue.NumRequeues(key); n != 0 {
		t.Errorf("NumRequeues = %d, want 0: an outage is not the Robot's failure", n)
	}
	if n := p.Parked.Len(); n != 1 {
		t.Errorf("%d Robots wait for the API server, want 1", n)
	}
	if success, failed := p.syncCounts(); success != 0 || failed != 1 {
		t.Errorf("syncs_total success=%v error=%v, want 0 and 1", success, failed)
	}

	bringBack()
	robottest.WaitFor(t, fmt.Sprintf("%v to be queued once the API server answers", key), func() bool { return p.Queue.Len() > 0 })
	if got, want := queue.Recorded(), fmt.Sprint([]robottest.QueueCall{{Method: "Forget", Key: key}, {Method: "Add", Key: key}}); got != want {
		t.Errorf("queue calls %s once the API server answers, want %s", got, want)
	}
	if n := p.Parked.Len(); n != 0 {
		t.Errorf("%d Robots still wait for the API server, want none", n)
	}
}

// failOneSync makes a pool, with gate when it is not nil, whose syncs fail
// with err, queues one Robot, records the queue from then on, and runs one
// sync of it.
func failOneSync(t *testing.T, ctx context.Context, gate *outage.Gate, err error) (*pool, *robottest.RecordingQueue, cache.ObjectName) {
	t.Helper()
	p := newPool(gate, func(context.Context, cache.ObjectName) (time.Duration, error) { return 0, err })
	key := robot("test")
	p.Queue.Add(key)
	queue := p.recordQueue()
	if !p.ProcessNextWorkItem(ctx) {
		t.Fatal("ProcessNextWorkItem returned false: the queue is not shut down")
	}
	return p, queue, key
}

// TestProcessNextWorkItemErrorBacksOff: a sync that fails puts the Robot
// back in the queue with backoff, and counts an error; so it does with an
// outage gate whose API server answers.
func TestProcessNextWorkItemErrorBacksOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		gate func(ctx context.Context) *outage.Gate
	}{
		{"no outage gate", func(context.Context) *outage.Gate { return nil }},
		{"an outage gate, the API server up", func(ctx context.Context) *outage.Gate {
			return outage.New(ctx, func(context.Context) error { return nil }, time.Hour)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			p, queue, key := failOneSync(t, ctx, tc.gate(ctx), apierrors.NewInternalError(errors.New("etcd leader changed")))
			if got, want := queue.Recorded(), fmt.Sprint([]robottest.QueueCall{{Method: "AddRateLimited", Key: key}}); got != want {
				t.Errorf("queue calls %s, want %s: a retry with backoff, and the backoff kept", got, want)
			}
			if n := p.Queue.NumRequeues(key); n != 1 {
				t.Errorf("NumRequeues = %d after one failed sync, want 1", n)
			}
			if n := p.Parked.Len(); n != 0 {
				t.Errorf("%d Robots wait for the API server while it answers, want none", n)
			}
			if success, failed := p.syncCounts(); success != 0 || failed != 1 {
				t.Errorf("syncs_total success=%v error=%v, want 0 and 1", success, failed)
			}
			// The first backoff is a few milliseconds: then the Robot is back.
			robottest.WaitFor(t, fmt.Sprintf("%v to come back after its backoff", key), func() bool { return p.Queue.Len() > 0 })
			if keys := robottest.DrainQueue(p.Queue); len(keys) != 1 || keys[0] != key {
				t.Errorf("queued %v after the backoff, want [%v]", keys, key)
			}
		})
	}
}

// TestProcessNextWorkItemRecheckIsDelayedNotBackedOff: a sync that succeeds
// but asks for another look later (its Deployment name is taken by a
// Deployment the operator does not see change) puts the Robot back after
// exactly that delay, and resets its backoff instead of growing it: that is
// not a failure, and it must not end up rechecking every five minutes.
func TestProcessNextWorkItemRecheckIsDelayedNotBackedOff(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	const recheck = 30 * time.Second
	p := newPool(nil, func(context.Context, cache.ObjectName) (time.Duration, error) { return recheck, nil })
	key := robot("test")
	failedOnce(t, p, key)
	queue := p.recordQueue()

	if !p.ProcessNextWorkItem(ctx) {
		t.Fatal("ProcessNextWorkItem returned false: the queue is not shut down")
	}
	want := fmt.Sprint([]robottest.QueueCall{{Method: "Forget", Key: key}, {Method: "AddAfter", Key: key, After: recheck}})
	if got := queue.Recorded(); got != want {
		t.Errorf("queue calls %s, want %s", got, want)
	}
	if n := p.Queue.NumRequeues(key); n != 0 {
		t.Errorf("NumRequeues = %d after a sync that asked for a recheck, want 0", n)
	}
	if n := p.Queue.Len(); n != 0 {
		t.Errorf("%d Robots queued at once, want none until the recheck", n)
	}
	if success, failed := p.syncCounts(); success != 1 || failed != 0 {
		t.Errorf("syncs_total success=%v error=%v, want 1 and 0", success, failed)
	}
}

// heldSync is a sync that holds the Robot named hold until the test lets it
// through, or its context ends; any other Robot it only records.
type heldSync struct {
	hold                string
	entered             chan struct{} // closed once the held sync has begun
	release             chan struct{} // close to let the held sync through
	done                chan error    // the held sync's context's error when it ended
	entering, releasing sync.Once
	mu                  sync.Mutex
	others              []cache.ObjectName
}

func holdSync(hold string) *heldSync {
	return &heldSync{hold: hold, entered: make(chan struct{}), release: make(chan struct{}), done: make(chan error, 1)}
}

func (h *heldSync) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	if key.Name != h.hold {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.others = append(h.others, key)
		return 0, nil
	}
	h.entering.Do(func() { close(h.entered) })
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	h.done <- ctx.Err()
	return 0, ctx.Err()
}

// letThrough lets the held sync through.
func (h *heldSync) letThrough() {
	h.releasing.Do(func() { close(h.release) })
}

// runInBackground runs p.Run with one worker; the channel is closed when it
// returns. The test's cleanup waits for Run to return: a test cancels ctx
// and lets held syncs through in deferred calls, which come first.
func runInBackground(t *testing.T, p *pool, ctx context.Context) <-chan struct{} {
	t.Helper()
	returned := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { p.Run(ctx, 1); close(returned) })
	t.Cleanup(wg.Wait)
	return returned
}

func waitForChannel(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(robottest.Soon):
		t.Fatalf("still waiting, after %v, for %s", robottest.Soon, what)
	}
}

// TestRunDrainsTheSyncInFlight: once Run's context is done, the sync in
// flight finishes, its writes included, and Run returns only after it. The
// Robots still queued are left for the next leader.
func TestRunDrainsTheSyncInFlight(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	held := holdSync("in-flight")
	defer held.letThrough()
	p := newPool(nil, held.sync)
	// Far longer than the test: only the drain may end this shutdown.
	p.ShutdownTimeout = time.Hour
	p.Queue.Add(robot("in-flight"))
	p.Queue.Add(robot("queued"))

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	returned := runInBackground(t, p, runCtx)
	waitForChannel(t, held.entered, "the in-flight Robot's sync to begin")

	stop()
	robottest.WaitFor(t, "Run to shut its queue down", p.Queue.ShuttingDown)
	// The sync is held: Run must wait for it, however long. A short look
	// suffices to catch a Run that does not wait, which returns at once.
	select {
	case <-returned:
		t.Fatal("Run returned while the sync in flight was still held")
	case <-time.After(100 * time.Millisecond):
	}

	held.letThrough()
	waitForChannel(t, returned, "Run to return once the in-flight sync is let through")

	// Run has returned: the sync in flight has ended, with its context live.
	if err := <-held.done; err != nil {
		t.Errorf("the in-flight sync ended with %v, want it let through with its context live", err)
	}
	// Nothing at all about the queued Robot: its sync never started.
	if len(held.others) != 0 {
		t.Errorf("synced %v besides the in-flight Robot, want nothing for the Robot still queued", held.others)
	}
	if success, failed := p.syncCounts(); success != 1 || failed != 0 {
		t.Errorf("syncs_total success=%v error=%v, want 1 and 0: the in-flight sync, and no other", success, failed)
	}
}

// TestRunCancelsTheSyncInFlightAfterTheShutdownTimeout: a sync in flight
// that outlasts the shutdown timeout has its context cancelled, and Run
// returns soon after the timeout instead of waiting for it.
func TestRunCancelsTheSyncInFlightAfterTheShutdownTimeout(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	held := holdSync("stuck")
	defer held.letThrough()
	p := newPool(nil, held.sync)
	const shutdownTimeout = 200 * time.Millisecond
	p.ShutdownTimeout = shutdownTimeout
	// Far longer than the test: only the shutdown may cancel this sync.
	p.SyncTimeout = time.Hour
	p.Queue.Add(robot("stuck"))

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	returned := runInBackground(t, p, runCtx)
	waitForChannel(t, held.entered, "the stuck Robot's sync to begin")

	stop()
	start := time.Now()
	select {
	case <-returned:
	case <-time.After(robottest.Soon):
		t.Fatalf("Run did not return within %v of its context ending, though the shutdown timeout is %v: it waits for a sync that never ends", robottest.Soon, shutdownTimeout)
	}
	t.Logf("Run returned %v after its context ended; the shutdown timeout is %v", time.Since(start).Round(time.Millisecond), shutdownTimeout)

	if err := <-held.done; !errors.Is(err, context.Canceled) {
		t.Errorf("the stuck sync ended with %v, want its context cancelled", err)
	}
	// The sync ends as a failure: the next leader syncs the Robot again.
	if success, failed := p.syncCounts(); success != 0 || failed != 1 {
		t.Errorf("syncs_total success=%v error=%v, want 0 and 1", success, failed)
	}
}

// TestSyncDeadlineFreesTheWorker: a sync whose Deployment write never gets an
// answer fails at the sync deadline with one error that says so, is retried
// with backoff, and leaves the worker free for the next Robot at once.
func TestSyncDeadlineFreesTheWorker(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	// t.Context is cancelled when the test ends, before its cleanups: a
	// sync left hanging by a failure returns then.
	ctx := klog.NewContext(t.Context(), logger)
	stuckKey, nextKey := robot("stuck"), robot("next")
	var hung atomic.Int32
	var nextErr error
	nextSynced := false
	p := newPool(nil, func(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
		if key != stuckKey {
			nextSynced, nextErr = true, ctx.Err()
			return 0, nil
		}
		// A write that never gets an answer, as when the connection to
		// the API server went dead: it returns only once the request's
		// context is done. A minute stands for "never", so that even a
		// sync without a deadline ends the test.
		hung.Add(1)
		err := errors.New("no answer within a minute")
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(time.Minute):
		}
		return 0, &url.Error{Op: "Post", URL: "https://api.example/apis/apps/v1/namespaces/default/deployments", Err: err}
	})
	const deadline = 250 * time.Millisecond
	p.SyncTimeout = deadline
	p.Queue.Add(stuckKey)
	p.Queue.Add(nextKey)

	// One worker: this test, taking one Robot at a time. Each turn is
	// bounded, so that a sync without a deadline fails the test instead of
	// hanging the suite.
	const turnLimit = 10 * time.Second
	var worker sync.WaitGroup
	t.Cleanup(worker.Wait)
	turn := func(what string) time.Duration {
		t.Helper()
		start := time.Now()
		done := make(chan struct{})
		worker.Go(func() { p.ProcessNextWorkItem(ctx); close(done) })
		select {
		case <-done:
			return time.Since(start)
		case <-time.After(turnLimit):
			t.Fatalf("%s: ProcessNextWorkItem still runs %v after it began, though the sync deadline is %v: the hung write holds the worker", what, turnLimit, deadline)
			return 0
		}
	}

	took := turn("the Robot whose write hangs")
	t.Logf("the sync of %v returned after %v", stuckKey, took.Round(time.Millisecond))
	if n := hung.Load(); n != 1 {
		t.Fatalf("%d hung writes, want 1: the sync did not get as far as the Deployment write", n)
	}
	if took < deadline || took > deadline+2*time.Second {
		t.Errorf("the sync whose write hangs returned after %v, want its deadline, %v, and little more", took, deadline)
	}
	if n := p.Queue.NumRequeues(stuckKey); n != 1 {
		t.Errorf("%v was requeued with backoff %d times, want once", stuckKey, n)
	}
	var failures []ktesting.LogEntry
	for _, entry := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if entry.Type == ktesting.LogError {
			failures = append(failures, entry)
		}
	}
	want := "sync of Robot default/stuck did not finish within 250ms"
	switch {
	case len(failures) != 1:
		t.Errorf("%d errors logged, want one: %v", len(failures), failures)
	case failures[0].Err == nil || failures[0].Err.Error() != want:
		t.Errorf("logged error %q, want %q", failures[0].Err, want)
	case !errors.Is(failures[0].Err, context.DeadlineExceeded):
		t.Errorf("the logged error %q does not wrap context.DeadlineExceeded", failures[0].Err)
	}

	// The same worker, free again, syncs the next Robot in full.
	if took := turn("the next Robot"); took >= deadline {
		t.Errorf("the sync of %v took %v, want well under the deadline, %v: nothing of it hangs", nextKey, took, deadline)
	}
	if n := p.Queue.NumRequeues(nextKey); n != 0 {
		t.Errorf("%v was requeued with backoff %d times, want never", nextKey, n)
	}
	if !nextSynced || nextErr != nil {
		t.Errorf("the next Robot synced: %v, its context's error %v; want it synced with a live context", nextSynced, nextErr)
	}

	// After its backoff the stuck Robot is back in the queue.
	backoff := time.Now().Add(time.Second)
	for p.Queue.Len() == 0 && time.Now().Before(backoff) {
		time.Sleep(time.Millisecond)
	}
	if n := p.Queue.Len(); n != 1 {
		t.Fatalf("%d Robots queued a second after the failed sync, want %v again", n, stuckKey)
	}
	if key, _ := p.Queue.Get(); key != stuckKey {
		t.Errorf("queued %v, want %v again", key, stuckKey)
	}
}

// TestLongestSync: the health check's watchdog sees the sync that has run
// the longest, and nothing once it has ended.
func TestLongestSync(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p := newPool(nil, nil)
	p.Clock = clocktesting.NewFakePassiveClock(now)
	if key, took := p.LongestSync(); took != 0 || p.InFlight() != 0 {
		t.Errorf("LongestSync with nothing in flight: %v for %v, want nothing", key, took)
	}
	untrackOld := p.Track(robot("old"), now.Add(-time.Minute))
	untrackNew := p.Track(robot("new"), now.Add(-time.Second))
	if key, took := p.LongestSync(); key != robot("old") || took != time.Minute {
		t.Errorf("LongestSync: %v for %v, want %v for a minute", key, took, robot("old"))
	}
	if !p.Syncing(robot("new")) || p.InFlight() != 2 {
		t.Errorf("Syncing(new) = %v, InFlight = %d; want true and 2", p.Syncing(robot("new")), p.InFlight())
	}
	untrackOld()
	untrackNew()
	if key, took := p.LongestSync(); took != 0 || p.Syncing(robot("new")) || p.InFlight() != 0 {
		t.Errorf("LongestSync after the syncs ended: %v for %v, want nothing", key, took)
	}
}
