package echo

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// RecentWrites remembers the objects the operator has just written until
// the informer cache catches up with them. Without it, a sync that runs
// before the watch event of the previous write arrives would compare with
// the stale cached object and write the same thing again.
//
// client-go's MutationCache does the first half of this (the newer of the
// cache and a written object), but it keys objects by namespace and name,
// so a Robot deleted and created again could be answered with its
// predecessor, and it keeps every write for a fixed time rather than until
// the cache has caught up. It does not tell an echo from a change either.
type RecentWrites[T metav1.Object] struct {
	objects sync.Map // types.UID → T
}

// Remember records obj as written.
func (r *RecentWrites[T]) Remember(obj T) {
	r.objects.Store(obj.GetUID(), obj)
}

// Freshest returns the newer of cached and the object last written with
// its UID, and forgets the written one once the cache has caught up.
func (r *RecentWrites[T]) Freshest(cached T) T {
	value, ok := r.objects.Load(cached.GetUID())
	if !ok {
		return cached
	}
	written := value.(T)
	if cmp, err := resourceversion.CompareResourceVersion(written.GetResourceVersion(), cached.GetResourceVersion()); err == nil && cmp > 0 {
		return written
	}
	r.objects.CompareAndDelete(cached.GetUID(), value)
	return cached
}

// IsOwnWrite reports whether obj, just arrived from a watch, is exactly
// the object last written with its UID: the echo of the operator's own
// write, which tells a sync nothing new. The cache has then caught up, so
// the written object is forgotten.
func (r *RecentWrites[T]) IsOwnWrite(obj T) bool {
	value, ok := r.objects.Load(obj.GetUID())
	if !ok || value.(T).GetResourceVersion() != obj.GetResourceVersion() {
		return false
	}
	r.objects.CompareAndDelete(obj.GetUID(), value)
	return true
}

// Forget drops what was remembered for uid.
func (r *RecentWrites[T]) Forget(uid types.UID) {
	r.objects.Delete(uid)
}

// Len is the number of objects remembered.
func (r *RecentWrites[T]) Len() int {
	n := 0
	r.objects.Range(func(any, any) bool { n++; return true })
	return n
}
