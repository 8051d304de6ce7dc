package owned

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// fightFixture is robot, converged, with its Deployment in the cache, and
// the means to play another writer: store puts a changed Deployment in the
// cache, under a new resourceVersion, and current reads it back.
type fightFixture struct {
	*policyFixture
	t               *testing.T
	deployment      *appsv1.Deployment
	resourceVersion int
	// warnings are those the Controller would have recorded.
	warnings []string
}

func newFightFixture(t *testing.T, robot *robotv1beta1.Robot) *fightFixture {
	deployment := liveDeployment(t, robot)
	converged(robot, Objects{Deployment: deployment})
	f := &fightFixture{policyFixture: newPolicyFixture(t, robot), t: t, deployment: deployment, resourceVersion: 100}
	f.add(t, deployment)
	return f
}

func (f *fightFixture) store(d *appsv1.Deployment) *appsv1.Deployment {
	d = d.DeepCopy()
	f.resourceVersion++
	d.ResourceVersion = strconv.Itoa(f.resourceVersion)
	if err := f.deployments.Update(d); err != nil {
		f.t.Fatal(err)
	}
	return d
}

func (f *fightFixture) current() *appsv1.Deployment {
	obj, _, err := f.deployments.GetByKey(f.deployment.Namespace + "/" + f.deployment.Name)
	if err != nil || obj == nil {
		f.t.Fatalf("the Deployment is not in the cache: %v", err)
	}
	return obj.(*appsv1.Deployment)
}

// sync syncs robot's paths as the Controller does: the status is written
// when it changes, with the Warning of a condition that needs a person. It
// returns when to look again, as the sync handler asks the queue.
func (f *fightFixture) sync(ctx context.Context, paths *Paths, robot *robotv1beta1.Robot) (recheck time.Duration, statusWritten bool) {
	f.t.Helper()
	objects, err := paths.Sync(ctx, robot)
	var contested *outcome.ContestedError
	if err != nil && !errors.As(err, &contested) {
		f.t.Fatalf("sync at %v: %v", f.clock.Since(robottest.FixtureNow), err)
	}
	written := f.statusOf(robot, objects, err)
	if !apiequality.Semantic.DeepEqual(written, robot.Status) {
		f.warnings = append(f.warnings, warned(robot.Status, written)...)
		robot.Status, statusWritten = written, true
	}
	if contested != nil {
		return contested.Recheck, statusWritten
	}
	return 0, statusWritten
}

