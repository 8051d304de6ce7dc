package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/robottest"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// TestSyncDeadlineFreesTheWorker: a sync whose Deployment write never gets an
// answer fails at the sync deadline with one error that says so, is retried
// with backoff, and leaves the worker free for the next Robot at once.
func TestSyncDeadlineFreesTheWorker(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	// t.Context is cancelled when the test ends, before its cleanups: a
	// sync left hanging by a failure returns then.
	ctx := klog.NewContext(t.Context(), logger)
	f := newFixture(t)
	stuck, next := robottest.NewRobot("stuck", 1), robottest.NewRobot("next", 1)
	f.addRobot(stuck)
	f.addRobot(next)
	c := f.newController(ctx)
	const deadline = 250 * time.Millisecond
	c.syncTimeout = deadline
	var hung atomic.Int32
	writes := hangWrites(f, stuck.Name, &hung)
	f.rewire(c, writes, nil)
	stuckKey, nextKey := cache.MetaObjectToName(stuck), cache.MetaObjectToName(next)
	c.workqueue.Add(stuckKey)
	c.workqueue.Add(nextKey)

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
		worker.Go(func() { c.processNextWorkItem(ctx); close(done) })
		select {
		case <-done:
			return time.Since(start)
		case <-time.After(turnLimit):
			t.Fatalf("%s: processNextWorkItem still runs %v after it began, though the sync deadline is %v: the hung write holds the worker", what, turnLimit, deadline)
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
	if n := c.workqueue.NumRequeues(stuckKey); n != 1 {
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
	if n := c.workqueue.NumRequeues(nextKey); n != 0 {
		t.Errorf("%v was requeued with backoff %d times, want never", nextKey, n)
	}
	var written []string
	for _, action := range filterInformerActions(f.kubeClient.Actions()) {
		if action.GetVerb() == "create" || action.GetVerb() == "patch" {
			written = append(written, describe(action))
		}
	}
	if want := "create deployments default/next"; len(written) != 1 || written[0] != want {
		t.Errorf("Deployment writes %q, want [%q]", written, want)
	}
	// No status write with the expired context of the stuck sync: the
	// next Robot's is the only one.
	var statuses []string
	for _, action := range filterInformerActions(f.robotClient.Actions()) {
		statuses = append(statuses, describe(action))
	}
	if want := "patch robots/status default/next"; len(statuses) != 1 || statuses[0] != want {
		t.Errorf("Robot writes %q, want [%q]", statuses, want)
	}

	// After its backoff the stuck Robot is back in the queue.
	backoff := time.Now().Add(time.Second)
	for c.workqueue.Len() == 0 && time.Now().Before(backoff) {
		time.Sleep(time.Millisecond)
	}
	if n := c.workqueue.Len(); n != 1 {
		t.Fatalf("%d Robots queued a second after the failed sync, want %v again", n, stuckKey)
	}
	if key, _ := c.workqueue.Get(); key != stuckKey {
		t.Errorf("queued %v, want %v again", key, stuckKey)
	}
}

// hangWrites makes the creates and applies of the Deployment named name
// never get an answer, as when the connection to the API server went dead:
// each returns only once the request's context is done. hung counts them.
func hangWrites(f *fixture, name string, hung *atomic.Int32) *interceptedWrites {
	return &interceptedWrites{Interface: f.kubeClient, name: name,
		intercept: func(ctx context.Context, op, address string, _ func() (*appsv1.Deployment, error)) (*appsv1.Deployment, error) {
			hung.Add(1)
			// A request sent without a deadline would hang for good: a
			// minute stands for that, so that even then the test ends.
			err := errors.New("no answer within a minute")
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(time.Minute):
			}
			return nil, contextError(op, address, err)
		}}
}
