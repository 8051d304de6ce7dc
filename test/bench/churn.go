package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	"github.com/robot-operator/robot-operator/test/internal/task"
)

// churnResult is what a run of spec changes measured.
type churnResult struct {
	changes int           // spec changes sent
	elapsed time.Duration // from the first to the last one sent
	// toSynced and toReady are, per change, from its request to the first
	// status seen Synced (Ready) for its generation or a later one, as the
	// bench's watch saw it; sorted.
	toSynced, toReady []time.Duration
	// The operator's own histograms over the churn: the queue's wait, and
	// its time to Synced and to Ready.
	queueWait, opSynced, opReady histogram
	writes                       *apiCost // the operator's, from the first change to the last Ready
	// cpu is the CPU each cluster process, and the machine, used from the
	// first change to the last Ready.
	cpu cpuUse
}

// specChange is one change sent, and when the Robot's status first showed
// it done.
type specChange struct {
	generation    int64
	sent          time.Time
	synced, ready time.Time
}

// churnWatch follows the Robots' statuses for the changes sent.
type churnWatch struct {
	mu       sync.Mutex
	replicas int32
	pending  map[string][]*specChange // by Robot name
	left     int                      // changes not Ready yet
}

// conditionAtLeast says whether status has the condition True for
// generation or a later one, and observed it.
func conditionAtLeast(status robotv1beta1.RobotStatus, conditionType string, generation int64) bool {
	c := meta.FindStatusCondition(status.Conditions, conditionType)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration >= generation && status.ObservedGeneration >= generation
}

// observe records the changes robot's status shows done, at now.
func (w *churnWatch) observe(robot *robotv1beta1.Robot, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, change := range w.pending[robot.Name] {
		if change.synced.IsZero() && conditionAtLeast(robot.Status, robotv1beta1.ConditionSynced, change.generation) {
			change.synced = now
		}
		if change.ready.IsZero() && conditionAtLeast(robot.Status, robotv1beta1.ConditionReady, change.generation) &&
			robot.Status.AvailableReplicas == w.replicas {
			change.ready = now
			w.left--
		}
	}
}

// sent records a change whose request returned generation.
func (w *churnWatch) sent(name string, change *specChange) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending[name] = append(w.pending[name], change)
	w.left++
}

func (w *churnWatch) remaining() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.left
}

// latencies returns, sorted, each change's time to Synced and to Ready.
func (w *churnWatch) latencies() (toSynced, toReady []time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, changes := range w.pending {
		for _, c := range changes {
			if !c.synced.IsZero() {
				toSynced = append(toSynced, max(c.synced.Sub(c.sent), 0))
			}
			if !c.ready.IsZero() {
				toReady = append(toReady, max(c.ready.Sub(c.sent), 0))
			}
		}
	}
	sort.Slice(toSynced, func(i, j int) bool { return toSynced[i] < toSynced[j] })
	sort.Slice(toReady, func(i, j int) bool { return toReady[i] < toReady[j] })
	return toSynced, toReady
}

// measureChurn changes the image of the n Robots in turn, -churn-rate a
// second for -churn, each change a new generation and a rollout; waits
// until every change is Ready; and returns the latencies the bench saw,
// the operator's own histograms over the churn, and its writes.
func measureChurn(ctx context.Context, e *environment, c *cluster, op *operator, robots cache.SharedIndexInformer, n int) (*churnResult, error) {
	watch := &churnWatch{replicas: e.replicas(), pending: map[string][]*specChange{}}
	onRobot := func(obj any) {
		if robot, ok := obj.(*robotv1beta1.Robot); ok && isBenchNamespace(robot.Namespace) {
			watch.observe(robot, time.Now())
		}
	}
	registration, err := robots.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onRobot, UpdateFunc: func(_, obj any) { onRobot(obj) },
	})
	if err != nil {
		return nil, err
	}
	defer robots.RemoveEventHandler(registration)

	before, err := op.scrape(ctx)
	if err != nil {
		return nil, err
	}
	interval := time.Duration(float64(time.Second) / e.cfg.churnRate)
	total := int(e.cfg.churn.Seconds() * e.cfg.churnRate)
	logf("operator: churn, %d spec changes at %.1f a second", total, e.cfg.churnRate)
	// At most this many requests in flight: a slow API server slows the
	// churn down rather than piling requests up.
	inFlight := make(chan struct{}, 4*e.cfg.concurrency)
	var sending sync.WaitGroup
	var failed error
	var failedOnce sync.Once
	procs := map[string]int{"operator": op.cmd.Process.Pid}
	cpuStart := c.cpuNow(procs)
	start := time.Now()
	ticker := time.NewTicker(interval)
	for k := 0; k < total; k++ {
		if k > 0 {
			select {
			case <-ticker.C:
			case <-ctx.Done():
				ticker.Stop()
				return nil, ctx.Err()
			}
		}
		inFlight <- struct{}{}
		sending.Go(func() {
			defer func() { <-inFlight }()
			i := k % n
			name, namespace := robotName(i), e.namespaceOf(i)
			patch := fmt.Sprintf(`{"spec":{"image":%q}}`, fmt.Sprintf("%s-churn-%d", benchImage, k))
			sent := time.Now()
			robot, err := c.Robots.RobotV1beta1().Robots(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			if err != nil {
				failedOnce.Do(func() { failed = err })
				return
			}
			watch.sent(name, &specChange{generation: robot.Generation, sent: sent})
			// Its status may have moved on before the request returned.
			if cached, ok, _ := robots.GetStore().GetByKey(namespace + "/" + name); ok {
				watch.observe(cached.(*robotv1beta1.Robot), time.Now())
			}
		})
	}
	ticker.Stop()
	sending.Wait()
	if failed != nil {
		return nil, failed
	}
	r := &churnResult{changes: total, elapsed: time.Since(start)}
	if err := task.WaitFor(ctx, e.cfg.timeout, 200*time.Millisecond, "every spec change Ready", func() (bool, error) {
		return watch.remaining() == 0, nil
	}); err != nil {
		return nil, err
	}
	end := time.Now()
	r.cpu = c.cpuNow(procs).since(cpuStart)
	after, err := op.scrape(ctx)
	if err != nil {
		return nil, err
	}
	queue := map[string]string{"name": robotQueue}
	r.queueWait = after.histogram(queueWaitSeries, queue).since(before.histogram(queueWaitSeries, queue))
	r.opSynced = after.histogram(timeToSyncedSeries, nil).since(before.histogram(timeToSyncedSeries, nil))
	r.opReady = after.histogram(timeToReadySeries, nil).since(before.histogram(timeToReadySeries, nil))
	r.toSynced, r.toReady = watch.latencies()
	time.Sleep(2 * time.Second) // for the audit log to catch up
	if r.writes, err = readAudit(c.AuditLog, start, end); err != nil {
		return nil, err
	}
	logf("operator: churn of %d changes in %s; change → Synced p50 %s, p99 %s; → Ready p50 %s, p99 %s; queue wait p50 / p99 %s",
		r.changes, secs(r.elapsed), secs(percentile(r.toSynced, .5)), secs(percentile(r.toSynced, .99)),
		secs(percentile(r.toReady, .5)), secs(percentile(r.toReady, .99)), r.queueWait.quantiles())
	return r, nil
}
