package lanes

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

func newQueue() *Queue[string] {
	return New("lanes_test", workqueue.DefaultTypedControllerRateLimiter[string]())
}

// take gets the next item and marks it done, with whether it was taken as
// a report.
func take(t *testing.T, q *Queue[string]) (string, bool) {
	t.Helper()
	item, shutdown := q.Get()
	if shutdown {
		t.Fatal("the queue shut down")
	}
	reporting := q.Reporting(item)
	q.Done(item)
	return item, reporting
}

func changes(n int) []string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("change-%04d", i)
	}
	return items
}

func TestReportIsTakenBeforeTheChanges(t *testing.T) {
	q := newQueue()
	defer q.ShutDown()
	for _, item := range changes(1000) {
		q.Add(item)
	}
	q.AddReport("ready")

	if item, reporting := take(t, q); item != "ready" || !reporting {
		t.Errorf("took %q (as a report: %v), want the report, ahead of 1,000 changes", item, reporting)
	}
	if item, reporting := take(t, q); item != "change-0000" || reporting {
		t.Errorf("then took %q (as a report: %v), want the first change", item, reporting)
	}
	if changes, reports := q.Lens(); changes != 999 || reports != 0 {
		t.Errorf("lanes hold %d changes and %d reports, want 999 and 0", changes, reports)
	}
}

// TestAReportTakesAChangeOut: the caller reports only for a Robot whose
// spec is in place, so what waits for it among the changes is the echo of
// its own sync's write, a recheck or a retry: the report's sync does it too.
func TestAReportTakesAChangeOut(t *testing.T) {
	q := newQueue()
	defer q.ShutDown()
	q.Add("first")
	q.Add("robot")
	q.AddReport("robot")

	if item, reporting := take(t, q); item != "robot" || !reporting {
		t.Errorf("took %q (as a report: %v), want the Robot as a report, ahead of the change queued first", item, reporting)
	}
	if item, reporting := take(t, q); item != "first" || reporting {
		t.Errorf("took %q (as a report: %v), want the first change", item, reporting)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d items queued, want none: the Robot was queued once", n)
	}
}

func TestAReportAlreadyQueuedStaysAhead(t *testing.T) {
	q := newQueue()
	defer q.ShutDown()
	q.Add("first")
	q.AddReport("robot")
	q.Add("robot") // its sync, ahead of the changes, does the change too

	if item, reporting := take(t, q); item != "robot" || !reporting {
		t.Errorf("took %q (as a report: %v), want the Robot, queued once, in the reports lane", item, reporting)
	}
	if n := q.Len(); n != 1 {
		t.Errorf("%d items queued, want 1: an item is queued once", n)
	}
}

func TestPostponedWaitsAmongTheChangesUntilAReport(t *testing.T) {
	q := newQueue()
	defer q.ShutDown()
	q.AddReport("robot")
	item, _ := q.Get()
	q.Add("change-0")
	q.Postpone(item) // its report had only progress to say
	q.Add("change-1")
	q.Done(item)

	if changes, reports := q.Lens(); changes != 3 || reports != 0 {
		t.Fatalf("lanes hold %d changes and %d reports, want the postponed Robot among 3 changes", changes, reports)
	}
	if item, reporting := take(t, q); item != "change-0" || reporting {
		t.Fatalf("took %q (as a report: %v), want the change queued before the postponed Robot", item, reporting)
	}
	q.AddReport("robot") // its Deployment became Available
	if item, reporting := take(t, q); item != "robot" || !reporting {
		t.Errorf("took %q (as a report: %v), want the postponed Robot, taken out of the changes by its report", item, reporting)
	}
	if item, _ := take(t, q); item != "change-1" {
		t.Errorf("took %q, want change-1", item)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d items queued, want none: the postponed Robot was queued once", n)
	}
}

