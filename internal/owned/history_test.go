package owned

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestHistory: each spec a Robot has is a revision it controls, numbered
// in order; a spec that comes back is renumbered, not made again; beyond
// the limit the oldest go, never the current one; a Robot whose history is
// its spec's, and one being deleted, send no request.
func TestHistory(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := policyRobot()
	f := newPolicyFixture(t, robot)
	history, informer := f.newHistory(t, 3)
	for _, step := range []struct {
		image   string // the Robot's image tag, changed to; "" for unchanged
		written string // the writes
		history string // the tag of each revision and its number, oldest first
	}{
		{"1", "[create controllerrevisions]", "1:1"},
		{"", "[]", "1:1"},
		{"2", "[create controllerrevisions]", "1:1 2:2"},
		{"3", "[create controllerrevisions]", "1:1 2:2 3:3"},
		{"", "[]", "1:1 2:2 3:3"},
		{"1", "[update controllerrevisions]", "2:2 3:3 1:4"},
		{"4", "[create controllerrevisions delete controllerrevisions]", "3:3 1:4 4:5"},
		{"", "[]", "3:3 1:4 4:5"},
	} {
		robot = robot.DeepCopy()
		if step.image != "" {
			robot.Spec.Image, robot.Generation = "registry.example/robot:"+step.image, robot.Generation+1
		}
		current, err := history.Sync(ctx, robot)
		if err != nil {
			t.Fatalf("image %q: %v", step.image, err)
		}
		if current == nil || revisionImage(t, current) != robot.Spec.Image {
			t.Errorf("image %q: the sync returned the revision %v, want the current spec's", step.image, current)
		}
		if written := fmt.Sprint(f.writes()); written != step.written {
			t.Errorf("image %q: writes %v, want %s", step.image, written, step.written)
		}
		f.cacheRevisions(t, informer.Informer().GetIndexer())
		if got := f.history(t, robot); got != step.history {
			t.Errorf("image %q: history %s, want %s", step.image, got, step.history)
		}
		if got := history.Current(robot); got == nil || got.Name != current.Name {
			t.Errorf("image %q: the cache's current revision is %v, want %s", step.image, got, current.Name)
		}
	}

	deleting := robot.DeepCopy()
	deleting.Spec.Image, deleting.DeletionTimestamp = "registry.example/robot:5", &metav1.Time{Time: time.Now()}
	if _, err := history.Sync(ctx, deleting); err != nil {
		t.Fatal(err)
	}
	if written := f.writes(); len(written) > 0 {
		t.Errorf("a Robot being deleted wrote %v", written)
	}
}

// TestHistoryInThePaths: the history is a kind of the list. A Robot's
// first sync records its spec; synced again, a converged Robot costs no
// request, its revision included.
func TestHistoryInThePaths(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := policyRobot()
	f := newPolicyFixture(t, robot)
	f.sources.Without = []string{"PodDisruptionBudget"}
	paths := f.paths(t, policy.Policy{})
	objects, err := paths.Sync(ctx, robot)
	if err != nil {
		t.Fatal(err)
	}
	if written := f.writes(); !slices.Contains(written, "create controllerrevisions") {
		t.Errorf("the first sync wrote %v, and no revision", written)
	}
	if objects.Revision() == nil || revisionImage(t, objects.Revision()) != robot.Spec.Image {
		t.Errorf("the sync returned the revision %v, want the Robot's spec's", objects.Revision())
	}
	f.cache(t, objects)
	f.cacheRevisions(t, f.sources.KubeInformers.Apps().V1().ControllerRevisions().Informer().GetIndexer())
	if _, err := paths.Sync(ctx, robot); err != nil {
		t.Fatal(err)
	}
	if written := f.writes(); len(written) > 0 {
		t.Errorf("a converged Robot wrote %v", written)
	}
	if got := paths.Own(robot).Revision(); got == nil || got.Name != objects.Revision().Name {
		t.Errorf("Own returned the revision %v, want %s", got, objects.Revision().Name)
	}
}

// TestHistoryRevisionDeletedQueuesItsRobot: a revision deleted by someone
// queues its Robot, whose next sync makes its current one again.
func TestHistoryRevisionDeletedQueuesItsRobot(t *testing.T) {
	robot := policyRobot()
	f := newPolicyFixture(t, robot)
	_, informer := f.newHistory(t, 10)
	f.syncCaches(t, informer.Informer())
	revision, err := workloadRevision(robot)
	if err != nil {
		t.Fatal(err)
	}
	client := f.kube.AppsV1().ControllerRevisions(robot.Namespace)
	if _, err := client.Create(t.Context(), revision, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(informer.Informer().GetStore().List()) == 1 })
	if err := client.Delete(t.Context(), revision.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(f.Queued()) > 0 })
	if queued := f.Queued(); fmt.Sprint(queued) != fmt.Sprint([]cache.ObjectName{cache.MetaObjectToName(robot)}) {
		t.Errorf("queued %v, want the Robot", queued)
	}
}

