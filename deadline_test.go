package main

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/kubernetes"
	typedappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// TestSyncDeadlineFreesTheWorker: a sync whose Deployment apply never gets an
// answer fails at the sync deadline with one error that says so, is retried
// with backoff, and leaves the worker free for the next Robot at once.
func TestSyncDeadlineFreesTheWorker(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	// t.Context is cancelled when the test ends, before its cleanups: a
	// sync left hanging by a failure returns then.
	ctx := klog.NewContext(t.Context(), logger)
	f := newFixture(t)
	stuck, next := newRobot("stuck", 1), newRobot("next", 1)
	f.addRobot(stuck)
	f.addRobot(next)
	c := f.newController(ctx)
	const deadline = 250 * time.Millisecond
	c.syncTimeout = deadline
	applies := &hangingApplies{Interface: f.kubeClient, hang: stuck.Name}
	c.kubeclientset = applies
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
			t.Fatalf("%s: processNextWorkItem still runs %v after it began, though the sync deadline is %v: the hung apply holds the worker", what, turnLimit, deadline)
			return 0
		}
	}

	took := turn("the Robot whose apply hangs")
	t.Logf("the sync of %v returned after %v", stuckKey, took.Round(time.Millisecond))
	if n := applies.hung.Load(); n != 1 {
		t.Fatalf("%d hung applies, want 1: the sync did not get as far as the Deployment apply", n)
	}
	if took < deadline || took > deadline+2*time.Second {
		t.Errorf("the sync whose apply hangs returned after %v, want its deadline, %v, and little more", took, deadline)
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
	var applied []string
	for _, action := range filterInformerActions(f.kubeClient.Actions()) {
		if action.GetVerb() == "patch" {
			applied = append(applied, describe(action))
		}
	}
	if want := "patch deployments default/next"; len(applied) != 1 || applied[0] != want {
		t.Errorf("Deployment writes %q, want [%q]", applied, want)
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

// hangingApplies is a clientset whose apply of the Deployment named hang
// never gets an answer, as when the connection to the API server went dead:
// it returns only once the request's context is done. The fake clientset's
// reactors never see the context, hence this wrapper.
type hangingApplies struct {
	kubernetes.Interface
	hang string
	hung atomic.Int32 // applies that hung
}

func (c *hangingApplies) AppsV1() typedappsv1.AppsV1Interface {
	return hangingApps{c.Interface.AppsV1(), c}
}

type hangingApps struct {
	typedappsv1.AppsV1Interface
	c *hangingApplies
}

func (a hangingApps) Deployments(namespace string) typedappsv1.DeploymentInterface {
	return hangingDeployments{a.AppsV1Interface.Deployments(namespace), a.c}
}

type hangingDeployments struct {
	typedappsv1.DeploymentInterface
	c *hangingApplies
}

func (d hangingDeployments) Apply(ctx context.Context, deployment *appsv1ac.DeploymentApplyConfiguration, opts metav1.ApplyOptions) (*appsv1.Deployment, error) {
	if deployment.Name == nil || *deployment.Name != d.c.hang {
		return d.DeploymentInterface.Apply(ctx, deployment, opts)
	}
	d.c.hung.Add(1)
	// A request sent without a deadline would hang for good: a minute
	// stands for that, so that even then the test ends.
	err := errors.New("no answer within a minute")
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(time.Minute):
	}
	// What client-go returns for a request whose context ended.
	return nil, &url.Error{Op: "Patch", URL: "https://api.example/apis/apps/v1/namespaces/" + *deployment.Namespace + "/deployments/" + d.c.hang, Err: err}
}
