package owned

import (
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

func TestDeploymentEventsEnqueueTheirRobotByUID(t *testing.T) {
	robot := robottest.NewRobot("test", 1)
	f := newPolicyFixture(t, robot)
	deployments := f.paths(t, policy.Policy{}).Deployments
	drain := func() []cache.ObjectName {
		keys := f.queued
		f.queued = nil
		return keys
	}

	ours := liveDeployment(t, robot)
	deployments.EnqueueController(ours)
	if keys := drain(); len(keys) != 1 || keys[0] != cache.MetaObjectToName(robot) {
		t.Errorf("a Deployment the Robot controls: queued %v, want [%v]", keys, cache.MetaObjectToName(robot))
	}
	deployments.EnqueueController(cache.DeletedFinalStateUnknown{Key: "default/test", Obj: ours})
	if keys := drain(); len(keys) != 1 {
		t.Errorf("a tombstone: queued %v, want the Robot", keys)
	}

	// The Deployment of an earlier Robot of the same name: its deletion
	// frees the name, so it concerns the Robot that has the name now.
	earlier := ours.DeepCopy()
	earlier.OwnerReferences[0].UID = "an-earlier-robot"
	deployments.Handlers().DeleteFunc(cache.DeletedFinalStateUnknown{Key: "default/test", Obj: earlier})
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
		deployments.EnqueueController(d)
		if keys := drain(); len(keys) != 0 {
			t.Errorf("%s: queued %v, want nothing", name, keys)
		}
	}
}

// TestEarlierRobotsDeploymentIsWaitedFor: a Robot deleted and created again
// under the same name finds the first one's Deployment until the garbage
// collector has deleted it. That is no one else's Deployment in the way: no
// warning, and the Robot says what it waits for.
func TestEarlierRobotsDeploymentIsWaitedFor(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 1)
	deployment := liveDeployment(t, robot)
	deployment.OwnerReferences[0].UID = "an-earlier-robot"
	f := newPolicyFixture(t, robot)
	f.add(t, deployment)

	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	f.check(t)
	applied := f.statusOf(robot, objects, err)
	if events := append(f.events(), warned(robot.Status, applied)...); len(events) != 0 {
		t.Errorf("events %q, want none", events)
	}
	ready := meta.FindStatusCondition(applied.Conditions, robotv1beta1.ConditionReady)
	if ready.Reason != robotv1beta1.ReasonRolloutInProgress || !strings.Contains(ready.Message, "earlier Robot") {
		t.Errorf("Ready %s %q, want %s saying it waits for the earlier Robot's Deployment to go", ready.Reason, ready.Message, robotv1beta1.ReasonRolloutInProgress)
	}
	if apiequality.Semantic.DeepEqual(applied, robot.Status) {
		t.Error("no status to write, want the wait reported")
	}
}
