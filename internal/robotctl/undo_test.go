package robotctl

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// managed returns a managedFields entry of manager, at minute after
// created, owning fields (a FieldsV1 tree as JSON).
func managed(manager string, operation metav1.ManagedFieldsOperationType, subresource string, minute int, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager: manager, Operation: operation, Subresource: subresource, APIVersion: "robot.dev/v1beta1",
		Time: ptr.To(metav1.NewTime(created.Add(time.Duration(minute) * time.Minute))), FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)},
	}
}

// userFields are the managedFields of a Robot applied by kubectl, edited
// once, and reported on by the operator.
var userFields = []metav1.ManagedFieldsEntry{
	managed("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, "", 0,
		`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:spec":{".":{},"f:image":{},"f:replicas":{}}}`),
	managed("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "", 2, `{"f:spec":{"f:env":{}}}`),
	managed("robot-operator", metav1.ManagedFieldsOperationApply, "status", 3,
		`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{},"f:replicas":{}}}`),
}

// TestUndo: the revision chosen (the one before the current one, or the
// one asked for) written back to the Robot by an update on the
// resourceVersion read, as the manager that owns most of its spec or the
// one asked for; nothing written for the current revision.
func TestUndo(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// image is the Robot's image before the undo: image3 is in no
		// revision yet.
		image   string
		written string // the spec written, "image x replicas", "" for none
		manager string
		stdout  string
	}{
		{"the revision before", nil, image2, image2 + " x 1", "kubectl-client-side-apply",
			"robot.robot.dev/web rolled back to revision 2 (field manager kubectl-client-side-apply)\n"},
		{"a revision asked for", []string{"--to-revision", "1"}, image2, image1 + " x 1", "kubectl-client-side-apply",
			"robot.robot.dev/web rolled back to revision 1 (field manager kubectl-client-side-apply)\n"},
		{"a manager asked for", []string{"--field-manager", "argocd-controller"}, image2, image2 + " x 1", "argocd-controller",
			"robot.robot.dev/web rolled back to revision 2 (field manager argocd-controller)\n"},
		{"a spec not recorded yet", nil, image3, image2 + " x 3", "kubectl-client-side-apply",
			"robot.robot.dev/web rolled back to revision 3 (field manager kubectl-client-side-apply)\n"},
		{"the current revision", []string{"--to-revision=3"}, image2, "", "",
			"robot.robot.dev/web skipped: revision 3 is its current spec\n"},
	} {
		robot, revisions := threeSpecs(t)
		robot.Spec.Image = tc.image
		robot.ManagedFields = userFields
		f := newFixture(robot, revisions...)
		code, stdout, stderr := f.run(t, append([]string{"undo", "web"}, tc.args...)...)
		if code != 0 || stdout != tc.stdout || stderr != "" {
			t.Errorf("%s: exit code %d, stdout %q, stderr %q; want 0 and %q", tc.name, code, stdout, stderr, tc.stdout)
		}
		updates := updatesOf(f)
		if tc.written == "" {
			if len(updates) > 0 || len(f.writes()) > 0 {
				t.Errorf("%s: wrote %v, want nothing", tc.name, f.writes())
			}
			continue
		}
		if len(updates) != 1 || len(f.writes()) != 1 {
			t.Fatalf("%s: wrote %v, want one update of the Robot", tc.name, f.writes())
		}
		update := updates[0]
		written := update.Object.(*robotv1beta1.Robot)
		if got := fmt.Sprintf("%s x %d", written.Spec.Image, ptr.Deref(written.Spec.Replicas, 0)); got != tc.written || update.GetSubresource() != "" {
			t.Errorf("%s: wrote the spec %s (subresource %q), want %s", tc.name, got, update.GetSubresource(), tc.written)
		}
		if written.ResourceVersion != "41" || written.UID != robot.UID {
			t.Errorf("%s: updated on resourceVersion %q, UID %q, want those read: 41, %s", tc.name, written.ResourceVersion, written.UID, robot.UID)
		}
		if update.UpdateOptions.FieldManager != tc.manager {
			t.Errorf("%s: field manager %q, want %q", tc.name, update.UpdateOptions.FieldManager, tc.manager)
		}
	}
}

