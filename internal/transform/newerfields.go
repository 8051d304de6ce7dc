package transform

import (
	"sync"

	"github.com/robot-operator/robot-operator/internal/conversion"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
)

// NewerFields remembers, by UID, the Robots whose managedFields show spec
// fields this binary's Go types do not know (conversion.NewerFields): Robots
// a newer release wrote, which this one cannot fully read. It is the Robot
// informer's transform: it looks at the managedFields before they are
// dropped, since the cache keeps none, and remembers only the Robots that
// have such fields, so it holds nothing in a cluster where none do.
//
// The verdict is the one of the last version of the Robot the informer
// decoded, which the cache holds a moment later.
type NewerFields struct{ m sync.Map }

// Transform is the Robot informer's transform: it remembers what
// conversion.NewerFields says of the Robot, then drops its managedFields and
// shares its strings as StripManagedFields does.
func (n *NewerFields) Transform(obj interface{}) (interface{}, error) {
	// An object without managedFields was transformed already: a streamed
	// list (WatchList) transforms each object twice, the second time what
	// the first returned. The API server always lists at least the last
	// writer, so a Robot as it comes from it has some.
	if accessor, err := meta.Accessor(obj); err == nil && len(accessor.GetManagedFields()) > 0 {
		if newer := conversion.NewerFields(accessor.GetManagedFields()); len(newer) > 0 {
			n.m.Store(accessor.GetUID(), newer)
		} else {
			n.m.Delete(accessor.GetUID())
		}
	}
	return StripManagedFields(obj)
}

// Of returns the fields of the Robot uid that this binary does not know,
// nil when there are none. A nil NewerFields knows of none.
func (n *NewerFields) Of(uid types.UID) []string {
	if n == nil {
		return nil
	}
	if newer, ok := n.m.Load(uid); ok {
		return newer.([]string)
	}
	return nil
}

// Forget drops what is remembered of the Robot uid, deleted.
func (n *NewerFields) Forget(uid types.UID) {
	if n != nil {
		n.m.Delete(uid)
	}
}

// Len returns how many Robots have fields this binary does not know.
func (n *NewerFields) Len() int {
	if n == nil {
		return 0
	}
	count := 0
	n.m.Range(func(any, any) bool { count++; return true })
	return count
}