// TestAChangeLeavesAnItemWhereItWaits: an add that is not a report neither
// takes an item out of the reports lane nor sends it to the back of the
// changes.
func TestAChangeLeavesAnItemWhereItWaits(t *testing.T) {
	q := newQueue()
	defer q.ShutDown()
	q.AddReport("robot")
	item, _ := q.Get()
	q.Postpone(item)
	q.Done(item)
	q.Add("change-0")
	q.Add("robot")
	q.Postpone("robot")

	for _, want := range []string{"robot", "change-0"} {
		if item, reporting := take(t, q); item != want || reporting {
			t.Errorf("took %q (as a report: %v), want %q as a change", item, reporting, want)
		}
	}
}

// TestEchoDuringItsSyncDoesNotHoldTheReportBack: an add that is not a
// report, during the item's sync (the echo of its write, seen before the
// write's answer), does not keep a report made meanwhile among the changes.
func TestEchoDuringItsSyncDoesNotHoldTheReportBack(t *testing.T) {
	q := newQueue()
	defer q.ShutDown()
	q.Add("robot")
	item, _ := q.Get()
	q.Add("change-0")
	q.AddReport(item) // its Deployment, just created, observed
	q.Add(item)       // the echo of its status write
	q.Done(item)

	if item, reporting := take(t, q); item != "robot" || !reporting {
		t.Errorf("took %q (as a report: %v), want the Robot as a report", item, reporting)
	}
}

func TestReportDuringItsSyncIsTakenAhead(t *testing.T) {
	q := newQueue()
	defer q.ShutDown()
	q.AddReport("robot")
	item, _ := q.Get()
	q.Add("change-0")
	q.Postpone(item)
	q.AddReport(item) // the Deployment became Available while the report was synced
	q.Done(item)

	if item, reporting := take(t, q); item != "robot" || !reporting {
		t.Errorf("took %q (as a report: %v), want the Robot again, as a report", item, reporting)
	}
}

func TestDelayedAddsAreChanges(t *testing.T) {
	q := newQueue()
	defer q.ShutDown()
	q.Add("change-0")
	q.AddRateLimited("retry")
	q.AddAfter("recheck", time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for q.Len() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	q.AddReport("report")

	var order []string
	for q.Len() > 0 {
		item, _ := take(t, q)
		order = append(order, item)
	}
	if got, want := fmt.Sprint(order), "[report change-0 retry recheck]"; got != want && fmt.Sprint(order) != "[report change-0 recheck retry]" {
		t.Errorf("taken in the order %s, want %s: a retry and a delayed add wait among the changes", got, want)
	}
}

// TestReportsDoNotStarveTheChanges: however many reports keep coming, a
// change is taken at least once every ReportsPerChange+1 turns.
func TestReportsDoNotStarveTheChanges(t *testing.T) {
	q := newQueue()
	defer q.ShutDown()
	for _, item := range changes(10) {
		q.Add(item)
	}
	for i := range 1000 {
		q.AddReport(fmt.Sprintf("report-%04d", i))
	}

	since := 0
	for turn := range 10 * (ReportsPerChange + 1) {
		item, reporting := take(t, q)
		if reporting {
			since++
			// A flood: each report taken brings another.
			q.AddReport(item + "+")
		} else {
			since = 0
		}
		if since > ReportsPerChange {
			t.Fatalf("turn %d: %d reports in a row while changes waited, want at most %d", turn, since, ReportsPerChange)
		}
	}
	if changes, _ := q.Lens(); changes != 0 {
		t.Errorf("%d changes still wait after %d turns, want none", changes, 10*(ReportsPerChange+1))
	}
}

// TestNoItemIsSyncedByTwoWorkersAtOnce: whichever lanes an item is added to,
// as a change, a report or postponed, while workers have it or not, no two
// workers have it at the same time, and every add is followed by a sync.
func TestNoItemIsSyncedByTwoWorkersAtOnce(t *testing.T) {
	q := newQueue()
	const workers, items, adds = 8, 5, 20000
	var (
		inFlight  [items]atomic.Int32
		overlaps  atomic.Int32
		processed atomic.Int64
		wg        sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				var i int
				fmt.Sscanf(item, "item-%d", &i)
				if inFlight[i].Add(1) != 1 {
					overlaps.Add(1)
				}
				if rand.IntN(4) == 0 && q.Reporting(item) {
					q.Postpone(item)
				}
				time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
				inFlight[i].Add(-1)
				processed.Add(1)
				q.Done(item)
			}
		})
	}
	for n := range adds {
		item := fmt.Sprintf("item-%d", rand.IntN(items))
		switch n % 3 {
		case 0:
			q.Add(item)
		case 1:
			q.AddReport(item)
		default:
			q.Postpone(item)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for q.Len() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	q.ShutDownWithDrain()
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d times a worker took an item another worker had", n)
	}
	if processed.Load() == 0 {
		t.Error("nothing processed")
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d items left queued", n)
	}
	q.lanes.mu.Lock()
	defer q.lanes.mu.Unlock()
	if len(q.lanes.marks) != 0 || len(q.lanes.taken) != 0 || len(q.lanes.queued) != 0 || len(q.lanes.in) != 0 {
		t.Errorf("left behind: %d marks, %d taken, %d queued, %d in lanes; want none once all is done", len(q.lanes.marks), len(q.lanes.taken), len(q.lanes.queued), len(q.lanes.in))
	}
}

