package main

import (
	"slices"
	"testing"

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
		{"created", []metav1.ManagedFieldsEntry{statusByOthers, created}, []metav1.ManagedFieldsEntry{othersInCache, createdInCache}},
		{"created, then applied", []metav1.ManagedFieldsEntry{applied, statusByOthers, created}, []metav1.ManagedFieldsEntry{appliedInCache, othersInCache, createdInCache}},
		{"created, then edited by others", []metav1.ManagedFieldsEntry{created, updatedByOthers}, []metav1.ManagedFieldsEntry{createdInCache}},
		{"applied only", []metav1.ManagedFieldsEntry{applied, statusByOthers}, nil},
		{"the operator's update of a subresource", []metav1.ManagedFieldsEntry{managedFieldsEntry(fieldManager, metav1.ManagedFieldsOperationUpdate, "scale")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "test", ManagedFields: slices.Clone(tc.in)}}
			obj, err := trimManagedFields(deployment)
			if err != nil {
				t.Fatal(err)
			}
			if got := obj.(*appsv1.Deployment).ManagedFields; !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("trimmed to %s, want %s", mustString(got), mustString(tc.want))
			}
			if got, want := createdFieldsEntry(obj.(*appsv1.Deployment).ManagedFields), createdFieldsEntry(tc.in); got != want {
				t.Errorf("the create's entry is at %d once trimmed, at %d before", got, want)
			}
			if got, want := hasAppliedEntry(obj.(*appsv1.Deployment).ManagedFields), hasAppliedEntry(tc.in) && createdFieldsEntry(tc.in) >= 0; got != want {
				t.Errorf("an Apply entry once trimmed: %v, want %v", got, want)
			}
		})
	}
}
