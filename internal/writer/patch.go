package writer

import (
	"encoding/json"
	"fmt"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
)

// This file builds the JSON patches the writer sends before an apply.
// They are built from the objects as they were read, and each tests the
// ResourceVersion first, so that a patch applies only to what was read.

// jsonPatchOperation is one operation of a JSON patch (RFC 6902).
type jsonPatchOperation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// ClaimPatch is the JSON patch that turns entry i of object's managedFields,
// the create's, into the operator's Apply entry, or removes it when there is
// one already. The API server takes the managedFields that a patch sets as
// they are. The patch applies only to the object as it was read: where the
// entry is depends on the others.
func ClaimPatch(object metav1.Object, i int) ([]byte, error) {
	entry := fmt.Sprintf("/metadata/managedFields/%d", i)
	patch := []jsonPatchOperation{
		{Op: "test", Path: "/metadata/resourceVersion", Value: object.GetResourceVersion()},
		{Op: "test", Path: entry + "/manager", Value: workload.FieldManager},
		{Op: "test", Path: entry + "/operation", Value: metav1.ManagedFieldsOperationUpdate},
	}
	if drift.HasAppliedEntry(object.GetManagedFields()) {
		patch = append(patch, jsonPatchOperation{Op: "remove", Path: entry})
	} else {
		patch = append(patch, jsonPatchOperation{Op: "replace", Path: entry + "/operation", Value: metav1.ManagedFieldsOperationApply})
	}
	return json.Marshal(patch)
}

// The API server gives a Deployment of type RollingUpdate a rollingUpdate
// (25% and 25%) when it has none, and refuses one of type Recreate that
// still has one. An apply of type Recreate removes the rollingUpdate only
// when the operator owns it, which it no longer does once an apply without
// a strategy has passed: the defaults the API server puts back after such
// an apply are nobody's. Most Deployments of Robots without a strategy have
// had one (for a change of the Robot, or to revert another writer's), so a
// Robot that then asks for Recreate would be refused on every sync. The
// rollingUpdate is therefore removed by a patch before the apply.

// RecreatePatch returns the JSON patch (RFC 6902) that gives current,
// whose strategy desired changes to Recreate, that type and no
// rollingUpdate, or nil when the apply of desired needs none: the Robot
// does not ask for Recreate, or current has no rollingUpdate left. The
// patch applies only to the Deployment as it was read. The field manager
// that sends it owns spec.strategy.type, which the apply that follows owns
// as well.
func RecreatePatch(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) ([]byte, error) {
	if desired.Spec == nil || desired.Spec.Strategy == nil || desired.Spec.Strategy.Type == nil ||
		*desired.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || current.Spec.Strategy.RollingUpdate == nil {
		return nil, nil
	}
	return json.Marshal([]jsonPatchOperation{
		{Op: "test", Path: "/metadata/resourceVersion", Value: current.ResourceVersion},
		{Op: "replace", Path: "/spec/strategy", Value: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}},
	})
}
