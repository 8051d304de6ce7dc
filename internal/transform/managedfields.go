package transform

import (
	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/workload"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrimManagedFields is the Deployment and Service informers' transform. managedFields are
// often the largest part of an object, and the controller reads from them
// only where the entry of the operator's create is and whether an Apply
// entry of the operator's comes before it (the API server sorts Apply entries
// first). So the cache keeps none of them once that entry is gone, and until
// then the entries up to it: the operator's with only their manager and
// operation, the others empty.
func TrimManagedFields(obj interface{}) (interface{}, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil
	}
	internStrings(obj)
	entries := accessor.GetManagedFields()
	i := drift.CreatedFieldsEntry(entries)
	if i < 0 {
		accessor.SetManagedFields(nil)
		return obj, nil
	}
	trimmed := make([]metav1.ManagedFieldsEntry, i+1)
	for j, e := range entries[:i+1] {
		if !drift.IsOwnEntry(e) {
			continue
		}
		// Constants, so that the cache keeps no strings of its own.
		operation := metav1.ManagedFieldsOperationUpdate
		if e.Operation == metav1.ManagedFieldsOperationApply {
			operation = metav1.ManagedFieldsOperationApply
		}
		trimmed[j] = metav1.ManagedFieldsEntry{Manager: workload.FieldManager, Operation: operation}
	}
	accessor.SetManagedFields(trimmed)
	return obj, nil
}

// StripManagedFields drops managedFields from Robots before they are cached:
// the operator never reads them, and they are often the largest part of an
// object. The strings every Robot shares become constants (internStrings).
func StripManagedFields(obj interface{}) (interface{}, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
		internStrings(obj)
	}
	return obj, nil
}
