package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// TestFightWithAnotherWriter: another writer sets spec.replicas back every
// second for two minutes. The operator keeps reverting, but a few times a
// minute at most; the Robot says who it fights with, with one Warning; and
// once the writer stops, the Robot returns to Synced by itself.
func TestFightWithAnotherWriter(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	converged(robot, deployment)
	f.addRobot(robot)
	f.addDeployment(deployment)
	c := f.newController(ctx)
	clock := clocktesting.NewFakeClock(robottest.FixtureNow)
	c.clock = clock
	f.recorder = record.NewFakeRecorder(100)
	f.rewire(c, nil, f.recorder)

	resourceVersion := 100
	store := func(d *appsv1.Deployment) *appsv1.Deployment {
		d = d.DeepCopy()
		resourceVersion++
		d.ResourceVersion = strconv.Itoa(resourceVersion)
		d.Generation++
		// The Deployment controller observes it at once.
		d.Status.ObservedGeneration = d.Generation
		if err := f.deploymentIndexer.Update(d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	current := func() *appsv1.Deployment {
		obj, _, err := f.deploymentIndexer.GetByKey(deployment.Namespace + "/" + deployment.Name)
		if err != nil || obj == nil {
			t.Fatalf("the Deployment is not in the cache: %v", err)
		}
		return obj.(*appsv1.Deployment)
	}
	var applies, gets []time.Time
	f.kubeClient.PrependReactor("patch", "deployments", func(core.Action) (bool, runtime.Object, error) {
		applies = append(applies, clock.Now())
		d := current().DeepCopy()
		d.Spec.Replicas = ptr.To[int32](2)
		return true, store(d), nil
	})
	f.kubeClient.PrependReactor("get", "deployments", func(core.Action) (bool, runtime.Object, error) {
		gets = append(gets, clock.Now())
		d := current().DeepCopy()
		d.ManagedFields = []metav1.ManagedFieldsEntry{
			{Manager: workload.FieldManager, Operation: metav1.ManagedFieldsOperationApply, Time: &metav1.Time{Time: robottest.FixtureNow}},
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &metav1.Time{Time: clock.Now()}},
			{Manager: "fighter", Operation: metav1.ManagedFieldsOperationUpdate, Time: &metav1.Time{Time: clock.Now().Add(-time.Second)}},
		}
		return true, d, nil
	})

	key := cache.MetaObjectToName(robot)
	sync := func() time.Duration {
		t.Helper()
		requeueAfter, err := c.syncHandler(ctx, key)
		if err != nil {
			t.Fatalf("sync at %v: %v", clock.Since(robottest.FixtureNow), err)
		}
		return requeueAfter
	}
	synced := func() metav1.Condition {
		return robottest.FindCondition(c.writtenRobots.Freshest(robot).Status, robotv1alpha1.ConditionSynced)
	}

	// The fight: every second the other writer scales the Deployment, and
	// its update event syncs the Robot.
	const fight = 2 * time.Minute
	var recheck time.Time
	for elapsed := time.Duration(0); elapsed < fight; elapsed += time.Second {
		clock.SetTime(robottest.FixtureNow.Add(elapsed))
		d := current().DeepCopy()
		d.Spec.Replicas = ptr.To[int32](5)
		store(d)
		if after := sync(); after > 0 {
			recheck = clock.Now().Add(after)
		}
	}
	t.Logf("%d reverts in %v of a writer every second, at %v", len(applies), fight, offsets(applies))
	statusWrites := len(filterInformerActions(f.robotClient.Actions()))
	t.Logf("%d status writes", statusWrites)
	// Each revert scales the Deployment back, and the writer scales it
	// again: Ready truly changes twice, and the fight starting once.
	if statusWrites > 2*len(applies)+1 {
		t.Errorf("%d status writes during the fight, want at most %d", statusWrites, 2*len(applies)+1)
	}
	// 3 to find the fight, then after 15 s, 30 s and 60 s.
	if len(applies) > 6 {
		t.Errorf("%d reverts during the fight, want at most 6", len(applies))
	}
	if len(gets) != 1 {
		t.Errorf("%d reads of the Deployment, want 1 (to name the other writer)", len(gets))
	}
	cond := synced()
	if cond.Status != metav1.ConditionFalse || cond.Reason != robotv1alpha1.ReasonDeploymentContested ||
		!strings.Contains(cond.Message, `field manager "fighter"`) || !strings.Contains(cond.Message, "spec.replicas is 5") {
		t.Errorf("Synced during the fight: %+v; want DeploymentContested naming the writer and the field", cond)
	}

	// The writer stops: the pending revert is made when it is due, and once
	// it has held, the Robot is Synced again. Only the rechecks the sync
	// handler asked for run, as the queue would run them.
	during := len(applies)
	for i := 0; i < 5 && !recheck.IsZero(); i++ {
		clock.SetTime(recheck)
		recheck = time.Time{}
		if after := sync(); after > 0 {
			recheck = clock.Now().Add(after)
		}
	}
	if !recheck.IsZero() {
		t.Fatalf("still rechecking after the fight, at %v", clock.Since(robottest.FixtureNow))
	}
	if got := len(applies) - during; got != 1 {
		t.Errorf("%d reverts after the writer stopped, want 1", got)
	}
	if got := current().Spec.Replicas; *got != 2 {
		t.Errorf("replicas %d after the fight, want 2", *got)
	}
	if cond := synced(); cond.Status != metav1.ConditionTrue {
		t.Errorf("Synced after the fight: %+v, want True", cond)
	}
	t.Logf("Synced again %v after the writer stopped", clock.Since(robottest.FixtureNow.Add(fight)))

	var warnings []string
	for _, e := range f.events() {
		if strings.HasPrefix(e, corev1.EventTypeWarning) {
			warnings = append(warnings, e)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], robotv1alpha1.ReasonDeploymentContested) || !strings.Contains(warnings[0], "fighter") {
		t.Errorf("warnings: %q, want one %s naming the writer", warnings, robotv1alpha1.ReasonDeploymentContested)
	}
}

// offsets describes times as offsets from fixtureNow.
func offsets(times []time.Time) []time.Duration {
	out := make([]time.Duration, len(times))
	for i, at := range times {
		out[i] = at.Sub(robottest.FixtureNow)
	}
	return out
}
