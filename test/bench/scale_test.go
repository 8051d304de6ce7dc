package main

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	"github.com/robot-operator/robot-operator/test/internal/audit"
	"github.com/robot-operator/robot-operator/test/internal/localcluster"
)

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	h := histogram{upper: []float64{0.01, 0.1, 1, inf}, counts: []uint64{10, 60, 100, 100}}
	for _, tc := range []struct {
		q, want float64
	}{
		{0.5, 0.082},   // rank 50 in (0.01, 0.1], which holds 50: 40 of them in
		{0.99, 0.9775}, // rank 99 in (0.1, 1], which holds 40: 39 of them in
		{0.05, 0.005},  // rank 5 in the first bucket, from 0
	} {
		if got := h.quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	// Past the largest finite bound: that bound, as histogram_quantile.
	if got := (histogram{upper: []float64{1, inf}, counts: []uint64{0, 5}}).quantile(.5); got != 1 {
		t.Errorf("all in +Inf: %v, want 1", got)
	}
	if got := (histogram{}).quantile(.5); !math.IsNaN(got) {
		t.Errorf("empty: %v, want NaN", got)
	}
	if got, want := (histogram{}).quantiles(), "no observation"; got != want {
		t.Errorf("empty: %q, want %q", got, want)
	}
	if got, want := h.quantiles(), "82 ms (10 ms – 100 ms) / 978 ms (100 ms – 1 s), 100 observed"; got != want {
		t.Errorf("quantiles() = %q, want %q", got, want)
	}
}

func TestHistogramSince(t *testing.T) {
	inf := math.Inf(1)
	before := histogram{upper: []float64{1, inf}, counts: []uint64{3, 4}}
	after := histogram{upper: []float64{1, inf}, counts: []uint64{10, 14}}
	got := after.since(before)
	if got.counts[0] != 7 || got.counts[1] != 10 || got.count() != 10 {
		t.Errorf("since = %+v, want counts [7 10]", got)
	}
}

const metricsText = `# HELP robot_operator_syncs_total Robot syncs.
# TYPE robot_operator_syncs_total counter
robot_operator_syncs_total{result="success"} 7
robot_operator_syncs_total{result="error"} 2
# HELP workqueue_depth Current depth of the workqueue.
# TYPE workqueue_depth gauge
workqueue_depth{name="robot"} 3
workqueue_depth{name="other"} 5
# HELP workqueue_queue_duration_seconds How long an item waits.
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{name="robot",le="0.01"} 4
workqueue_queue_duration_seconds_bucket{name="robot",le="0.1"} 9
workqueue_queue_duration_seconds_bucket{name="robot",le="+Inf"} 10
workqueue_queue_duration_seconds_sum{name="robot"} 1.5
workqueue_queue_duration_seconds_count{name="robot"} 10
# HELP go_memstats_sys_bytes Number of bytes obtained from system.
# TYPE go_memstats_sys_bytes gauge
go_memstats_sys_bytes 4.2e+07
`

func TestParseMetrics(t *testing.T) {
	f, err := parseMetrics(metricsText)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.sum(syncsSeries, nil); got != 9 {
		t.Errorf("syncs = %v, want 9 (success and error)", got)
	}
	if got := f.sum(queueDepthSeries, map[string]string{"name": robotQueue}); got != 3 {
		t.Errorf("depth of the robot queue = %v, want 3", got)
	}
	h := f.histogram(queueWaitSeries, map[string]string{"name": robotQueue})
	if h.count() != 10 || len(h.upper) != 3 || h.counts[1] != 9 {
		t.Errorf("queue wait = %+v, want 3 buckets, 9 at most 0.1 s, 10 in all", h)
	}
	if got := f.sum("go_memstats_sys_bytes", nil); got != 42e6 {
		t.Errorf("go_memstats_sys_bytes = %v, want 42e6", got)
	}
	if got := f.histogram(timeToSyncedSeries, nil); got.count() != 0 {
		t.Errorf("a series not exported: %+v, want an empty histogram", got)
	}
}

func TestPerRobot(t *testing.T) {
	if got := perRobot(30<<20+100*2048, 30<<20, 100); got != 2 {
		t.Errorf("200 KiB over 100 Robots = %v KiB, want 2", got)
	}
	if got := perRobot(30<<20, 0, 100); !math.IsNaN(got) {
		t.Errorf("no figure before: %v, want NaN", got)
	}
}

