package writer

import (
	"context"

	"github.com/robot-operator/robot-operator/internal/observe"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
)

// NewObserving returns a Writer that writes nothing: each create, apply and
// delete of an object a Robot owns is recorded, with the sync's other
// writes, in report (by RecordCreated, at the end of the sync) and answered
// as if it had been made; a JSON patch, which only prepares an apply, is
// skipped; a status apply is skipped too, and its Robot reported as gone.
// Its Events go nowhere. Nothing is remembered of the writes: the echo
// filters and the spec-check memo hold only what was read. The clients
// given to an observe-only operator refuse every write besides
// (observe.ReadOnly): this only turns the syncs' writes into the report.
func NewObserving(robots clientset.Interface, report *observe.Report) *Writer {
	return &Writer{robots: robots, Recorder: discard{}, observing: report}
}

// Observing reports whether the writer writes nothing (NewObserving).
func (w *Writer) Observing() bool { return w.observing != nil }

// would records, when the writer writes nothing, that the sync of ctx
// would have made change, and reports whether it did: the caller then
// sends nothing.
func (w *Writer) would(ctx context.Context, change observe.Change) bool {
	if w.observing == nil {
		return false
	}
	if collected, ok := ctx.Value(createdKey{}).(*Created); ok && collected != nil {
		collected.mu.Lock()
		collected.would = append(collected.would, change)
		collected.mu.Unlock()
	}
	return true
}

// recordObserved hands the report what robot's sync, collected, would have
// written.
func (w *Writer) recordObserved(robot *robotv1beta1.Robot, collected *Created) {
	collected.mu.Lock()
	changes := collected.would
	collected.mu.Unlock()
	w.observing.Record(robot.UID, cache.MetaObjectToName(robot), changes)
}

// discard is the Event recorder of a writer that writes nothing.
type discard struct{}

func (discard) Event(runtime.Object, string, string, string)                  {}
func (discard) Eventf(runtime.Object, string, string, string, ...interface{}) {}
func (discard) AnnotatedEventf(runtime.Object, map[string]string, string, string, string, ...interface{}) {
}
