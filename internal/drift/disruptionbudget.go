package drift

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
)

// DisruptionBudgetSpecDrift says how current's spec differs from desired's
// in the fields that desired sets, or returns "" when it does not, compared
// the way server-side apply merges them, as ServiceSpecDrift does for a
// Service. ObjectDrift tells the rest.
func DisruptionBudgetSpecDrift(desired *policyv1ac.PodDisruptionBudgetApplyConfiguration, current *policyv1.PodDisruptionBudget) string {
	desiredSpec := &policyv1ac.PodDisruptionBudgetApplyConfiguration{TypeMetaApplyConfiguration: desired.TypeMetaApplyConfiguration, Spec: desired.Spec}
	currentSpec := &policyv1.PodDisruptionBudget{
		TypeMeta: metav1.TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "PodDisruptionBudget"},
		Spec:     current.Spec,
	}
	return describeSpecDrift(desiredSpec, currentSpec)
}
