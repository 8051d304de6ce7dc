package main

import (
	"fmt"
	"testing"

	"github.com/robot-operator/robot-operator/internal/podcache"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/status"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
)

// createdDeployment is deployment as the operator's create left it: not yet
// observed by the Deployment controller, no status.
func createdDeployment(deployment *appsv1.Deployment) *appsv1.Deployment {
	created := deployment.DeepCopy()
	created.ResourceVersion = "5"
	created.Status = appsv1.DeploymentStatus{}
	return created
}

// syncedAtCreation is a fixture holding robot as its creation's sync left
// it (its Deployment created, Synced for its generation, not Ready), and
// its Deployment as live is now, which the Deployment's update event has
// yet to report.
func syncedAtCreation(t *testing.T, robot *robotv1beta1.Robot, live func(*appsv1.Deployment) *appsv1.Deployment) (*fixture, *appsv1.Deployment, *appsv1.Deployment) {
	t.Helper()
	f := newFixture(t)
	available := liveDeployment(t, robot)
	created := createdDeployment(available)
	robot.Status = status.Compute(robot, created, nil, nil, metav1.NewTime(robottest.FixtureNow))
	if !status.SyncedFor(robot.Status, robot.Generation) || status.ReadyFor(robot.Status, robot.Generation) {
		t.Fatalf("the fixture's Robot should be Synced and not Ready: %v", robot.Status.Conditions)
	}
	now := live(available)
	f.addRobot(robot)
	f.addDeployment(now)
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

	var taken []cache.ObjectName
	for c.workqueue.Len() > 0 {
		key, _ := c.workqueue.Get()
		c.workqueue.Done(key)
		taken = append(taken, key)
	}
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
	taken := drainQueue(c.workqueue)
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
