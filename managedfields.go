package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/klog/v2"
)

// The operator creates a Deployment with a plain create and changes it with
// server-side apply, under one field manager. The API server records the
// fields of the create as that manager's Update, and server-side apply takes
// an Update for another manager's: an apply removes only the fields that its
// manager applied before and applies no more. So what a Robot asked for when
// its Deployment was created (args, an env var, a port) would stay after the
// Robot stopped asking for it, unless those fields become the apply's first.
// This file does that, at the first apply that may drop one of them.

// createdFieldsEntry returns the position in managedFields of the entry that
// the operator's create of the Deployment left, or -1 when there is none. It
// is the operator's only Update of the Deployment itself: the operator
// writes Deployments by create and apply, and its patch of managedFields
// (claimCreatedFields) sets no field of its own.
func createdFieldsEntry(entries []metav1.ManagedFieldsEntry) int {
	return slices.IndexFunc(entries, func(e metav1.ManagedFieldsEntry) bool {
		return isOwnEntry(e) && e.Operation == metav1.ManagedFieldsOperationUpdate
	})
}

// hasAppliedEntry reports whether managedFields hold the operator's Apply
// entry.
func hasAppliedEntry(entries []metav1.ManagedFieldsEntry) bool {
	return slices.ContainsFunc(entries, func(e metav1.ManagedFieldsEntry) bool {
		return isOwnEntry(e) && e.Operation == metav1.ManagedFieldsOperationApply
	})
}

// isOwnEntry reports whether a managedFields entry is the operator's, about
// the Deployment itself rather than a subresource.
func isOwnEntry(e metav1.ManagedFieldsEntry) bool {
	return e.Manager == fieldManager && e.Subresource == ""
}

// trimManagedFields is the Deployment and Service informers' transform. managedFields are
// often the largest part of an object, and the controller reads from them
// only where the entry of the operator's create is and whether an Apply
// entry of the operator's comes before it (the API server sorts Apply entries
// first). So the cache keeps none of them once that entry is gone, and until
// then the entries up to it: the operator's with only their manager and
// operation, the others empty.
func trimManagedFields(obj interface{}) (interface{}, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil
	}
	internStrings(obj)
	entries := accessor.GetManagedFields()
	i := createdFieldsEntry(entries)
	if i < 0 {
		accessor.SetManagedFields(nil)
		return obj, nil
	}
	trimmed := make([]metav1.ManagedFieldsEntry, i+1)
	for j, e := range entries[:i+1] {
		if !isOwnEntry(e) {
			continue
		}
		// Constants, so that the cache keeps no strings of its own.
		operation := metav1.ManagedFieldsOperationUpdate
		if e.Operation == metav1.ManagedFieldsOperationApply {
			operation = metav1.ManagedFieldsOperationApply
		}
		trimmed[j] = metav1.ManagedFieldsEntry{Manager: fieldManager, Operation: operation}
	}
	accessor.SetManagedFields(trimmed)
	return obj, nil
}

// claimCreatedFields makes the fields that the operator's create of current
// set owned by the operator's applies, when the apply of desired that comes
// next may drop one of them, and returns the Deployment as it then is.
//
// It may drop one only if the Robot asks for something else than at the
// create, which the spec hash tells. Until then the create's entry stays, so
// that undoing another writer's change takes one write, not two. Once the
// Robot changed, the entry becomes the operator's Apply entry; or, if an
// apply has recorded that entry since the create, it goes: that apply set
// every field the create set, the Robot asking for the same then.
func (c *Controller) claimCreatedFields(ctx context.Context, desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) (*appsv1.Deployment, error) {
	if current.Annotations[annotationSpecHash] == desired.Annotations[annotationSpecHash] {
		return current, nil
	}
	claimed, err := claimCreated(ctx, c, "Deployment", current, c.kubeclientset.AppsV1().Deployments(current.Namespace).Patch)
	if claimed != current {
		c.writtenDeployments.remember(claimed)
	}
	return claimed, err
}

// claimCreated sends, through patch, the claimPatch of current's create
// entry, if it has one, and returns the object as it then is. An error
// leaves current as it was: a failed test (422) says the object changed
// since it was read, an ordinary failure, retried with backoff.
func claimCreated[T metav1.Object](ctx context.Context, c *Controller, kind string, current T,
	patch func(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (T, error)) (T, error) {
	i := createdFieldsEntry(current.GetManagedFields())
	if i < 0 {
		return current, nil
	}
	data, err := claimPatch(current, i)
	if err != nil {
		return current, err
	}
	if err := c.checkMayWrite(); err != nil {
		return current, err
	}
	claimed, err := patch(ctx, current.GetName(), types.JSONPatchType, data, metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil {
		return current, fmt.Errorf("taking over the fields of the create of %s %s/%s: %w", kind, current.GetNamespace(), current.GetName(), err)
	}
	klog.FromContext(ctx).V(4).Info("Took over the fields of the create", "kind", kind, "object", klog.KObj(claimed))
	return claimed, nil
}

// jsonPatchOperation is one operation of a JSON patch (RFC 6902).
type jsonPatchOperation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// claimPatch is the JSON patch that turns entry i of object's managedFields,
// the create's, into the operator's Apply entry, or removes it when there is
// one already. The API server takes the managedFields that a patch sets as
// they are. The patch applies only to the object as it was read: where the
// entry is depends on the others.
func claimPatch(object metav1.Object, i int) ([]byte, error) {
	entry := fmt.Sprintf("/metadata/managedFields/%d", i)
	patch := []jsonPatchOperation{
		{Op: "test", Path: "/metadata/resourceVersion", Value: object.GetResourceVersion()},
		{Op: "test", Path: entry + "/manager", Value: fieldManager},
		{Op: "test", Path: entry + "/operation", Value: metav1.ManagedFieldsOperationUpdate},
	}
	if hasAppliedEntry(object.GetManagedFields()) {
		patch = append(patch, jsonPatchOperation{Op: "remove", Path: entry})
	} else {
		patch = append(patch, jsonPatchOperation{Op: "replace", Path: entry + "/operation", Value: metav1.ManagedFieldsOperationApply})
	}
	return json.Marshal(patch)
}
