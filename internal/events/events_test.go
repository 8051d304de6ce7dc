package events

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/leader"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/writer"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	restclient "k8s.io/client-go/rest"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
)

func testEvent(reason string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "robot.1"},
		Reason:     reason,
	}
}

// TestEventsShutdownCancelsAWriteThatHangs: a shutdown waits for an Event
// write only until its timeout, then cancels it, so that an API server that
// does not answer cannot hold the Lease past the shutdown.
func TestEventsShutdownCancelsAWriteThatHangs(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	client := k8sfake.NewClientset()
	entered, returned := make(chan struct{}), make(chan struct{})
	e := New(ctx, client.CoreV1(), func() error { return nil })
	gate := e.gate
	written := make(chan error, 1)
	go func() {
		_, err := gate.write(testEvent("Hangs"), func(ctx context.Context, _ typedcorev1.EventInterface) (*corev1.Event, error) {
			close(entered)
			<-ctx.Done()
			// The write is over here; the gate counts it done just
			// after, and the goroutine reports its error later still.
			close(returned)
			return nil, ctx.Err()
		})
		written <- err
	}()
	<-entered
	begin := time.Now()
	e.Shutdown(ctx, 200*time.Millisecond)
	took := time.Since(begin)
	select {
	case <-returned:
	default:
		t.Fatal("shutdown returned while the hanging write was still in flight")
	}
	select {
	case err := <-written:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the hanging write returned %v, want it cancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled write never returned")
	}
	if took < 200*time.Millisecond || took > 5*time.Second {
		t.Errorf("shutdown took %v, want about its 200ms timeout", took)
	}
}

// TestEventGateRefuses: no write after the shutdown, nor while this process
// may not write (it does not hold the Lease); neither is retried.
func TestEventGateRefuses(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	client := k8sfake.NewClientset()
	var mayWrite error
	e := New(ctx, client.CoreV1(), func() error { return mayWrite })

	if _, err := e.gate.Create(testEvent("Written")); err != nil {
		t.Fatalf("Create while open: %v", err)
	}
	mayWrite = leader.ErrNotLeader
	_, err := e.gate.Create(testEvent("NotLeader"))
	var construction *restclient.RequestConstructionError
	if !errors.As(err, &construction) || !errors.Is(construction.Err, leader.ErrNotLeader) {
		t.Errorf("Create when not the leader returned %v, want a request construction error (not retried) wrapping %v", err, leader.ErrNotLeader)
	}
	mayWrite = nil
	e.Shutdown(ctx, time.Second)
	if _, err := e.gate.Create(testEvent("AfterShutdown")); err != errEventsStopped {
		t.Errorf("Create after the shutdown returned %v, want %v", err, errEventsStopped)
	}
	if _, err := e.gate.Patch(testEvent("AfterShutdown"), []byte(`{}`)); err != errEventsStopped {
		t.Errorf("Patch after the shutdown returned %v, want %v", err, errEventsStopped)
	}

	var reasons []string
	for _, action := range client.Actions() {
		if create, ok := action.(core.CreateAction); ok {
			reasons = append(reasons, create.GetObject().(*corev1.Event).Reason)
		}
	}
	if len(reasons) != 1 || reasons[0] != "Written" {
		t.Errorf("Events created %v, want only [Written]", reasons)
	}
}

// discardEvents answers Event writes as the API server would, keeping
// nothing, so that a measure of memory sees only the recorder's.
type discardEvents struct {
	typedcorev1.EventInterface
}

func (discardEvents) Create(_ context.Context, event *corev1.Event, _ metav1.CreateOptions) (*corev1.Event, error) {
	return event, nil
}

func (discardEvents) Patch(_ context.Context, name string, _ types.PatchType, _ []byte, _ metav1.PatchOptions, _ ...string) (*corev1.Event, error) {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
}

type discardEventsGetter struct{}

func (discardEventsGetter) Events(string) typedcorev1.EventInterface { return discardEvents{} }

// BenchmarkEventRecorderMemory: what the Event recorder keeps once 5,000
// Robots have had an Event each (a Deployment created), with client-go's
// default correlator caches and with the operator's. Live heap after a
// collection, divided by the number of Robots:
//
//	go test -run XXX -bench BenchmarkEventRecorderMemory -benchtime=1x .
func BenchmarkEventRecorderMemory(b *testing.B) {
	const robots = 5000
	for _, bc := range []struct {
		name      string
		cacheSize int
	}{{"client-go-default", 4096}, {"operator", eventCorrelatorCacheSize}} {
		b.Run(bc.name, func(b *testing.B) {
			// Not a test logger, which would keep what it is given.
			ctx := context.Background()
			var perRobot float64
			for b.Loop() {
				before := robottest.LiveHeap()
				e := newEventsWithCache(ctx, discardEventsGetter{}, func() error { return nil }, bc.cacheSize)
				for i := range robots {
					robot := robottest.NewRobot(fmt.Sprintf("robot-%05d", i), 1)
					robot.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
					e.Recorder.Eventf(robot, corev1.EventTypeNormal, writer.EventCreated, "Created Deployment %q", robot.Name)
					// Within the broadcaster's queue of 1,000.
					if i%500 == 499 && !e.flush(time.After(time.Minute)) {
						b.Fatal("the Events were not handled within a minute")
					}
				}
				perRobot = float64(robottest.LiveHeap()-before) / robots
				e.Shutdown(ctx, time.Second)
			}
			b.ReportMetric(perRobot, "bytes/robot")
		})
	}
}
