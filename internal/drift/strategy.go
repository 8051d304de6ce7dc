package drift

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
)

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