func TestChurnWatch(t *testing.T) {
	w := &churnWatch{replicas: 1, pending: map[string][]*specChange{}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w.sent("robot-00001", &specChange{generation: 2, sent: t0})
	w.sent("robot-00001", &specChange{generation: 3, sent: t0.Add(time.Second)})
	robot := func(observed, synced, ready int64, available int32) *robotv1beta1.Robot {
		return &robotv1beta1.Robot{ObjectMeta: metav1.ObjectMeta{Name: "robot-00001"}, Status: robotv1beta1.RobotStatus{
			ObservedGeneration: observed, AvailableReplicas: available, Conditions: []metav1.Condition{
				{Type: robotv1beta1.ConditionSynced, Status: metav1.ConditionTrue, ObservedGeneration: synced},
				{Type: robotv1beta1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: ready},
			}}}
	}
	w.observe(robot(2, 2, 1, 1), t0.Add(100*time.Millisecond)) // generation 2 Synced, not Ready
	if w.remaining() != 2 {
		t.Fatalf("%d changes left, want 2", w.remaining())
	}
	// Generation 3 Synced and Ready: generation 2 is done with it.
	w.observe(robot(3, 3, 3, 1), t0.Add(5*time.Second))
	toSynced, toReady := w.latencies()
	if w.remaining() != 0 {
		t.Errorf("%d changes left, want 0", w.remaining())
	}
	if len(toSynced) != 2 || toSynced[0] != 100*time.Millisecond || toSynced[1] != 4*time.Second {
		t.Errorf("to Synced %v, want [100ms 4s]", toSynced)
	}
	if len(toReady) != 2 || toReady[0] != 4*time.Second || toReady[1] != 5*time.Second {
		t.Errorf("to Ready %v, want [4s 5s]", toReady)
	}
}

func TestChurnWatchWaitsForTheReplicas(t *testing.T) {
	w := &churnWatch{replicas: 1, pending: map[string][]*specChange{}}
	w.sent("r", &specChange{generation: 2, sent: time.Now()})
	ready := &robotv1beta1.Robot{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Status: robotv1beta1.RobotStatus{ObservedGeneration: 2,
		Conditions: []metav1.Condition{{Type: robotv1beta1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 2}}}}
	w.observe(ready, time.Now())
	if w.remaining() != 1 {
		t.Error("a Robot Ready with 0 of its 1 replica available was taken as done")
	}
}

// scalePair is a first pair at N with its memory, restart and churn.
func scalePair(n int) *result {
	r := fakePair(1, 20*time.Second, 30*time.Second, 1, 2)
	r.n = n
	r.emptyRSS, r.emptyHeap = 30<<20, 5<<20
	r.peakRSS, r.heap = 30<<20+uint64(n)*20<<10, 5<<20+uint64(n)*8<<10 // 20 KiB and 8 KiB per Robot
	r.basePeakRSS = 30<<20 + uint64(n)*25<<10
	r.anonOutsideLimit, r.fileRSS = -2<<20, 12<<20
	r.restartReady, r.restartChecked, r.restartCPU = 2*time.Second, 5*time.Second, 1500*time.Millisecond
	inf := math.Inf(1)
	r.churn = &churnResult{changes: 100, elapsed: 10 * time.Second,
		toSynced: []time.Duration{50 * time.Millisecond, 60 * time.Millisecond}, toReady: []time.Duration{3 * time.Second, 4 * time.Second},
		queueWait: histogram{upper: []float64{0.01, 0.1, inf}, counts: []uint64{50, 100, 100}},
		writes:    &apiCost{writes: map[string]int{"apply deployments 200": 100, "apply robots/status 200": 200}, reads: map[string]int{}},
	}
	r.churn.writes.total.writes = 300
	r.idle.writes, r.idle.total.writes, r.idle.events = map[string]int{"patch(apply) robots/status 200": 2}, 2, 1
	return r
}

func TestRenderReportScale(t *testing.T) {
	e := &environment{Env: &localcluster.Env{Tools: map[string]string{}}}
	cfg := config{sizes: []int{1000}, pairs: 1, namespaces: 10, service: true, floor: true, churn: 2 * time.Minute, churnRate: 10, settle: 5 * time.Second, idle: 5 * time.Second}
	report := renderReport(e, cfg, []*series{{n: 1000, pairs: []*result{scalePair(1000)}}})
	for _, want := range []string{
		"-unrelated 0 -namespaces 10 -service -churn 2m0s -churn-rate 10`",
		"Robots of 1 replica with a port: each has a ClusterIP Service, which the floor creates too; spread over 10 namespaces.",
		"| etcd CPU per Robot, operator / floor | 2.00 |",
		"| robot-operator RSS before the first Robot | 30.0 MiB |",
		"| robot-operator peak RSS per Robot while converging, above that | 20.0 KiB |",
		"| robot-operator live heap per Robot after convergence, above its heap before the first Robot | 8.0 KiB |",
		"| restart: caches synced (the relist) / every Robot checked, from the process's start | 2.0 s / 5.0 s |",
		"| RSS the Go memory limit does not count, after convergence: anonymous (RssAnon − (go_memstats_sys_bytes − go_memstats_heap_released_bytes)) / file-backed (RssFile, the binary's pages) | -2.0 MiB / 12.0 MiB |",
		"| restart: robot-operator CPU until every Robot checked | 1.5 s (1.50 ms per Robot) |",
		"| restarted: peak RSS (per Robot above the RSS before the first Robot) | 54.4 MiB (25.0 KiB) |",
		"## Churn: 10 spec changes a second for 2m0s, after the restart",
		"| spec changes sent, over | 100 in 10.0 s (10.0 a second) |",
		"| change → Synced, p50 / p99 (changes seen), bench's watch | 0.1 s / 0.1 s (2) |",
		"| change → Ready, p50 / p99 (changes seen), bench's watch | 3.0 s / 3.0 s (2) |",
		"| work queue wait, p50 / p99, operator's workqueue_queue_duration_seconds | 10 ms (0 – 10 ms) / 98.2 ms (10 ms – 100 ms), 100 observed |",
		"| generation seen → Synced, p50 / p99, operator's time_to_synced_seconds | no observation |",
		"| operator writes per change (Events apart) | 3.00<br>apply robots/status 200: 2.00<br>apply deployments 200: 1.00 |",
		"| idle writes (5s after convergence) | 3<br>patch(apply) robots/status 200: 2.00<br>Events: 1 |",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}

func TestRenderReportWithoutFloor(t *testing.T) {
	r := scalePair(100)
	r.floorSync, r.floorReady, r.floorCPU, r.floorStages = 0, 0, nil, ""
	r.idle = &apiCost{writes: map[string]int{}, reads: map[string]int{}, events: 19}
	cfg := config{sizes: []int{100}, pairs: 1, controllerOnly: true, floor: false, v1beta1Only: true}
	report := renderReport(&environment{Env: &localcluster.Env{Tools: map[string]string{}}}, cfg, []*series{{n: 100, pairs: []*result{r}}})
	for _, want := range []string{
		"-controller-only -floor=false -v1alpha1-served=false`",
		"Robots of 0 replicas with a port and `service.type: None`: the controller's own path, no pod, no Service; no floor phase",
		"| **T_ready / floor-ready** (target ≤ 1.15) | not measured |",
		"| kube-apiserver CPU per Robot: floor | not measured |",
		"| … operator | 20.0 ms |",
		"| floor-ready (every Deployment Available) | not measured |",
		"| T_ready (every Robot Ready, availableReplicas = replicas) | 30.0 s |",
		"| where the time goes, p50 / p90 / p99 / max: floor | not measured |",
		"| CPU seconds, first create → all Ready: floor | not measured |",
		"| idle writes (0s after convergence) | 19 (Events) |",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "## Churn") {
		t.Error("a report of a run without -churn has a churn table")
	}
}

func TestWriteScalePlot(t *testing.T) {
	var results []*series
	for _, n := range []int{1000, 3000, 10000} {
		results = append(results, &series{n: n, pairs: []*result{scalePair(n)}})
	}
	memory, times := scaleCurves(results)
	if len(memory[0].points) != 3 || memory[0].points[2] != [2]float64{10000, 30 + 10000*20.0/1024} {
		t.Errorf("peak RSS curve %v, want 3 points, the last (10000, %v MiB)", memory[0].points, 30+10000*20.0/1024)
	}
	if len(times[0].points) != 3 || times[0].points[0] != [2]float64{1000, 30} {
		t.Errorf("T_ready curve %v, want 3 points, the first (1000, 30 s)", times[0].points)
	}

	path := filepath.Join(t.TempDir(), "scale.png")
	if err := writeScalePlot(path, results); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// Every curve is drawn in its colour.
	for _, c := range append(memory, times...) {
		found := false
		for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y && !found; y++ {
			for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
				r, g, b, _ := img.At(x, y).RGBA()
				if uint8(r>>8) == c.colour.R && uint8(g>>8) == c.colour.G && uint8(b>>8) == c.colour.B {
					found = true
					break
				}
			}
		}
		if !found {
			t.Errorf("no pixel of the colour of %q", c.name)
		}
	}
}

func TestKeyTellsApplyFromPatch(t *testing.T) {
	apply := &audit.Event{Verb: "patch", RequestURI: "/apis/apps/v1/namespaces/a/deployments/b?fieldManager=robot-operator&force=true"}
	apply.ObjectRef.Resource = "deployments"
	apply.ResponseStatus.Code = 200
	patch := &audit.Event{Verb: "patch", RequestURI: "/apis/apps/v1/namespaces/a/deployments/b"}
	patch.ObjectRef.Resource = "deployments"
	patch.ResponseStatus.Code = 200
	if got, want := key(apply), "patch(apply) deployments 200"; got != want {
		t.Errorf("an apply: %q, want %q", got, want)
	}
	if got, want := key(patch), "patch deployments 200"; got != want {
		t.Errorf("a JSON patch: %q, want %q", got, want)
	}
}

func TestProcStatusBytes(t *testing.T) {
	status := "Name:\trobot-operator\nVmRSS:\t   49600 kB\nRssAnon:\t   21000 kB\nRssFile:\t   28000 kB\n"
	if got := procStatusBytes(status, "RssAnon"); got != 21000<<10 {
		t.Errorf("RssAnon = %d, want %d", got, 21000<<10)
	}
	if got := procStatusBytes(status, "RssFile"); got != 28000<<10 {
		t.Errorf("RssFile = %d, want %d", got, 28000<<10)
	}
	if got := procStatusBytes(status, "RssShmem"); got != 0 {
		t.Errorf("a field not there = %d, want 0", got)
	}
}
