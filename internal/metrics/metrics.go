package metrics

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/robot-operator/robot-operator/internal/status"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	listers "github.com/robot-operator/robot-operator/pkg/generated/listers/robot/v1beta1"
)

const metricsNamespace = "robot_operator"

// ControllerMetrics are the operator's own metrics. They exist whether or
// not they are registered, so the controller never checks.
type ControllerMetrics struct {
	Syncs        *prometheus.CounterVec
	SyncDuration prometheus.Histogram
	TimeToSynced prometheus.Histogram
	TimeToReady  prometheus.Histogram
	Leader       prometheus.Gauge
	// Preflight counts the checks of changed pod templates, by outcome
	// (internal/preflight's Outcomes).
	Preflight *prometheus.CounterVec
}

// Leading runs run, the controller's workers, with the leader gauge at 1
// for as long as they run.
func (m *ControllerMetrics) Leading(run func() error) error {
	m.Leader.Set(1)
	defer m.Leader.Set(0)
	return run()
}

func NewControllerMetrics() *ControllerMetrics {
	return &ControllerMetrics{
		Syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace,
			Name:      "syncs_total",
			Help:      "Robot syncs, by result: success, or error (retried with backoff).",
		}, []string{"result"}),
		SyncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: metricsNamespace,
			Name:      "sync_duration_seconds",
			Help:      "How long one Robot sync takes, API requests included.",
			Buckets:   prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5ms .. 16s
		}),
		TimeToSynced: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: metricsNamespace,
			Name:      "time_to_synced_seconds",
			Help:      "From the operator first seeing a Robot's new generation (a create or a spec change) to the Robot reporting Synced=True for that generation: its Deployment and Service hold that spec.",
			// Queue wait and one sync: milliseconds when idle, seconds
			// under a burst.
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}),
		TimeToReady: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: metricsNamespace,
			Name:      "time_to_ready_seconds",
			Help:      "From the operator first seeing a Robot's new generation (a create or a spec change) to the Robot reporting Ready=True for that generation.",
			Buckets:   []float64{0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 600, 1800},
		}),
		// The followers' 0 matters as much as the leader's 1: the sum
		// over replicas tells "no leader" from "no operator".
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: metricsNamespace,
			Name:      "leader",
			Help:      "1 while this replica runs the workers (it holds the Lease, or runs without leader election), 0 otherwise.",
		}),
		Preflight: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace,
			Name:      "preflight_checks_total",
			Help:      "Checks of a Robot's changed pod template before its Deployment is written, by outcome: passed, rejected (not written), or unavailable, unsupported, forbidden (the check could not tell, and the change was written); deferred counts the checks that waited for their turn of -preflight-qps, each counted again with its outcome once made.",
		}, []string{"outcome"}),
	}
}

var robotsDesc = prometheus.NewDesc(metricsNamespace+"_robots",
	"Robots in the operator's cache, by the status of their Ready condition (Unknown when it has none yet).",
	[]string{"ready"}, nil)

// RobotsCollector counts Robots by Ready condition from the informer cache,
// so the figure is never out of step with what the operator sees.
type RobotsCollector struct{ Lister listers.RobotLister }

func (rc *RobotsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- robotsDesc }

func (rc *RobotsCollector) Collect(ch chan<- prometheus.Metric) {
	robots, err := rc.Lister.List(labels.Everything())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(robotsDesc, err)
		return
	}
	counts := map[metav1.ConditionStatus]float64{metav1.ConditionTrue: 0, metav1.ConditionFalse: 0, metav1.ConditionUnknown: 0}
	for _, robot := range robots {
		status := metav1.ConditionUnknown
		if c := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionReady); c != nil && c.ObservedGeneration == robot.Generation {
			status = c.Status
		}
		counts[status]++
	}
	for status, n := range counts {
		ch <- prometheus.MustNewConstMetric(robotsDesc, prometheus.GaugeValue, n, string(status))
	}
}

// NewNewerFieldsGauge returns the gauge of the Robots that hold fields this
// release does not know, which count says at each scrape: after a rollback,
// the Robots the operator leaves alone.
func NewNewerFieldsGauge(count func() int) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: metricsNamespace,
		Name:      "robots_with_newer_fields",
		Help:      "Robots holding spec fields this release of the operator does not know (written through a newer release's CRD); the operator writes nothing to what they own.",
	}, func() float64 { return float64(count()) })
}

const TrackedHelp = "Entries of the operator's in-memory maps kept per Robot or per owned object, by map: each stays about the number of Robots that exist, whatever the number that ever existed."

var trackedDesc = prometheus.NewDesc(metricsNamespace+"_tracked_objects", TrackedHelp, []string{"map"}, nil)

// TrackedCollector reports, at each scrape, the size of every map the
// controller keeps per Robot, Deployment or Service: one that grew with
// every Robot ever seen would be a leak that only a restart clears.
type TrackedCollector struct {
	// Sizes returns the size of each map, by name.
	Sizes func() map[string]int
}

func (tc *TrackedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- trackedDesc }

func (tc *TrackedCollector) Collect(ch chan<- prometheus.Metric) {
	for name, n := range tc.Sizes() {
		ch <- prometheus.MustNewConstMetric(trackedDesc, prometheus.GaugeValue, float64(n), name)
	}
}