// TestFightWithAnotherWriter: another writer sets spec.replicas back every
// second for two minutes. The operator keeps reverting, but a few times a
// minute at most; the Robot says who it fights with, with one Warning; and
// once the writer stops, the Robot returns to Synced by itself.
func TestFightWithAnotherWriter(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 2)
	f := newFightFixture(t, robot)
	paths := f.paths(t, policy.Policy{})
	clock := f.clock
	store := func(d *appsv1.Deployment) *appsv1.Deployment {
		d = d.DeepCopy()
		d.Generation++
		// The Deployment controller observes it at once.
		d.Status.ObservedGeneration = d.Generation
		return f.store(d)
	}
	var applies, gets []time.Time
	f.kube.PrependReactor("patch", "deployments", func(core.Action) (bool, runtime.Object, error) {
		applies = append(applies, clock.Now())
		d := f.current().DeepCopy()
		d.Spec.Replicas = ptr.To[int32](2)
		return true, store(d), nil
	})
	f.kube.PrependReactor("get", "deployments", func(core.Action) (bool, runtime.Object, error) {
		gets = append(gets, clock.Now())
		d := f.current().DeepCopy()
		d.ManagedFields = []metav1.ManagedFieldsEntry{
			{Manager: workload.FieldManager, Operation: metav1.ManagedFieldsOperationApply, Time: &metav1.Time{Time: robottest.FixtureNow}},
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &metav1.Time{Time: clock.Now()}},
			{Manager: "fighter", Operation: metav1.ManagedFieldsOperationUpdate, Time: &metav1.Time{Time: clock.Now().Add(-time.Second)}},
		}
		return true, d, nil
	})

	statusWrites := 0
	sync := func() time.Duration {
		t.Helper()
		after, written := f.sync(ctx, paths, robot)
		if written {
			statusWrites++
		}
		return after
	}
	synced := func() *metav1.Condition {
		return meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced)
	}
	var events []string
	drain := func() { events = append(events, f.events()...) }

	// The fight: every second the other writer scales the Deployment, and
	// its update event syncs the Robot.
	const fight = 2 * time.Minute
	var recheck time.Time
	for elapsed := time.Duration(0); elapsed < fight; elapsed += time.Second {
		clock.SetTime(robottest.FixtureNow.Add(elapsed))
		d := f.current().DeepCopy()
		d.Spec.Replicas = ptr.To[int32](5)
		store(d)
		if after := sync(); after > 0 {
			recheck = clock.Now().Add(after)
		}
		drain()
	}
	t.Logf("%d reverts in %v of a writer every second, at %v", len(applies), fight, offsets(applies))
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
	if cond.Status != metav1.ConditionFalse || cond.Reason != robotv1beta1.ReasonDeploymentContested ||
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
		drain()
	}
	if !recheck.IsZero() {
		t.Fatalf("still rechecking after the fight, at %v", clock.Since(robottest.FixtureNow))
	}
	if got := len(applies) - during; got != 1 {
		t.Errorf("%d reverts after the writer stopped, want 1", got)
	}
	if got := f.current().Spec.Replicas; *got != 2 {
		t.Errorf("replicas %d after the fight, want 2", *got)
	}
	if cond := synced(); cond.Status != metav1.ConditionTrue {
		t.Errorf("Synced after the fight: %+v, want True", cond)
	}
	t.Logf("Synced again %v after the writer stopped", clock.Since(robottest.FixtureNow.Add(fight)))

	warnings := f.warnings
	for _, e := range events {
		if strings.HasPrefix(e, corev1.EventTypeWarning) {
			warnings = append(warnings, e)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], robotv1beta1.ReasonDeploymentContested) || !strings.Contains(warnings[0], "fighter") {
		t.Errorf("warnings: %q, want one %s naming the writer", warnings, robotv1beta1.ReasonDeploymentContested)
	}
}

// offsets describes times as offsets from robottest.FixtureNow.
func offsets(times []time.Time) []time.Duration {
	out := make([]time.Duration, len(times))
	for i, at := range times {
		out[i] = at.Sub(robottest.FixtureNow)
	}
	return out
}

// TestForeignSpecHashEditIsAFight: another writer keeps setting the spec-hash
// annotation. The Robot did not change, so each revert is a revert like any
// other, and the fight back-off holds them to a few a minute.
func TestForeignSpecHashEditIsAFight(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 2)
	f := newFightFixture(t, robot)
	paths := f.paths(t, policy.Policy{})
	clock := f.clock
	want := f.deployment.Annotations[workload.AnnotationSpecHash]

	var applies []time.Time
	f.kube.PrependReactor("patch", "deployments", func(core.Action) (bool, runtime.Object, error) {
		applies = append(applies, clock.Now())
		d := f.current().DeepCopy()
		d.Annotations[workload.AnnotationSpecHash] = want
		return true, f.store(d), nil
	})
	f.kube.PrependReactor("get", "deployments", func(core.Action) (bool, runtime.Object, error) {
		return true, f.current().DeepCopy(), nil
	})

	// The operator has seen its Deployment as the Robot asks once.
	f.sync(ctx, paths, robot)
	const fight = 2 * time.Minute
	for elapsed := time.Duration(0); elapsed < fight; elapsed += time.Second {
		clock.SetTime(robottest.FixtureNow.Add(elapsed))
		d := f.current().DeepCopy()
		d.Annotations[workload.AnnotationSpecHash] = fmt.Sprintf("foreign-%d", elapsed/time.Second)
		f.store(d)
		f.sync(ctx, paths, robot)
		f.events()
	}
	t.Logf("%d reverts in %v of a writer every second, at %v", len(applies), fight, offsets(applies))
	if len(applies) > 6 {
		t.Errorf("%d reverts during the fight, want at most 6", len(applies))
	}
	if cond := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced); cond.Reason != robotv1beta1.ReasonDeploymentContested {
		t.Errorf("Synced during the fight: %+v; want %s", cond, robotv1beta1.ReasonDeploymentContested)
	}
}
