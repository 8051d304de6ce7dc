package events

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Once remembers, per Robot UID, what the operator last warned of about the
// Robot, so that a Warning that holds at every sync (an annotation with a
// value the operator ignores, say) is recorded once, when it first holds,
// and not at every sync. The zero Once is ready to use.
type Once[T comparable] struct{ m sync.Map }

// Fresh returns those of current not warned of for the Robot uid since they
// last held, and remembers current as what holds now: one that stops
// holding, and later holds again, is fresh again. The workqueue syncs one
// Robot at a time, so two calls for one uid never race.
func (o *Once[T]) Fresh(uid types.UID, current []T) []T {
	var warned []T
	if last, ok := o.m.Load(uid); ok {
		warned = last.([]T)
	}
	var fresh []T
	for _, item := range current {
		if !slices.Contains(warned, item) {
			fresh = append(fresh, item)
		}
	}
	if len(current) == 0 {
		o.m.Delete(uid)
	} else {
		o.m.Store(uid, slices.Clone(current))
	}
	return fresh
}

// Forget drops what was warned of about the Robot uid, deleted.
func (o *Once[T]) Forget(uid types.UID) { o.m.Delete(uid) }
