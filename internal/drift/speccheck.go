package drift

import (
	"sync"

	"github.com/robot-operator/robot-operator/internal/workload"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
)

// specCheck is a Deployment's generation and the spec hash of what the Robot
// asked for, when the two specs last matched.
type specCheck struct {
	generation int64
	specHash   string
}

// SpecChecks is the spec-check memo: for each Deployment (by UID), the
// generation and spec hash at which its spec last showed no drift, so that
// the costly comparison of specs runs once per change, not on every status
// update. Any change to a Deployment's spec raises its generation, and any
// change to the Robot's its spec hash.
type SpecChecks struct{ m sync.Map }

// unchanged reports whether the Deployment uid's spec matched the Robot's at
// this generation and spec hash.
func (s *SpecChecks) unchanged(uid types.UID, generation int64, specHash string) bool {
	last, ok := s.m.Load(uid)
	return ok && last.(specCheck) == specCheck{generation, specHash}
}

// Record notes that the Deployment uid's spec matched at this generation and
// spec hash.
func (s *SpecChecks) Record(uid types.UID, generation int64, specHash string) {
	s.m.Store(uid, specCheck{generation, specHash})
}

// Forget drops what is kept about the Deployment uid.
func (s *SpecChecks) Forget(uid types.UID) { s.m.Delete(uid) }

// Len returns how many Deployments are remembered.
func (s *SpecChecks) Len() int {
	n := 0
	s.m.Range(func(any, any) bool { n++; return true })
	return n
}

// Drift is DeploymentDrift, with the comparison of specs skipped when
// neither spec changed since they last matched. Most syncs come from
// Deployment status updates, which change neither.
func (s *SpecChecks) Drift(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) string {
	specHash := desired.Annotations[workload.AnnotationSpecHash]
	drift := driftSkippingSpecs(desired, current, s.unchanged(current.UID, current.Generation, specHash))
	if drift == "" {
		s.Record(current.UID, current.Generation, specHash)
	}
	return drift
}

// LastSpecHash returns the spec hash of what the Robot asked for when the
// Deployment uid last held it, as the operator itself applied or checked it;
// false when the operator has not seen it hold since it started. Unlike the
// Deployment's spec-hash annotation, no other writer can change it.
func (s *SpecChecks) LastSpecHash(uid types.UID) (string, bool) {
	last, ok := s.m.Load(uid)
	if !ok {
		return "", false
	}
	return last.(specCheck).specHash, true
}
