package events

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// Events records the Events about Robots and writes them to the API server
// through a gate, so that a shutdown can end with every Event written and
// none in flight.
//
// The broadcaster writes Events from a goroutine of its own, after the sync
// that recorded them has returned. A shutdown therefore flushes it once the
// workers have stopped: a marker goes through the queue behind every Event
// already recorded, and when it reaches the sink they have all been
// handled. Then the gate closes, waiting for a write in flight, and refuses
// any later one. With leader election the Lease is released only after
// that, so no Event is written alongside the next leader's writes.
type Events struct {
	broadcaster record.EventBroadcaster
	Recorder    record.EventRecorder
	gate        *eventGate
	flushes     atomic.Int64
}

// New starts a broadcaster that writes through client. mayWrite is
// asked before every write; the broadcaster runs until shutdown, whatever
// becomes of ctx, which only gives it its logger.
func New(ctx context.Context, client typedcorev1.EventsGetter, mayWrite func() error) *Events {
	return newEventsWithCache(ctx, client, mayWrite, eventCorrelatorCacheSize)
}

// newEventsWithCache is New with correlator caches of cacheSize.
func newEventsWithCache(ctx context.Context, client typedcorev1.EventsGetter, mayWrite func() error, cacheSize int) *Events {
	writeCtx, cancelWrites := context.WithCancel(context.WithoutCancel(ctx))
	gate := &eventGate{
		client:       client,
		mayWrite:     mayWrite,
		ctx:          writeCtx,
		cancelWrites: cancelWrites,
		flushed:      map[types.UID]chan struct{}{},
	}
	broadcaster := record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)),
		record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: cacheSize}))
	broadcaster.StartStructuredLogging(4)
	broadcaster.StartRecordingToSink(gate)
	return &Events{
		broadcaster: broadcaster,
		Recorder:    broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component}),
		gate:        gate,
	}
}

// Shutdown waits up to timeout for the Events recorded so far to be
// written, then stops every write: when it returns, no Event write is in
// flight and none will start. A write still unanswered at the timeout (the
// API server is down, say) is cancelled, and Events not yet written are
// dropped: the log says so.
func (e *Events) Shutdown(ctx context.Context, timeout time.Duration) {
	logger := klog.FromContext(ctx)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	if e.flush(deadline.C) {
		logger.V(2).Info("Events written")
	} else {
		logger.Info("Gave up writing the remaining Events", "timeout", timeout)
	}
	e.gate.close(deadline.C)
	e.broadcaster.Shutdown()
}

// flush reports whether every Event recorded before it was called has been
// handled (written, or given up on) before giveUp fires.
func (e *Events) flush(giveUp <-chan time.Time) bool {
	marker := types.UID(fmt.Sprintf("robot-operator-flush-%d", e.flushes.Add(1)))
	flushed := e.gate.expectFlush(marker)
	// The marker is never written: the gate recognises it.
	e.Recorder.Event(&corev1.ObjectReference{Kind: "Flush", Name: string(marker), UID: marker},
		corev1.EventTypeNormal, flushReason, "")
	select {
	case <-flushed:
		return true
	case <-giveUp:
		return false
	}
}

// component is the source of the operator's Events.
const component = "robot-operator"

// eventCorrelatorCacheSize bounds each of the three caches with which the
// broadcaster counts repeats, aggregates similar Events and limits the
// Events about one object, by the objects they remember. client-go's
// default, 4096, holds some 1.2 KB per object across the three: about
// 5 MiB once 4096 Robots have had an Event, more than the rest of the
// operator's state for as many Robots. The operator records an Event only
// when something changes (a Deployment created, a new cause), so a repeat
// that finds its object forgotten, hundreds of other objects' Events later,
// is rare; it is then written as a new Event instead of a count.
const eventCorrelatorCacheSize = 512

// flushReason marks the flush event, which the gate never writes.
const flushReason = "RobotOperatorFlush"

// errEventsStopped is what a write that comes after the shutdown gets. It
// is a request construction error so that the broadcaster drops the Event
// rather than retry it.
var errEventsStopped = &restclient.RequestConstructionError{Err: errors.New("not written: the operator has stopped writing Events for its shutdown")}

// eventGate is a record.EventSink that writes only while open and while
// mayWrite allows, each write under a context that close can cancel.
type eventGate struct {
	client       typedcorev1.EventsGetter
	mayWrite     func() error
	ctx          context.Context
	cancelWrites context.CancelFunc

	mu       sync.Mutex
	closed   bool
	inFlight sync.WaitGroup

	flushMu sync.Mutex
	flushed map[types.UID]chan struct{}
}

func (g *eventGate) expectFlush(uid types.UID) <-chan struct{} {
	g.flushMu.Lock()
	defer g.flushMu.Unlock()
	ch := make(chan struct{})
	g.flushed[uid] = ch
	return ch
}

// flush reports whether event is a flush marker, and marks it reached.
func (g *eventGate) flush(event *corev1.Event) bool {
	if event.Reason != flushReason {
		return false
	}
	g.flushMu.Lock()
	defer g.flushMu.Unlock()
	ch, ok := g.flushed[event.InvolvedObject.UID]
	if !ok {
		return false
	}
	delete(g.flushed, event.InvolvedObject.UID)
	close(ch)
	return true
}

// close refuses every later write, and returns once the writes in flight
// have returned: at once if there are none, when they are answered, or
// when cut off, once giveUp fires, by cancelling their context.
func (g *eventGate) close(giveUp <-chan time.Time) {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	done := make(chan struct{})
	go func() { g.inFlight.Wait(); close(done) }()
	select {
	case <-done:
	case <-giveUp:
		g.cancelWrites()
		<-done
	}
	g.cancelWrites()
}

func (g *eventGate) write(event *corev1.Event, write func(ctx context.Context, events typedcorev1.EventInterface) (*corev1.Event, error)) (*corev1.Event, error) {
	if g.flush(event) {
		return event, nil
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, errEventsStopped
	}
	g.inFlight.Add(1)
	g.mu.Unlock()
	defer g.inFlight.Done()
	if err := g.mayWrite(); err != nil {
		return nil, &restclient.RequestConstructionError{Err: fmt.Errorf("not written: %w", err)}
	}
	return write(g.ctx, g.client.Events(event.Namespace))
}

func (g *eventGate) Create(event *corev1.Event) (*corev1.Event, error) {
	return g.write(event, func(ctx context.Context, events typedcorev1.EventInterface) (*corev1.Event, error) {
		return events.Create(ctx, event, metav1.CreateOptions{})
	})
}

func (g *eventGate) Update(event *corev1.Event) (*corev1.Event, error) {
	return g.write(event, func(ctx context.Context, events typedcorev1.EventInterface) (*corev1.Event, error) {
		return events.Update(ctx, event, metav1.UpdateOptions{})
	})
}

func (g *eventGate) Patch(event *corev1.Event, data []byte) (*corev1.Event, error) {
	return g.write(event, func(ctx context.Context, events typedcorev1.EventInterface) (*corev1.Event, error) {
		return events.Patch(ctx, event.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
	})
}
