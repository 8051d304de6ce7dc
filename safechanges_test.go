package main

// The root's tests of what keeps a change safe: the observe-only sync and
// the change that waits its turn for the check before it.

import (
	"fmt"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/observe"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// TestObserveOnlySyncWritesNothing: with Options.Observe, a sync sends no
// request and records no Event, whatever it would write (a new Robot's
// Deployment, a changed image, a status), and the report names what it
// would have written, per Robot; a converged Robot is counted unchanged.
func TestObserveOnlySyncWritesNothing(t *testing.T) {
	f, ctx := newTestFixture(t)
	fresh := robottest.NewRobot("fresh", 1)
	f.addRobot(fresh)
	changed := robottest.NewRobot("changed", 2)
	deployment := liveDeployment(t, changed)
	converged(changed, deployment)
	changed.Spec.Image = "nginx:next"
	changed.Generation++
	f.add(changed, deployment)
	same := robottest.NewRobot("same", 2)
	sameDeployment := liveDeployment(t, same)
	sameDeployment.Name, sameDeployment.UID = "same", "uid-same"
	converged(same, sameDeployment)
	f.add(same, sameDeployment)
	report := observe.NewReport(klog.FromContext(ctx))
	f.options = func(o *Options) { o.Observe = report }

	c := f.newController(ctx)
	for _, robot := range []*robotv1beta1.Robot{fresh, changed, same} {
		if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
			t.Fatalf("syncing %s: %v", robot.Name, err)
		}
	}
	robottest.CheckActions(t, "robot", nil, robottest.FilterInformerActions(f.robotClient.Actions()))
	robottest.CheckActions(t, "kube", nil, robottest.FilterInformerActions(f.kubeClient.Actions()))
	f.expectEvents()

	s := report.Summary()
	if s.Checked != 3 || s.Changing != 2 || s.Rolling != 1 {
		t.Errorf("summary: %d checked, %d changing, %d rolling; want 3, 2, 1", s.Checked, s.Changing, s.Rolling)
	}
	var got []string
	for _, robot := range s.Robots {
		for _, change := range robot.Changes {
			got = append(got, robot.Robot.Name+": "+change.Action+" "+change.Kind+" rolls="+fmt.Sprint(change.PodTemplate != ""))
		}
	}
	want := []string{"changed: update Deployment rolls=true", "fresh: create Deployment rolls=false"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("changes: %q, want %q", got, want)
	}
}

// TestChangeWaitingForItsCheckWritesNothing: a Robot whose changed template
// waits for its turn of the check's rate limit holds no worker and writes
// nothing, its status included: it is queued again when its turn is due,
// and its sync is no failure.
func TestChangeWaitingForItsCheckWritesNothing(t *testing.T) {
	f, ctx := newTestFixture(t)
	checks := k8sfake.NewClientset()
	var robots []*robotv1beta1.Robot
	for _, name := range []string{"first", "second"} {
		robot := robottest.NewRobot(name, 2)
		robot.UID = types.UID(name + "-uid")
		deployment := liveDeployment(t, robot)
		converged(robot, deployment)
		robot.Spec.Image = "registry.example/robot:2.0"
		robot.Generation++
		f.add(robot, deployment)
		robots = append(robots, robot)
	}
	// One check in a burst, then one every two seconds.
	f.options = func(opts *Options) {
		opts.Policy.Preflight = policy.Preflight{Enabled: true, QPS: 0.5, Burst: 1}
		opts.Owned.PreflightClient = checks
	}
	c := f.newController(ctx)
	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robots[0])); err != nil {
		t.Fatal(err)
	}
	if len(robottest.FilterInformerActions(f.kubeClient.Actions())) == 0 {
		t.Fatal("the first Robot's change, checked within the burst, was not written")
	}
	f.kubeClient.ClearActions()
	f.robotClient.ClearActions()
	checks.ClearActions()

	start := time.Now()
	requeueAfter, err := c.syncHandler(ctx, cache.MetaObjectToName(robots[1]))
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("the sync waited %v for the check's token", took)
	}
	if err != nil {
		t.Fatalf("sync: %v, want no failure to back off from", err)
	}
	if requeueAfter <= 0 || requeueAfter > 2*time.Second {
		t.Errorf("queued again after %v, want when its token is due, within 2s", requeueAfter)
	}
	for name, actions := range map[string][]core.Action{"kube": f.kubeClient.Actions(), "robot": f.robotClient.Actions(), "check": checks.Actions()} {
		for _, action := range robottest.FilterInformerActions(actions) {
			t.Errorf("%s request while the change waits for its check: %s %s %s", name, action.GetVerb(), action.GetResource().Resource, action.GetSubresource())
		}
	}
}
