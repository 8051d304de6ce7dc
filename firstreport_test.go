package main

import (
	"context"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/status"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// stampCreations makes f's API server set each Deployment's
// creationTimestamp at create, to now, as a real one does.
func (f *fixture) stampCreations(now time.Time) {
	f.kubeClient.PrependReactor("create", "deployments", func(action core.Action) (bool, runtime.Object, error) {
		action.(core.CreateAction).GetObject().(*appsv1.Deployment).CreationTimestamp = metav1.NewTime(now)
		return false, nil, nil
	})
}

// TestNewRobotsFirstReportWaitsForItsRollout: the sync that creates a new
// Robot's Deployment writes no status while the rollout is under way with
// nothing wrong, and syncs the Robot again within status.FirstReportDelay;
// an event of the Deployment meanwhile is a report, taken ahead of the
// changes. At the end of the wait, a rollout still under way is told.
func TestNewRobotsFirstReportWaitsForItsRollout(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 2)
	f.addRobot(robot)
	c := f.newController(ctx)
	f.stampCreations(robottest.FixtureNow.Truncate(time.Second))
	key := cache.MetaObjectToName(robot)
	if _, err := c.syncHandler(ctx, key); err != nil {
		t.Fatal(err)
	}
	for _, write := range robottest.FilterInformerActions(f.robotClient.Actions()) {
		t.Fatalf("the sync that created the Deployment sent %s %s/%s; want no status while the rollout is under way",
			write.GetVerb(), write.GetResource().Resource, write.GetSubresource())
	}
	created, err := f.kubeClient.AppsV1().Deployments(robot.Namespace).Get(ctx, robot.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Deployment was not created: %v", err)
	}
	waitForQueued(ctx, t, c, status.FirstReportDelay+5*time.Second)

	// The Deployment's progress, before the Robot has a status: a report.
	reporter := newFixture(t).newController(ctx)
	reporter.enqueueReport(robot)
	if changes, reports := reporter.lanes.Lens(); changes != 0 || reports != 1 {
		t.Errorf("an event of a new Robot's Deployment: %d changes, %d reports queued; want it among the reports", changes, reports)
	}

	// At the end of the wait, still rolling out: told.
	again := newFixture(t)
	again.add(robot, created)
	c = again.newController(ctx)
	c.clock = clocktesting.NewFakePassiveClock(created.CreationTimestamp.Add(status.FirstReportDelay))
	if _, err := c.syncHandler(ctx, key); err != nil {
		t.Fatal(err)
	}
	written := again.onlyStatusWrite()
	ready := meta.FindStatusCondition(written.Status.Conditions, robotv1beta1.ConditionReady)
	if ready == nil || ready.Reason != robotv1beta1.ReasonRolloutInProgress || written.Status.ObservedGeneration != robot.Generation {
		t.Errorf("the first report at the end of the wait: Ready %v, observedGeneration %d; want RolloutInProgress for generation %d", ready, written.Status.ObservedGeneration, robot.Generation)
	}
}

// TestNewRobotsFirstReportSaysReadyInOneWrite: a new Robot whose Deployment
// is Available within the wait gets one status write, Ready.
func TestNewRobotsFirstReportSaysReadyInOneWrite(t *testing.T) {
	f, ctx := newTestFixture(t)
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	deployment.CreationTimestamp = metav1.NewTime(robottest.FixtureNow.Add(-time.Second))
	f.add(robot, deployment)
	f.syncWritesReady(ctx, robot)
}

// syncWritesReady syncs robot with a controller of f's and returns the
// sync's one status write, which must say Ready.
func (f *fixture) syncWritesReady(ctx context.Context, robot *robotv1beta1.Robot) robotv1beta1.Robot {
	f.t.Helper()
	c := f.newController(ctx)
	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
		f.t.Fatal(err)
	}
	written := f.onlyStatusWrite()
	if ready := meta.FindStatusCondition(written.Status.Conditions, robotv1beta1.ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue {
		f.t.Fatalf("Ready %v, want True", ready)
	}
	return written
}

// waitForQueued waits until c's queue holds an item, or fails after
// timeout.
func waitForQueued(ctx context.Context, t *testing.T, c *Controller, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for c.workqueue.Len() == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("the Robot was not queued again within %v", timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
