package writer

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/robot-operator/robot-operator/internal/observe"

	corev1 "k8s.io/api/core/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// EventCreated is the reason of the Normal Event that names what one sync
// of a Robot created: `Created Deployment "web", Service "web",
// PodDisruptionBudget "web"`. One Event per sync, not one per object: a new
// Robot's creations cost the API server one Event write.
const EventCreated = "Created"

// Created collects what one sync of a Robot creates, in the order it is
// created, for the one Event that names it all.
type Created struct {
	mu      sync.Mutex
	objects []string
	// would are the writes the sync would have made, when the writer
	// writes nothing (NewObserving).
	would []observe.Change
}

type createdKey struct{}

// CollectCreated returns ctx carrying a new collector: every create made
// with the returned context is added to it instead of recording an Event
// of its own. RecordCreated then records the one Event.
func CollectCreated(ctx context.Context) (context.Context, *Created) {
	created := &Created{}
	return context.WithValue(ctx, createdKey{}, created), created
}

// add records that the object of kind and name was created. It reports
// false when ctx carries no collector, and the creator records its own
// Event.
func addCreated(ctx context.Context, kind, name string) bool {
	created, ok := ctx.Value(createdKey{}).(*Created)
	if !ok || created == nil {
		return false
	}
	created.mu.Lock()
	defer created.mu.Unlock()
	created.objects = append(created.objects, fmt.Sprintf("%s %q", kind, name))
	return true
}

// Objects returns what was created, each as `Kind "name"`, in order.
func (c *Created) Objects() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.objects...)
}

// RecordCreated records one Normal Event on robot naming everything
// created collected, when it holds anything.
func (w *Writer) RecordCreated(robot *robotv1beta1.Robot, created *Created) {
	if w.observing != nil {
		w.recordObserved(robot, created)
		return
	}
	if objects := created.Objects(); len(objects) > 0 {
		w.Recorder.Event(robot, corev1.EventTypeNormal, EventCreated, "Created "+strings.Join(objects, ", "))
	}
}
