package drift

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
)

// DisruptionBudgetDrift says how current differs from desired in the fields
// that desired sets, or returns "" when it does not, compared the way
// server-side apply merges them, as ServiceDrift does for a Service.
func DisruptionBudgetDrift(desired *policyv1ac.PodDisruptionBudgetApplyConfiguration, current *policyv1.PodDisruptionBudget) string {
	return ObjectDrift(desired.ObjectMetaApplyConfiguration, current, func() string { return DisruptionBudgetSpecDrift(desired, current) })
}

// DisruptionBudgetSpecDrift says how current's spec differs from desired's,
// as DisruptionBudgetDrift compares them; "" when it does not.
func DisruptionBudgetSpecDrift(desired *policyv1ac.PodDisruptionBudgetApplyConfiguration, current *policyv1.PodDisruptionBudget) string {
	desiredSpec := &policyv1ac.PodDisruptionBudgetApplyConfiguration{TypeMetaApplyConfiguration: desired.TypeMetaApplyConfiguration, Spec: desired.Spec}
	currentSpec := &policyv1.PodDisruptionBudget{
		TypeMeta: metav1.TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "PodDisruptionBudget"},
		Spec:     current.Spec,
	}
	return describeSpecDrift(desiredSpec, currentSpec)
}
