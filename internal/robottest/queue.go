package robottest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Bounds on waits for something that should happen at once or after a few
// milliseconds. They are generous, so that a loaded machine running the
// tests under -race never fails them; a controller that is actually broken
// misses them by far more, or never gets there at all.
const (
	Soon      = 10 * time.Second
	pollEvery = time.Millisecond
)

// DrainQueue takes every Robot queued right now, in order, and marks each
// one done. It never blocks: it calls Get only while the queue holds items.
func DrainQueue(q workqueue.TypedRateLimitingInterface[cache.ObjectName]) []cache.ObjectName {
	var keys []cache.ObjectName
	for q.Len() > 0 {
		key, shutdown := q.Get()
		if shutdown {
			break
		}
		q.Done(key)
		keys = append(keys, key)
	}
	return keys
}

// WaitFor polls cond until it holds, failing the test if it still does not
// after Soon.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Soon)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting, after %v, for %s", Soon, what)
		}
		time.Sleep(pollEvery)
	}
}

// QueueCall is one call that put a Robot back in the queue, or reset its
// backoff.
type QueueCall struct {
	Method string // Add, AddAfter, AddRateLimited or Forget
	Key    cache.ObjectName
	After  time.Duration // AddAfter only
}

func (c QueueCall) String() string {
	if c.Method == "AddAfter" {
		return fmt.Sprintf("AddAfter(%v, %v)", c.Key, c.After)
	}
	return fmt.Sprintf("%s(%v)", c.Method, c.Key)
}

// RecordingQueue passes everything to the queue it wraps, and records the
// calls that requeue an item or reset its backoff: the queue's state alone
// cannot tell, without waiting, an item added after a delay from one not
// added at all.
type RecordingQueue struct {
	workqueue.TypedRateLimitingInterface[cache.ObjectName]
	mu    sync.Mutex
	calls []QueueCall
}

func (q *RecordingQueue) record(call QueueCall) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, call)
}

// Recorded returns the calls recorded so far, as fmt.Sprint writes a
// []QueueCall.
func (q *RecordingQueue) Recorded() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return fmt.Sprint(q.calls)
}

// Add records the call and passes it on.
func (q *RecordingQueue) Add(key cache.ObjectName) {
	q.record(QueueCall{Method: "Add", Key: key})
	q.TypedRateLimitingInterface.Add(key)
}

// AddAfter records the call and passes it on.
func (q *RecordingQueue) AddAfter(key cache.ObjectName, after time.Duration) {
	q.record(QueueCall{Method: "AddAfter", Key: key, After: after})
	q.TypedRateLimitingInterface.AddAfter(key, after)
}

// AddRateLimited records the call and passes it on.
func (q *RecordingQueue) AddRateLimited(key cache.ObjectName) {
	q.record(QueueCall{Method: "AddRateLimited", Key: key})
	q.TypedRateLimitingInterface.AddRateLimited(key)
}

// Forget records the call and passes it on.
func (q *RecordingQueue) Forget(key cache.ObjectName) {
	q.record(QueueCall{Method: "Forget", Key: key})
	q.TypedRateLimitingInterface.Forget(key)
}
