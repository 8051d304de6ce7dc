package transform

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestNewerFieldsRemembersBeforeStripping: the Robot informer's transform
// drops managedFields, and remembers first which spec fields they show
// that this binary does not know; a later version without them, and a
// forgotten Robot, leave nothing behind.
func TestNewerFieldsRemembersBeforeStripping(t *testing.T) {
	robot := func(rv, fields string) *robotv1beta1.Robot {
		return &robotv1beta1.Robot{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "uid-1", ResourceVersion: rv,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
				APIVersion: "robot.dev/v1beta1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}}}}
	}
	var newer NewerFields
	obj, err := newer.Transform(robot("1", `{"f:spec":{"f:image":{},"f:debugPort":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*robotv1beta1.Robot).ManagedFields; got != nil {
		t.Errorf("managedFields cached: %v", got)
	}
	if got, want := newer.Of("uid-1"), []string{`spec.debugPort (set by "kubectl" as robot.dev/v1beta1)`}; !slices.Equal(got, want) {
		t.Errorf("Of = %q, want %q", got, want)
	}
	if n := newer.Len(); n != 1 {
		t.Errorf("Len = %d, want 1", n)
	}
	if _, err := newer.Transform(robot("2", `{"f:spec":{"f:image":{}}}`)); err != nil {
		t.Fatal(err)
	}
	if got := newer.Of("uid-1"); got != nil || newer.Len() != 0 {
		t.Errorf("after a version without newer fields: Of = %q, Len = %d; want none", got, newer.Len())
	}
	if _, err := newer.Transform(robot("3", `{"f:spec":{"f:debugPort":{}}}`)); err != nil {
		t.Fatal(err)
	}
	newer.Forget("uid-1")
	if newer.Len() != 0 {
		t.Errorf("Len = %d after Forget, want 0", newer.Len())
	}
}

// TestNewerFieldsTransformIsIdempotent: a streamed list (WatchList) runs
// the informer's transform twice on each object, the second time on what
// the first returned, without managedFields: the verdict of the first
// stays.
func TestNewerFieldsTransformIsIdempotent(t *testing.T) {
	robot := &robotv1beta1.Robot{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "uid-1", ResourceVersion: "1",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: "robot.dev/v1beta1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:debugPort":{}}}`)}}}}}
	var newer NewerFields
	once, err := newer.Transform(robot)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newer.Transform(once); err != nil {
		t.Fatal(err)
	}
	if got := newer.Of("uid-1"); len(got) != 1 {
		t.Errorf("after the transform ran twice, Of = %q, want spec.debugPort", got)
	}
}
