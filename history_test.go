package main

import (
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// withHistory makes f's controller keep the Robots' history, its cache
// holding revisions (as the informer's transform keeps them: no data),
// and the API server holding them whole.
func (f *fixture) withHistory(revisions ...*appsv1.ControllerRevision) {
	for _, revision := range revisions {
		f.kubeObjects = append(f.kubeObjects, revision)
	}
	f.options = func(o *Options) {
		o.Owned.Without = []string{"PodDisruptionBudget"}
		indexer := o.Owned.KubeInformers.Apps().V1().ControllerRevisions().Informer().GetIndexer()
		for _, revision := range revisions {
			cached := revision.DeepCopy()
			cached.Data.Raw = nil
			if err := indexer.Add(cached); err != nil {
				f.t.Fatal(err)
			}
		}
	}
}

// newRevision is robot's current spec's revision, numbered revision.
func newRevision(t *testing.T, robot *robotv1beta1.Robot, revision int64) *appsv1.ControllerRevision {
	t.Helper()
	r, err := workload.NewRevision(robot, revision)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReadyStatusRemembersItsRevision: the status write that says Ready
// carries the revision's name, number and time, and is the sync's one
// write; stored so, the next sync writes nothing.
func TestReadyStatusRemembersItsRevision(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 2)
	revision := newRevision(t, robot, 1)
	deployment := liveDeployment(t, robot)
	f := newFixture(t)
	f.withHistory(revision)
	f.add(robot, deployment)
	written := f.syncWritesReady(ctx, robot)
	last := written.Status.LastReadyRevision
	if last == nil || last.Name != revision.Name || last.Revision != 1 || !last.ReadyTime.Equal(&metav1.Time{Time: robottest.FixtureNow}) {
		t.Fatalf("lastReadyRevision %+v, want %s, 1, at %v", last, revision.Name, robottest.FixtureNow)
	}
	if writes := robottest.FilterInformerActions(f.kubeClient.Actions()); len(writes) > 0 {
		t.Errorf("the sync sent %v to the API server, beside the status write", writes)
	}

	stored := robot.DeepCopy()
	stored.Status = written.Status
	again := newFixture(t)
	again.withHistory(revision)
	again.add(stored, deployment)
	again.run(ctx, cache.MetaObjectToName(stored))
}

// TestNotReadyAfterAChangeNamesIt: a Robot whose new spec's Deployment is
// refused says, in Ready's message, what changed since its last Ready
// revision, read once from the API server for the generation.
func TestNotReadyAfterAChangeNamesIt(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ready := robottest.NewRobot("test", 2)
	readyRevision := newRevision(t, ready, 1)
	deployment := liveDeployment(t, ready)
	robot := ready.DeepCopy()
	robot.Generation = 2
	robot.Spec.Replicas = new(int32)
	*robot.Spec.Replicas = 3
	robot.Spec.Image = "registry.example/robot:1.1"
	robot.Status.LastReadyRevision = &robotv1beta1.RobotReadyRevision{Name: readyRevision.Name, Revision: 1, ReadyTime: metav1.NewTime(robottest.FixtureNow)}
	current := newRevision(t, robot, 2)

	f := newFixture(t)
	f.withHistory(readyRevision, current)
	f.add(robot, deployment)
	c := f.newController(ctx)
	f.kubeClient.PrependReactor("patch", "deployments", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, robot.Name, nil)
	})
	for range 2 {
		if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil && !apierrors.IsInvalid(err) {
			t.Fatal(err)
		}
	}
	var gets int
	for _, action := range f.kubeClient.Actions() {
		if action.GetVerb() == "get" && action.GetResource().Resource == "controllerrevisions" {
			gets++
		}
	}
	if gets != 1 {
		t.Errorf("read the last Ready revision %d times in two syncs, want once", gets)
	}
	var message string
	for _, action := range robottest.FilterInformerActions(f.robotClient.Actions()) {
		if patch, ok := action.(interface{ GetPatch() []byte }); ok {
			message = string(patch.GetPatch())
		}
	}
	if want := "since revision 1, Ready at 2026-"; !strings.Contains(message, want) ||
		!strings.Contains(message, "image registry.example/robot:1.0 → 1.1; replicas 2 → 3") {
		t.Errorf("the status written says %s, want Ready's message to name the image and replicas since revision 1", message)
	}
}
