package drift

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Version is what says that an owned object may have changed since it was
// last seen: its generation, for a kind whose generation changes with every
// change of its spec (a Deployment); its resourceVersion otherwise (a
// Service, whose generation does not move), which changes with any write of
// the object.
type Version struct {
	Generation      int64
	ResourceVersion string
}

// specCheck is an owned object's version and the spec hash of what the
// Robot asked for, when the two specs last matched.
type specCheck struct {
	version  Version
	specHash string
}

// SpecChecks is the spec-check memo: for each object a Robot owns (by UID),
// the version and spec hash at which its spec last showed no drift, so that
// the costly comparison of specs runs once per change, not on every status
// update. Any change to a Deployment's spec raises its generation, any write
// of a Service its resourceVersion, and any change to the Robot's spec its
// spec hash. Its writer (internal/writer) owns it.
type SpecChecks struct{ m sync.Map }

// Unchanged reports whether the object uid's spec matched the Robot's at
// this version and spec hash.
func (s *SpecChecks) Unchanged(uid types.UID, version Version, specHash string) bool {
	last, ok := s.m.Load(uid)
	return ok && last.(specCheck) == specCheck{version, specHash}
}

// Record notes that the object uid's spec matched at this version and spec
// hash.
func (s *SpecChecks) Record(uid types.UID, version Version, specHash string) {
	s.m.Store(uid, specCheck{version, specHash})
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