// GenerationTracker remembers when the operator first saw each Robot's
// current generation, until the Robot's status reaches a milestone for it:
// Synced, or Ready.
type GenerationTracker struct {
	// reached says whether a status has reached the milestone for a
	// generation.
	reached func(robotv1beta1.RobotStatus, int64) bool
	mu      sync.Mutex
	pending map[types.UID]generationSeen
}

type generationSeen struct {
	generation int64
	at         time.Time
}

// NewReadinessTracker times a generation until its Ready=True.
func NewReadinessTracker() *GenerationTracker {
	return &GenerationTracker{reached: status.ReadyFor, pending: map[types.UID]generationSeen{}}
}

// NewSyncedTracker times a generation until its Synced=True.
func NewSyncedTracker() *GenerationTracker {
	return &GenerationTracker{reached: status.SyncedFor, pending: map[types.UID]generationSeen{}}
}

// Seen records robot's generation, unless its status has already reached
// the milestone for it. It never clears a record: the watch event of the
// status write that reached it can arrive before that write returns, and
// the sync that made it must still find the record.
func (t *GenerationTracker) Seen(robot *robotv1beta1.Robot, now time.Time) {
	if t.reached(robot.Status, robot.Generation) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.pending[robot.UID]; !ok || p.generation != robot.Generation {
		t.pending[robot.UID] = generationSeen{generation: robot.Generation, at: now}
	}
}

// Reached returns how long robot took to reach the milestone for its
// generation, once, when robotStatus, now stored, says it has: false when
// it has not, or the generation was not being waited for.
func (t *GenerationTracker) Reached(robot *robotv1beta1.Robot, robotStatus robotv1beta1.RobotStatus, now time.Time) (time.Duration, bool) {
	if !t.reached(robotStatus, robot.Generation) {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.pending[robot.UID]
	if !ok || p.generation != robot.Generation {
		return 0, false
	}
	delete(t.pending, robot.UID)
	return now.Sub(p.at), true
}

// Len is the number of Robots waited for.
func (t *GenerationTracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

// Forget drops what is kept of a deleted Robot.
func (t *GenerationTracker) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pending, uid)
}

// RegisterProcessMetrics registers the Go runtime and process metrics, the
// workqueue metrics and client-go's REST client metrics. client-go and the
// workqueue accept one provider per process, so this runs once, before any
// queue or client is made.
func RegisterProcessMetrics(registry prometheus.Registerer) {
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	workqueue.SetProvider(newWorkqueueMetrics(registry))

	requestLatency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "API request latency, by verb and host.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"verb", "host"})
	rateLimiterLatency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_rate_limiter_duration_seconds",
		Help:    "Time API requests waited for the client-side rate limiter, by verb and host.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"verb", "host"})
	requestResult := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "API requests, by status code, method and host.",
	}, []string{"code", "method", "host"})
	registry.MustRegister(requestLatency, rateLimiterLatency, requestResult)
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestLatency:     latencyAdapter{requestLatency},
		RateLimiterLatency: latencyAdapter{rateLimiterLatency},
		RequestResult:      resultAdapter{requestResult},
	})
}

type latencyAdapter struct{ m *prometheus.HistogramVec }

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.m.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

type resultAdapter struct{ m *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.m.WithLabelValues(code, method, host).Inc()
}

// workqueueMetrics provides the standard workqueue metrics, labelled by the
// queue's name.
type workqueueMetrics struct {
	depth, unfinished, longestRunning *prometheus.GaugeVec
	adds, retries                     *prometheus.CounterVec
	latency, workDuration             *prometheus.HistogramVec
}

func newWorkqueueMetrics(registry prometheus.Registerer) *workqueueMetrics {
	name := []string{"name"}
	buckets := prometheus.ExponentialBuckets(1e-6, 10, 10) // 1µs .. 1000s
	m := &workqueueMetrics{
		depth:          prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "depth", Help: "Current depth of the workqueue."}, name),
		adds:           prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "adds_total", Help: "Adds handled by the workqueue."}, name),
		latency:        prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "queue_duration_seconds", Help: "How long an item waits in the workqueue before it is processed.", Buckets: buckets}, name),
		workDuration:   prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "work_duration_seconds", Help: "How long processing an item takes.", Buckets: buckets}, name),
		unfinished:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "unfinished_work_seconds", Help: "Seconds of work in progress not yet observed by work_duration; large values mean stuck workers."}, name),
		longestRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "longest_running_processor_seconds", Help: "How long the longest-running processor has been running."}, name),
		retries:        prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "retries_total", Help: "Retries handled by the workqueue."}, name),
	}
	registry.MustRegister(m.depth, m.adds, m.latency, m.workDuration, m.unfinished, m.longestRunning, m.retries)
	return m
}

func (m *workqueueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name)
}
func (m *workqueueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name)
}
func (m *workqueueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name)
}
func (m *workqueueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.workDuration.WithLabelValues(name)
}
func (m *workqueueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name)
}
func (m *workqueueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longestRunning.WithLabelValues(name)
}
func (m *workqueueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name)
}
