package transform

import (
	"testing"

	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWorkloadsKeepsTheRobotsRevisions: a ControllerRevision of a Robot's
// history is kept, labels and number, but without its data, when its name
// is the hash of the spec it holds, as its Robot names its revisions; any
// other, a stub.
func TestWorkloadsKeepsTheRobotsRevisions(t *testing.T) {
	robot, _ := webRobot("tenant", "web")
	ours, err := workload.NewRevision(robot, 1)
	if err != nil {
		t.Fatal(err)
	}
	ours.Labels = map[string]string{workload.LabelManagedBy: workload.LabelManagedByValue}
	renamed := ours.DeepCopy()
	renamed.Name = "web-0000000000"
	otherData := ours.DeepCopy()
	otherData.Data.Raw = []byte(`{"image":"elsewhere"}`)
	for _, tc := range []struct {
		name     string
		revision *appsv1.ControllerRevision
		kept     bool
	}{
		{"the Robot's", ours, true},
		{"another name", renamed, false},
		{"other data under the name", otherData, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Workloads(webRobot)(tc.revision.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			cached := got.(*appsv1.ControllerRevision)
			if kept := !IsStub(cached) && cached.Revision == tc.revision.Revision; kept != tc.kept {
				t.Errorf("kept: %v, want %v", kept, tc.kept)
			}
			if len(cached.Data.Raw) > 0 {
				t.Errorf("cached %d bytes of data, want none", len(cached.Data.Raw))
			}
			if cached.Name != tc.revision.Name || !metav1.IsControlledBy(cached, robot) {
				t.Errorf("cached %s, controlled by %v: the name and the controller are kept either way", cached.Name, cached.OwnerReferences)
			}
		})
	}
}

// TestWorkloadsKeepsARevisionTransformedTwice: client-go may hand the
// transform an object it already transformed (a resync, a relist's
// replace): the Robot's revision, its data dropped the first time, is
// still kept, not made a stub its Robot's history cannot see.
func TestWorkloadsKeepsARevisionTransformedTwice(t *testing.T) {
	robot, _ := webRobot("tenant", "web")
	ours, err := workload.NewRevision(robot, 1)
	if err != nil {
		t.Fatal(err)
	}
	ours.Labels = map[string]string{workload.LabelManagedBy: workload.LabelManagedByValue}
	once, err := Workloads(webRobot)(ours.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	twice, err := Workloads(webRobot)(once)
	if err != nil {
		t.Fatal(err)
	}
	if cached := twice.(*appsv1.ControllerRevision); IsStub(cached) || cached.Revision != 1 {
		t.Errorf("transformed twice, the revision is a stub (%v) or lost its number (%d)", IsStub(cached), cached.Revision)
	}
}
