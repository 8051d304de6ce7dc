package drift

import (
	"slices"

	"github.com/robot-operator/robot-operator/internal/workload"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CreatedFieldsEntry returns the position in managedFields of the entry that
// the operator's create of the Deployment left, or -1 when there is none. It
// is the operator's Update of the Deployment itself: the operator writes
// Deployments by create and apply, and its patch of managedFields
// (claimCreatedFields) sets no field of its own. Its RecreatePatch (in the
// writer) does set
// one, spec.strategy.type, in the same entry; the apply that follows it owns
// that field as well, so the entry is handled as the create's.
func CreatedFieldsEntry(entries []metav1.ManagedFieldsEntry) int {
	return slices.IndexFunc(entries, func(e metav1.ManagedFieldsEntry) bool {
		return IsOwnEntry(e) && e.Operation == metav1.ManagedFieldsOperationUpdate
	})
}

// HasAppliedEntry reports whether managedFields hold the operator's Apply
// entry.
func HasAppliedEntry(entries []metav1.ManagedFieldsEntry) bool {
	return slices.ContainsFunc(entries, func(e metav1.ManagedFieldsEntry) bool {
		return IsOwnEntry(e) && e.Operation == metav1.ManagedFieldsOperationApply
	})
}

// IsOwnEntry reports whether a managedFields entry is the operator's, about
// the Deployment itself rather than a subresource.
func IsOwnEntry(e metav1.ManagedFieldsEntry) bool {
	return e.Manager == workload.FieldManager && e.Subresource == ""
}