// newHistory returns the history of f's Robots, keeping limit revisions
// each, and the informer of the revisions it reads.
func (f *policyFixture) newHistory(t *testing.T, limit int) (*History, appsinformers.ControllerRevisionInformer) {
	t.Helper()
	informer := f.sources.KubeInformers.Apps().V1().ControllerRevisions()
	history, err := NewHistory(f.deps, informer, f.kube, limit)
	if err != nil {
		t.Fatal(err)
	}
	return history, informer
}

// cacheRevisions makes the revisions' cache what the API server holds, as
// the informer would.
func (f *policyFixture) cacheRevisions(t *testing.T, revisions cache.Indexer) {
	t.Helper()
	listed, err := f.kube.AppsV1().ControllerRevisions(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var objects []any
	for i := range listed.Items {
		objects = append(objects, &listed.Items[i])
	}
	if err := revisions.Replace(objects, ""); err != nil {
		t.Fatal(err)
	}
	f.kube.ClearActions()
}

// history returns robot's revisions in the API server, oldest first, as
// "tag:number".
func (f *policyFixture) history(t *testing.T, robot *robotv1beta1.Robot) string {
	t.Helper()
	listed, err := f.kube.AppsV1().ControllerRevisions(robot.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.kube.ClearActions()
	slices.SortFunc(listed.Items, func(a, b appsv1.ControllerRevision) int { return int(a.Revision - b.Revision) })
	var history []string
	for i := range listed.Items {
		revision := &listed.Items[i]
		if !metav1.IsControlledBy(revision, robot) {
			t.Errorf("revision %s is not controlled by the Robot", revision.Name)
		}
		history = append(history, fmt.Sprintf("%s:%d", strings.TrimPrefix(revisionImage(t, revision), "registry.example/robot:"), revision.Revision))
	}
	return strings.Join(history, " ")
}

// revisionImage returns the image of the spec revision holds.
func revisionImage(t *testing.T, revision *appsv1.ControllerRevision) string {
	t.Helper()
	var spec robotv1beta1.RobotSpec
	if err := json.Unmarshal(revision.Data.Raw, &spec); err != nil {
		t.Fatal(err)
	}
	return spec.Image
}

// waitFor waits up to 10 seconds for done.
func waitFor(t *testing.T, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !done(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// workloadRevision is robot's revision 1.
func workloadRevision(robot *robotv1beta1.Robot) (*appsv1.ControllerRevision, error) {
	return workload.NewRevision(robot, 1)
}

// TestHistoryRecordsARefusedSpec: a spec whose Deployment the API server
// refuses is recorded all the same, so that what changed since the Robot
// last worked can be told of that spec too; the sync still fails with the
// Deployment's error.
func TestHistoryRecordsARefusedSpec(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := policyRobot()
	f := newPolicyFixture(t, robot)
	f.sources.Without = []string{"PodDisruptionBudget"}
	f.kube.PrependReactor("create", "deployments", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, robot.Name, nil)
	})
	paths := f.paths(t, policy.Policy{})
	objects, err := paths.Sync(ctx, robot)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("sync: %v, want the Deployment's refusal", err)
	}
	if written := f.writes(); !slices.Contains(written, "create controllerrevisions") {
		t.Errorf("the sync of a refused spec wrote %v, and no revision", written)
	}
	if objects.Revision() == nil || revisionImage(t, objects.Revision()) != robot.Spec.Image {
		t.Errorf("the sync returned the revision %v, want the refused spec's", objects.Revision())
	}
	if objects.Service != nil {
		t.Errorf("the sync made the Service %s beside a refused Deployment", objects.Service.Name)
	}
}

// TestHistorySpecReadOncePerGeneration: the spec of a revision, which the
// cache does not keep, is read from the API server once per generation of
// the Robot; a revision gone, or not the Robot's, has no spec; forgetting
// the Robot forgets what was read.
func TestHistorySpecReadOncePerGeneration(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := policyRobot()
	f := newPolicyFixture(t, robot)
	history, _ := f.newHistory(t, 10)
	revision, err := workloadRevision(robot)
	if err != nil {
		t.Fatal(err)
	}
	client := f.kube.AppsV1().ControllerRevisions(robot.Namespace)
	if _, err := client.Create(ctx, revision, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	notOurs := revision.DeepCopy()
	notOurs.Name, notOurs.OwnerReferences = "not-ours", nil
	if _, err := client.Create(ctx, notOurs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.kube.ClearActions()
	gets := func() int {
		n := 0
		for _, action := range f.kube.Actions() {
			if action.GetVerb() == "get" && action.GetResource().Resource == "controllerrevisions" {
				n++
			}
		}
		f.kube.ClearActions()
		return n
	}
	for _, step := range []struct {
		name       string
		generation int64
		revision   string
		gets       int
		spec       bool
	}{
		{"first read", 1, revision.Name, 1, true},
		{"same generation", 1, revision.Name, 0, true},
		{"next generation", 2, revision.Name, 1, true},
		{"gone", 2, "web-gone", 1, false},
		{"gone, read again", 2, "web-gone", 0, false},
		{"not the Robot's", 2, "not-ours", 1, false},
	} {
		robot := robot.DeepCopy()
		robot.Generation = step.generation
		spec, err := history.Spec(ctx, robot, step.revision)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := gets(); got != step.gets {
			t.Errorf("%s: %d reads, want %d", step.name, got, step.gets)
		}
		if (spec != nil) != step.spec || (spec != nil && spec.Image != robot.Spec.Image) {
			t.Errorf("%s: spec %v, want one: %v", step.name, spec, step.spec)
		}
	}
	sizes := map[string]int{}
	entry := historyEntry{history}
	entry.tracked(sizes)
	if sizes["revision_specs"] != 1 {
		t.Errorf("tracked %v, want one Robot's spec", sizes)
	}
	entry.forgetRobot(robot.UID)
	entry.tracked(sizes)
	if sizes["revision_specs"] != 0 {
		t.Errorf("tracked %v once the Robot is forgotten, want none", sizes)
	}
}

// TestHistoryDoesNotCreateTwiceBeforeTheCacheCatchesUp: a sync soon after
// the one that created the Robot's revision (the report of its rollout,
// most often), while the cache does not hold the revision yet, creates
// nothing and returns that revision; once the cache holds it, it is the
// cache's.
func TestHistoryDoesNotCreateTwiceBeforeTheCacheCatchesUp(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := policyRobot()
	f := newPolicyFixture(t, robot)
	history, informer := f.newHistory(t, 3)
	first, err := history.Sync(ctx, robot)
	if err != nil || first == nil {
		t.Fatalf("the first sync: revision %v, err %v", first, err)
	}
	if written := fmt.Sprint(f.writes()); written != "[create controllerrevisions]" {
		t.Fatalf("the first sync wrote %s, want the revision's create", written)
	}
	// The controller drops the spec read for Ready's message at each sync
	// with nothing to explain: that is not the revision made.
	history.forgetSpec(robot.UID)
	again, err := history.Sync(ctx, robot)
	if err != nil || again == nil || again.Name != first.Name {
		t.Errorf("a sync before the cache caught up: revision %v, err %v; want %s", again, err, first.Name)
	}
	if written := f.writes(); len(written) != 0 {
		t.Errorf("a sync before the cache caught up wrote %v, want nothing", written)
	}
	f.cacheRevisions(t, informer.Informer().GetIndexer())
	if cached, err := history.Sync(ctx, robot); err != nil || cached == nil || cached.Name != first.Name || len(f.writes()) != 0 {
		t.Errorf("a sync once the cache holds it: revision %v, err %v, or it wrote", cached, err)
	}
}

// BenchmarkHistorySyncAmongRobots: the sync of a Robot whose history is
// its spec's (no request), in a namespace of n Robots with a revision each,
// as every sync of a Robot pays it. Its cost should not grow with n.
func BenchmarkHistorySyncAmongRobots(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("robots=%d", n), func(b *testing.B) {
			kube := fake.NewClientset()
			informer := informers.NewSharedInformerFactory(kube, 0).Apps().V1().ControllerRevisions()
			history, err := NewHistory(Deps{Enqueue: func(cache.ObjectName) {}}, informer, kube, 10)
			if err != nil {
				b.Fatal(err)
			}
			var robot *robotv1beta1.Robot
			for i := range n {
				robot = robottest.NewRobot(fmt.Sprintf("robot-%d", i), 1)
				revision, err := workload.NewRevision(robot, 1)
				if err != nil {
					b.Fatal(err)
				}
				if err := informer.Informer().GetIndexer().Add(revision); err != nil {
					b.Fatal(err)
				}
			}
			ctx := b.Context()
			for b.Loop() {
				if _, err := history.Sync(ctx, robot); err != nil {
					b.Fatal(err)
				}
			}
			if actions := kube.Actions(); len(actions) > 0 {
				b.Fatalf("a Robot whose history is its spec's sent %d requests", len(actions))
			}
		})
	}
}