// recordingProvider counts the adds of each queue by name.
type recordingProvider struct {
	mu   sync.Mutex
	adds map[string]*counter
}

type counter struct{ n atomic.Int64 }

func (c *counter) Inc() { c.n.Add(1) }

type noopGauge struct{}

func (noopGauge) Inc()            {}
func (noopGauge) Dec()            {}
func (noopGauge) Set(float64)     {}
func (noopGauge) Observe(float64) {}

func (p *recordingProvider) NewDepthMetric(string) workqueue.GaugeMetric { return noopGauge{} }
func (p *recordingProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := &counter{}
	p.adds[name] = c
	return c
}
func (p *recordingProvider) NewLatencyMetric(string) workqueue.HistogramMetric { return noopGauge{} }
func (p *recordingProvider) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return noopGauge{}
}
func (p *recordingProvider) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noopGauge{}
}
func (p *recordingProvider) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noopGauge{}
}
func (p *recordingProvider) NewRetriesMetric(string) workqueue.CounterMetric { return &counter{} }

// TestTheQueueKeepsItsMetrics: both lanes are one named client-go queue,
// whose metrics count every add, whatever its lane.
func TestTheQueueKeepsItsMetrics(t *testing.T) {
	provider := &recordingProvider{adds: map[string]*counter{}}
	q := New("robot_lanes_metrics", workqueue.DefaultTypedControllerRateLimiter[string](),
		WithMetricsProvider(provider))
	defer q.ShutDown()
	q.Add("a")
	q.AddReport("b")
	q.Postpone("c")
	q.AddReport("a") // queued already: not another add

	provider.mu.Lock()
	adds, ok := provider.adds["robot_lanes_metrics"]
	provider.mu.Unlock()
	if !ok {
		t.Fatalf("no adds metric under the queue's name; metrics made for %v", provider.adds)
	}
	if n := adds.n.Load(); n != 3 {
		t.Errorf("adds = %d, want 3", n)
	}
}

// TestAReportTakesADelayedAddOut: a recheck or a retry only looks at the
// item again; the report that comes while it waits looks now, ahead of the
// changes.
func TestAReportTakesADelayedAddOut(t *testing.T) {
	for name, add := range map[string]func(q *Queue[string]){
		"AddAfter":       func(q *Queue[string]) { q.AddAfter("robot", time.Millisecond) },
		"AddRateLimited": func(q *Queue[string]) { q.AddRateLimited("robot") },
	} {
		t.Run(name, func(t *testing.T) {
			q := newQueue()
			defer q.ShutDown()
			q.Add("change-0")
			add(q)
			deadline := time.Now().Add(10 * time.Second)
			for q.Len() < 2 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			q.AddReport("robot")

			if item, reporting := take(t, q); item != "robot" || !reporting {
				t.Errorf("took %q (as a report: %v), want the Robot, taken out of the changes by its report", item, reporting)
			}
		})
	}
}
