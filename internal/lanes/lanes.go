// Package lanes is the Controller's work queue: client-go's rate-limited
// queue, named for its metrics, whose items wait in two lanes.
//
// A change (a Robot created or changed, an object of its deleted, a retry)
// waits in the changes lane, first in, first out. A report (an event of a
// Robot whose spec is in place, which only asks for its status to say what
// the cluster did) waits in the reports lane, which workers take from first:
// a Robot whose Deployment became Available is not synced after the
// thousands of creations of a burst. A report takes its item out of the
// changes lane if it waits there (see Queue). While both lanes hold items,
// at most ReportsPerChange reports are taken in a row before a change, so
// that a flood of reports cannot starve the creations.
//
// Both lanes are the storage of one client-go queue (workqueue.Queue), so
// that queue's guarantees hold across them: an item is queued at most once,
// in one lane, and never handed to two workers at the same time.
package lanes

import (
	"container/list"
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// ReportsPerChange is how many reports a worker takes in a row, at most,
// while a change waits: the changes keep at least a fifth of the workers'
// turns whatever the reports.
const ReportsPerChange = 4

// Lane is where an item waits.
type Lane int

const (
	// Changes holds the items whose sync has something to write besides
	// the status: the default.
	Changes Lane = iota
	// Reports holds the items whose sync only reports.
	Reports
)

// kind is why an item was added: a report or not. The lane of an item
// added more than once before it is stored is the reports lane if any of
// the adds was a report.
type kind int

const (
	// change: a change, a postponed report, or an add that says nothing
	// (a retry, a delayed add, which client-go's queue makes itself).
	change kind = iota
	// report: a report.
	report
)

// Queue is the Controller's work queue. Add queues a change; AddReport a
// report; Postpone, from the sync of a report, queues it again among the
// changes; AddAfter and AddRateLimited queue among the changes too. A report
// takes its item to the reports lane wherever it waits: the caller reports
// only for a Robot whose spec is in place, so what waits among the changes
// for it is a recheck, a retry, its progress postponed, or the echo of a
// write its own sync made (which can reach the informer before the write's
// answer), and its sync does all of that too, sooner.
type Queue[T comparable] struct {
	workqueue.TypedRateLimitingInterface[T]
	lanes *storage[T]
}

// Option changes how New makes a Queue.
type Option func(*options)

type options struct{ metrics workqueue.MetricsProvider }

// WithMetricsProvider gives the queue's metrics to provider instead of
// client-go's global one.
func WithMetricsProvider(provider workqueue.MetricsProvider) Option {
	return func(o *options) { o.metrics = provider }
}

// New returns a Queue named name (its client-go metrics are under that
// name) whose retries limiter delays.
func New[T comparable](name string, limiter workqueue.TypedRateLimiter[T], opts ...Option) *Queue[T] {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	lanes := &storage[T]{
		queued: map[T]*list.Element{},
		in:     map[T]Lane{},
		marks:  map[T]kind{},
		taken:  map[T]Lane{},
	}
	queue := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Name: name, MetricsProvider: o.metrics, Queue: lanes})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{Name: name, MetricsProvider: o.metrics, Queue: queue})
	return &Queue[T]{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(limiter,
			workqueue.TypedRateLimitingQueueConfig[T]{Name: name, MetricsProvider: o.metrics, DelayingQueue: delaying}),
		lanes: lanes,
	}
}

// Add queues item as a change, in the changes lane unless it already waits
// among the reports (its sync there does the change too).
func (q *Queue[T]) Add(item T) { q.add(item, change) }

// AddReport queues item as a report, in the reports lane, taking it out of
// the changes lane if it waits there.
func (q *Queue[T]) AddReport(item T) { q.add(item, report) }

// Postpone queues item, being synced as a report, again at the back of the
// changes lane: what its status would say now can wait as long as the
// changes do. A report for it before then takes it to the reports lane.
func (q *Queue[T]) Postpone(item T) { q.add(item, change) }

// add marks why item is queued, then queues it. The mark is read when the
// queue stores the item, which it does at once, or once a worker is done
// with the item if one has it.
func (q *Queue[T]) add(item T, why kind) {
	q.lanes.mark(item, why)
	q.TypedRateLimitingInterface.Add(item)
}

// Reporting reports whether item, which a worker has, was taken from the
// reports lane.
func (q *Queue[T]) Reporting(item T) bool {
	q.lanes.mu.Lock()
	defer q.lanes.mu.Unlock()
	return q.lanes.taken[item] == Reports
}

// Done marks item done, as client-go's queue does.
func (q *Queue[T]) Done(item T) {
	q.lanes.mu.Lock()
	delete(q.lanes.taken, item)
	q.lanes.mu.Unlock()
	q.TypedRateLimitingInterface.Done(item)
}

// Lens returns how many items wait in each lane.
func (q *Queue[T]) Lens() (changes, reports int) {
	q.lanes.mu.Lock()
	defer q.lanes.mu.Unlock()
	return q.lanes.lanes[Changes].Len(), q.lanes.lanes[Reports].Len()
}

// storage is the two lanes, as client-go's queue stores its items: it calls
// Push, Touch, Pop and Len under its own lock. The marks are set outside
// that lock, so storage has a lock of its own.
type storage[T comparable] struct {
	mu sync.Mutex
	// lanes are first in, first out; an element's value is its item.
	lanes [2]list.List
	// queued finds each stored item's element, to move it between lanes;
	// in is the lane it is in.
	queued map[T]*list.Element
	in     map[T]Lane
	// marks are the reports added and not yet stored.
	marks map[T]kind
	// taken is the lane each item a worker has was taken from.
	taken map[T]Lane
	// reportsInARow counts the reports taken while a change waited.
	reportsInARow int
}

// mark records why item is added: a report stays marked until the item is
// stored.
func (s *storage[T]) mark(item T, why kind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if why > s.marks[item] {
		s.marks[item] = why
	}
}

// takeMark returns and forgets the mark of item.
func (s *storage[T]) takeMark(item T) kind {
	why := s.marks[item]
	delete(s.marks, item)
	return why
}

func laneOf(why kind) Lane {
	if why == report {
		return Reports
	}
	return Changes
}

// Push stores item, not stored, in the lane its mark says.
func (s *storage[T]) Push(item T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lane := laneOf(s.takeMark(item))
	s.queued[item] = s.lanes[lane].PushBack(item)
	s.in[item] = lane
}

// Touch takes note of an add of item, which is stored: a report takes it
// to the reports lane. Nothing leaves the reports lane: its sync does
// whatever the item needs, and sooner.
func (s *storage[T]) Touch(item T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.takeMark(item) != report || s.in[item] == Reports {
		return
	}
	s.lanes[Changes].Remove(s.queued[item])
	s.queued[item] = s.lanes[Reports].PushBack(item)
	s.in[item] = Reports
}

// Len returns how many items are stored.
func (s *storage[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queued)
}

// Pop takes the next item: a report first, unless ReportsPerChange
// reports were taken in a row while a change waited.
func (s *storage[T]) Pop() T {
	s.mu.Lock()
	defer s.mu.Unlock()
	lane := Changes
	if s.lanes[Reports].Len() > 0 && (s.lanes[Changes].Len() == 0 || s.reportsInARow < ReportsPerChange) {
		lane = Reports
	}
	switch {
	case lane == Changes:
		s.reportsInARow = 0
	case s.lanes[Changes].Len() > 0:
		s.reportsInARow++
	}
	item := s.lanes[lane].Remove(s.lanes[lane].Front()).(T)
	delete(s.queued, item)
	delete(s.in, item)
	s.taken[item] = lane
	return item
}