// TestUndoErrors: no Robot, no history, no such revision, nothing before
// the first, a revision with fields the plugin would drop: each said,
// nothing written.
func TestUndoErrors(t *testing.T) {
	robot, revisions := threeSpecs(t)
	first := webRobot(image1, 1)
	// A newer operator's revision, with a field this release does not know.
	newer := revisions[1].DeepCopy()
	newer.Data.Raw = []byte(`{"image":"registry.example/web:1.28","replicas":1,"canary":{"steps":3}}`)
	for _, tc := range []struct {
		name string
		f    *fixture
		args []string
		want string
	}{
		{"no Robot", newFixture(nil, revisions...), nil, "error: Robot shop/web not found\n"},
		{"no history", newFixture(robot), nil, "error: Robot shop/web has no history: "},
		{"no such revision", newFixture(robot, revisions...), []string{"--to-revision", "9"}, "error: Robot shop/web has no revision 9 (its revisions: 1, 2, 3)\n"},
		{"a revision pruned", newFixture(robot, revisions[1], revisions[2]), []string{"--to-revision", "1"}, "error: Robot shop/web has no revision 1 (its revisions: 2, 3)\n"},
		{"nothing before the first", newFixture(first, revisions...), nil, "error: Robot shop/web has no revision before its current one, 1 (its revisions: 1, 2, 3)\n"},
		{"a field unknown", newFixture(robot, revisions[0], newer, revisions[2]), nil,
			"error: revision 2 (ControllerRevision " + newer.Name + `) holds no Robot spec this release of kubectl robot can write back: json: unknown field "canary"` + "\n"},
		{"a negative revision", newFixture(robot, revisions...), []string{"--to-revision=-1"}, "error: --to-revision -1: give a revision's number, or 0 for the one before the current one\n"},
	} {
		code, stdout, stderr := tc.f.run(t, append([]string{"undo", "web"}, tc.args...)...)
		if code != 1 || stdout != "" || !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("%s: exit code %d, stdout %q, stderr %q; want 1, nothing, and %q", tc.name, code, stdout, stderr, tc.want)
		}
		if writes := tc.f.writes(); len(writes) > 0 {
			t.Errorf("%s: wrote %v", tc.name, writes)
		}
	}
}

// TestUndoRetriesAConflict: an update refused for its resourceVersion is
// made again on the Robot read anew, and the revision chosen again.
func TestUndoRetriesAConflict(t *testing.T) {
	robot, revisions := threeSpecs(t)
	f := newFixture(robot, revisions...)
	conflicts := 1
	f.robots.PrependReactor("update", "robots", func(clienttesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "robot.dev", Resource: "robots"}, "web", fmt.Errorf("the object has been modified"))
	})
	code, stdout, stderr := f.run(t, "undo", "web")
	if code != 0 || !strings.Contains(stdout, "rolled back to revision 2") {
		t.Errorf("exit code %d, stdout %q, stderr %q; want 0 and the Robot rolled back to revision 2", code, stdout, stderr)
	}
	var verbs []string
	for _, action := range f.robots.Actions() {
		verbs = append(verbs, action.GetVerb())
	}
	if got := strings.Join(verbs, " "); got != "get update get update" {
		t.Errorf("requests %s, want a read and an update, twice", got)
	}
	stored, err := f.robots.RobotV1beta1().Robots(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Spec.Image != image2 || ptr.Deref(stored.Spec.Replicas, 0) != 1 || len(stored.Spec.Env) != 0 {
		t.Errorf("the Robot's spec is %+v, want revision 2's", stored.Spec)
	}
}

// TestSpecManager: the manager owning most of the spec, the newest of two
// owning as many, never the operator nor a subresource's writer; with none,
// the plugin's own.
func TestSpecManager(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    string
	}{
		{"most of the spec", userFields, "kubectl-client-side-apply"},
		{"as many, the newest", []metav1.ManagedFieldsEntry{
			managed("flux", metav1.ManagedFieldsOperationApply, "", 1, `{"f:spec":{"f:image":{}}}`),
			managed("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "", 5, `{"f:spec":{"f:replicas":{}}}`),
			managed("helm", metav1.ManagedFieldsOperationUpdate, "", 3, `{"f:spec":{"f:env":{}}}`),
		}, "kubectl-edit"},
		{"never the operator", []metav1.ManagedFieldsEntry{
			managed("robot-operator", metav1.ManagedFieldsOperationUpdate, "", 1, `{"f:spec":{"f:image":{},"f:replicas":{}}}`),
			managed("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "", 0, `{"f:spec":{"f:env":{}}}`),
		}, "kubectl-edit"},
		{"nobody's spec", []metav1.ManagedFieldsEntry{
			managed("kubectl-label", metav1.ManagedFieldsOperationUpdate, "", 1, `{"f:metadata":{"f:labels":{"f:team":{}}}}`),
			managed("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "status", 2, `{"f:spec":{"f:env":{}}}`),
		}, DefaultFieldManager},
	} {
		robot := webRobot(image1, 1)
		robot.ManagedFields = tc.entries
		if got := SpecManager(robot); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// updatesOf returns the updates sent to the Robots.
func updatesOf(f *fixture) []clienttesting.UpdateActionImpl {
	var updates []clienttesting.UpdateActionImpl
	for _, action := range f.robots.Actions() {
		if update, ok := action.(clienttesting.UpdateActionImpl); ok {
			updates = append(updates, update)
		}
	}
	return updates
}
