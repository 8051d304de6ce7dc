package drift

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// specCheck is an owned object's generation and the spec hash of what the
// Robot asked for, when the two specs last matched.
type specCheck struct {
	generation int64
	specHash   string
}

// SpecChecks is the spec-check memo: for each object a Robot owns (by UID),
// the generation and spec hash at which its spec last showed no drift, so
// that the costly comparison of specs runs once per change, not on every
// status update. Any change to a Deployment's spec raises its generation, and
// any change to the Robot's its spec hash. Its writer (internal/writer) owns
// it.
type SpecChecks struct{ m sync.Map }

// Unchanged reports whether the object uid's spec matched the Robot's at
// this generation and spec hash.
func (s *SpecChecks) Unchanged(uid types.UID, generation int64, specHash string) bool {
	last, ok := s.m.Load(uid)
	return ok && last.(specCheck) == specCheck{generation, specHash}
}

// Record notes that the object uid's spec matched at this generation and
// spec hash.
func (s *SpecChecks) Record(uid types.UID, generation int64, specHash string) {
	s.m.Store(uid, specCheck{generation, specHash})
}

// Forget drops what is kept about the object uid.
func (s *SpecChecks) Forget(uid types.UID) { s.m.Delete(uid) }

// Len returns how many objects are remembered.
func (s *SpecChecks) Len() int {
	n := 0
	s.m.Range(func(any, any) bool { n++; return true })
	return n
}

// LastSpecHash returns the spec hash of what the Robot asked for when the
// object uid last held it, as the operator itself applied or checked it;
// false when the operator has not seen it hold since it started. Unlike the
// spec-hash annotation on a Deployment, no other writer can change it.
func (s *SpecChecks) LastSpecHash(uid types.UID) (string, bool) {
	last, ok := s.m.Load(uid)
	if !ok {
		return "", false
	}
	return last.(specCheck).specHash, true
}
