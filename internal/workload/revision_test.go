package workload

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"

	appsv1 "k8s.io/api/apps/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestNewRevision: a Robot's revision is named after its spec, labelled
// and controlled as its other objects, and holds the spec as JSON.
func TestNewRevision(t *testing.T) {
	robot := robottest.NewRobot("web", 2)
	revision, err := NewRevision(robot, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(revision.Name, "web-") || len(revision.Name) != len("web-")+10 {
		t.Errorf("named %q, want web- and a 10-character hash", revision.Name)
	}
	if revision.Namespace != robot.Namespace || revision.Revision != 3 {
		t.Errorf("%s/%s revision %d, want %s/... revision 3", revision.Namespace, revision.Name, revision.Revision, robot.Namespace)
	}
	if got, want := fmt.Sprint(revision.Labels), fmt.Sprint(ObjectLabels(robot)); got != want {
		t.Errorf("labels %s, want %s", got, want)
	}
	if revision.Labels[LabelManagedBy] != LabelManagedByValue {
		t.Errorf("no managed-by label: the informers would not see it")
	}
	refs := revision.OwnerReferences
	if len(refs) != 1 || refs[0].UID != robot.UID || refs[0].Kind != "Robot" || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("owner references %v, want the Robot as controller", refs)
	}
	var spec robotv1beta1.RobotSpec
	if err := json.Unmarshal(revision.Data.Raw, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Image != robot.Spec.Image || *spec.Replicas != 2 {
		t.Errorf("data holds %s x%d, want the Robot's spec", spec.Image, *spec.Replicas)
	}

	other := robot.DeepCopy()
	other.Spec.Image = "registry.example/robot:2.0"
	changed, _ := NewRevision(other, 3)
	again, _ := NewRevision(robot.DeepCopy(), 7)
	if changed.Name == revision.Name {
		t.Errorf("another spec has the same name %s", changed.Name)
	}
	if again.Name != revision.Name {
		t.Errorf("the same spec is named %s, then %s", revision.Name, again.Name)
	}

	long := robottest.NewRobot(strings.Repeat("r", 253), 1)
	if revision, _ := NewRevision(long, 1); len(revision.Name) > 253 {
		t.Errorf("a name of %d characters, more than a name may have", len(revision.Name))
	}
}

// TestPlanRevisions: the history follows the spec. A new spec is the next
// number; a spec that comes back renumbers its revision, whose data does
// not change; an unchanged Robot writes nothing; beyond the limit the
// oldest go, never the current one.
func TestPlanRevisions(t *testing.T) {
	images := func(tags ...string) []*appsv1.ControllerRevision {
		var revisions []*appsv1.ControllerRevision
		for i, tag := range tags {
			revisions = append(revisions, revisionOf(t, tag, int64(i+1)))
		}
		return revisions
	}
	for _, tt := range []struct {
		name     string
		existing []*appsv1.ControllerRevision
		tag      string // the Robot's image tag now
		limit    int
		create   int64  // the number of the revision created; 0 for none
		renumber string // the tag of the revision renumbered; "" for none
		number   int64  // the current revision's number
		deleted  string // the tags of the revisions deleted
	}{
		{name: "no history", tag: "1", limit: 10, create: 1, number: 1},
		{name: "unchanged", existing: images("1"), tag: "1", limit: 10, number: 1},
		{name: "unchanged, with history", existing: images("1", "2", "3"), tag: "3", limit: 10, number: 3},
		{name: "changed", existing: images("1", "2"), tag: "3", limit: 10, create: 3, number: 3},
		{name: "back to an earlier spec", existing: images("1", "2", "3"), tag: "1", limit: 10, renumber: "1", number: 4},
		{name: "back to the one before", existing: images("1", "2"), tag: "1", limit: 10, renumber: "1", number: 3},
		{name: "changed at the limit", existing: images("1", "2", "3"), tag: "4", limit: 3, create: 4, number: 4, deleted: "1"},
		{name: "limit lowered", existing: images("1", "2", "3", "4", "5"), tag: "5", limit: 2, number: 5, deleted: "1 2 3"},
		{name: "limit lowered, the current not the newest", existing: images("1", "2", "3"), tag: "1", limit: 1, renumber: "1", number: 4, deleted: "2 3"},
		{name: "a limit of 0 keeps the current", existing: images("1", "2"), tag: "2", limit: 0, number: 2, deleted: "1"},
		{name: "numbers go on after a pruning", existing: images("1", "2", "3")[1:], tag: "4", limit: 10, create: 4, number: 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			robot := robotWithTag(tt.tag)
			plan, err := PlanRevisions(robot, tt.existing, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := plan.Create != nil; got != (tt.create != 0) {
				t.Fatalf("creates %v, want %v", plan.Create, tt.create)
			}
			if plan.Create != nil && plan.Create.Revision != tt.create {
				t.Errorf("creates revision %d, want %d", plan.Create.Revision, tt.create)
			}
			if got := tagOf(t, plan.Renumber); got != tt.renumber {
				t.Errorf("renumbers %q, want %q", got, tt.renumber)
			}
			if plan.Renumber != nil {
				for _, revision := range tt.existing {
					if revision.Name == plan.Renumber.Name && revision.Revision == plan.Renumber.Revision {
						t.Errorf("the existing revision %s was changed in place", revision.Name)
					}
				}
			}
			if got := tagOf(t, plan.Current); got != tt.tag || plan.Current.Revision != tt.number {
				t.Errorf("current %q revision %d, want %q revision %d", got, plan.Current.Revision, tt.tag, tt.number)
			}
			var deleted []string
			for _, name := range plan.Delete {
				if name == plan.Current.Name {
					t.Errorf("deletes the current revision %s", name)
				}
				deleted = append(deleted, tagOfName(t, tt.existing, name))
			}
			if got := strings.Join(deleted, " "); got != tt.deleted {
				t.Errorf("deletes %q, want %q", got, tt.deleted)
			}
			wantsWrite := tt.create != 0 || tt.renumber != "" || tt.deleted != ""
			if plan.Writes() != wantsWrite {
				t.Errorf("Writes() = %v, want %v", plan.Writes(), wantsWrite)
			}
		})
	}
}

// TestPlanRevisionsNameTaken: a revision of the Robot's name whose data is
// another spec is an error, not a history rewritten.
func TestPlanRevisionsNameTaken(t *testing.T) {
	robot := robotWithTag("1")
	forged := revisionOf(t, "1", 1)
	forged.Data.Raw = []byte(`{"image":"elsewhere"}`)
	if _, err := PlanRevisions(robot, []*appsv1.ControllerRevision{forged}, 10); err == nil {
		t.Error("no error for a revision whose data is not its name's")
	}
}

func robotWithTag(tag string) *robotv1beta1.Robot {
	robot := robottest.NewRobot("web", 2)
	robot.Spec.Image = "registry.example/robot:" + tag
	return robot
}

func revisionOf(t *testing.T, tag string, number int64) *appsv1.ControllerRevision {
	t.Helper()
	revision, err := NewRevision(robotWithTag(tag), number)
	if err != nil {
		t.Fatal(err)
	}
	return revision
}

// tagOf returns the image tag of revision's spec; "" for none.
func tagOf(t *testing.T, revision *appsv1.ControllerRevision) string {
	t.Helper()
	if revision == nil {
		return ""
	}
	var spec robotv1beta1.RobotSpec
	if err := json.Unmarshal(revision.Data.Raw, &spec); err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(spec.Image, "registry.example/robot:")
}

func tagOfName(t *testing.T, revisions []*appsv1.ControllerRevision, name string) string {
	t.Helper()
	for _, revision := range revisions {
		if revision.Name == name {
			return tagOf(t, revision)
		}
	}
	t.Fatalf("deletes %s, which does not exist", name)
	return ""
}

// TestPlanRevisionsFromMetadata: revisions cached without their data (their
// name stands for it) plan as whole ones do, and a renumbered one is sent
// with its data, which the API server keeps unchanged.
func TestPlanRevisionsFromMetadata(t *testing.T) {
	robot := robottest.NewRobot("web", 2)
	first, err := NewRevision(robot, 1)
	if err != nil {
		t.Fatal(err)
	}
	other := robot.DeepCopy()
	other.Spec.Image = "registry.example/robot:2.0"
	second, err := NewRevision(other, 2)
	if err != nil {
		t.Fatal(err)
	}
	data := first.Data.Raw
	first.Data.Raw, second.Data.Raw = nil, nil
	plan, err := PlanRevisions(robot, []*appsv1.ControllerRevision{second, first}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Create != nil || plan.Renumber == nil || plan.Renumber.Name != first.Name || plan.Renumber.Revision != 3 {
		t.Fatalf("plan %+v, want revision %s renumbered 3", plan, first.Name)
	}
	if string(plan.Renumber.Data.Raw) != string(data) {
		t.Errorf("renumbered with data %s, want the spec's %s", plan.Renumber.Data.Raw, data)
	}
	if first.Data.Raw != nil {
		t.Errorf("the plan changed the cached revision")
	}
}
