package transform

import (
	"slices"
	"testing"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTrimManagedFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []metav1.ManagedFieldsEntry
		want []metav1.ManagedFieldsEntry
	}{
		{"none", nil, nil},
		{"created", []metav1.ManagedFieldsEntry{robottest.StatusByOthers, robottest.Created}, []metav1.ManagedFieldsEntry{robottest.OthersInCache, robottest.CreatedInCache}},
		{"created, then applied", []metav1.ManagedFieldsEntry{robottest.Applied, robottest.StatusByOthers, robottest.Created}, []metav1.ManagedFieldsEntry{robottest.AppliedInCache, robottest.OthersInCache, robottest.CreatedInCache}},
		{"created, then edited by others", []metav1.ManagedFieldsEntry{robottest.Created, robottest.UpdatedByOthers}, []metav1.ManagedFieldsEntry{robottest.CreatedInCache}},
		{"applied only", []metav1.ManagedFieldsEntry{robottest.Applied, robottest.StatusByOthers}, nil},
		{"the operator's update of a subresource", []metav1.ManagedFieldsEntry{robottest.ManagedFieldsEntry(workload.FieldManager, metav1.ManagedFieldsOperationUpdate, "scale")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "test", ManagedFields: slices.Clone(tc.in)}}
			obj, err := TrimManagedFields(deployment)
			if err != nil {
				t.Fatal(err)
			}
			if got := obj.(*appsv1.Deployment).ManagedFields; !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("trimmed to %s, want %s", robottest.MustString(got), robottest.MustString(tc.want))
			}
			if got, want := drift.CreatedFieldsEntry(obj.(*appsv1.Deployment).ManagedFields), drift.CreatedFieldsEntry(tc.in); got != want {
				t.Errorf("the create's entry is at %d once trimmed, at %d before", got, want)
			}
			if got, want := drift.HasAppliedEntry(obj.(*appsv1.Deployment).ManagedFields), drift.HasAppliedEntry(tc.in) && drift.CreatedFieldsEntry(tc.in) >= 0; got != want {
				t.Errorf("an Apply entry once trimmed: %v, want %v", got, want)
			}
		})
	}
}
