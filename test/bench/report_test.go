package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/test/internal/localcluster"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []float64
		want   spread
	}{
		{"none", nil, spread{}},
		{"one", []float64{1.3}, spread{median: 1.3, min: 1.3, max: 1.3, count: 1}},
		{"odd, unsorted", []float64{1.56, 1.34, 1.40}, spread{median: 1.40, min: 1.34, max: 1.56, count: 3}},
		{"even: the mean of the middle two", []float64{4, 1, 3, 2}, spread{median: 2.5, min: 1, max: 4, count: 4}},
		{"ties", []float64{2, 2, 5}, spread{median: 2, min: 2, max: 5, count: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summarize(tc.values); got != tc.want {
				t.Errorf("summarize(%v) = %+v, want %+v", tc.values, got, tc.want)
			}
		})
	}
}

func TestSummarizeLeavesItsInputAlone(t *testing.T) {
	values := []float64{3, 1, 2}
	summarize(values)
	if values[0] != 3 || values[1] != 1 || values[2] != 2 {
		t.Errorf("summarize reordered its input: %v", values)
	}
}

func TestSpreadFormat(t *testing.T) {
	if got, want := summarize([]float64{1.2}).format(twoPlaces), "1.20"; got != want {
		t.Errorf("one pair: %q, want %q (no range)", got, want)
	}
	if got, want := summarize([]float64{1.56, 1.34, 1.4}).format(twoPlaces), "1.40 (1.34 – 1.56)"; got != want {
		t.Errorf("three pairs: %q, want %q", got, want)
	}
	if got, want := summarize([]float64{1.56, 1.34, 1.4}).formatWith(boldRatio, twoPlaces), "**1.40** (1.34 – 1.56)"; got != want {
		t.Errorf("bold median: %q, want %q", got, want)
	}
}

func TestCPUPerRobot(t *testing.T) {
	u := cpuUse{apiServer: 32500 * time.Millisecond, etcd: 10 * time.Millisecond}
	if got := cpuPerRobot(u, apiServer, 1000); got != 32.5 {
		t.Errorf("32.5 s over 1000 Robots = %v ms, want 32.5", got)
	}
	if got := cpuPerRobot(u, etcd, 4); got != 2.5 {
		t.Errorf("10 ms over 4 Robots = %v ms, want 2.5", got)
	}
	if got := cpuPerRobot(u, controllerManager, 1000); got != 0 {
		t.Errorf("a process not sampled = %v ms, want 0", got)
	}
	if got := cpuPerRobot(u, apiServer, 0); got != 0 {
		t.Errorf("N = 0: %v, want 0", got)
	}
}

// fakePair is a pair at N = 100 whose floor takes floorReady and whose
// operator takes tReady, with the API server's CPU given in seconds.
func fakePair(pair int, floorReady, tReady time.Duration, floorAPI, operatorAPI float64) *result {
	r := &result{
		n: 100, pair: pair,
		floorSync: 10 * time.Second, tSync: 12 * time.Second,
		floorReady: floorReady, tReady: tReady,
		latencies: []time.Duration{time.Second, 2 * time.Second},
		creation:  &apiCost{writes: map[string]int{"create deployments 201": 100, "patch robots/status 200": 200}, reads: map[string]int{}, events: 100},
		floorCPU: cpuUse{"machine": 20 * time.Second, apiServer: time.Duration(floorAPI * float64(time.Second)),
			etcd: time.Second, controllerManager: 500 * time.Millisecond},
		operatorCPU: cpuUse{"machine": 30 * time.Second, apiServer: time.Duration(operatorAPI * float64(time.Second)),
			etcd: 2 * time.Second, controllerManager: 600 * time.Millisecond, operatorProcess: 200 * time.Millisecond},
		peakRSS: 50 << 20, heap: 5 << 20,
		readyAfterAvailable: time.Duration(pair) * 500 * time.Millisecond,
		syncs:               250,
	}
	r.creation.total.writes = 300
	if pair == 1 {
		r.idle = &apiCost{writes: map[string]int{}, reads: map[string]int{}}
		r.restart = &apiCost{writes: map[string]int{}, reads: map[string]int{}}
		r.baseRSS, r.baseHeap = 48<<20, 4<<20
	}
	return r
}

func TestRenderReport(t *testing.T) {
	e := &environment{Env: &localcluster.Env{Tools: map[string]string{"K8S_VERSION": "v1.37.1", "KWOK": "/cache/kwok-v0.8.0/kwok"},
		Commit: "abc1234"}, goVersion: "go1.26", memory: "24 GiB"}
	cfg := config{sizes: []int{100}, pairs: 3, concurrency: 16, idle: time.Minute, settle: 20 * time.Second}
	s := &series{n: 100, pairs: []*result{
		// T_ready / floor-ready 1.50, 1.20, 1.30; API server operator / floor 2.00, 1.50, 1.60.
		fakePair(1, 20*time.Second, 30*time.Second, 1.0, 2.0),
		fakePair(2, 40*time.Second, 48*time.Second, 2.0, 3.0),
		fakePair(3, 30*time.Second, 39*time.Second, 1.0, 1.6),
	}}
	report := renderReport(e, cfg, []*series{s})

	for _, want := range []string{
		"Command: `go run ./test/bench -n 100 -pairs 3 -concurrency 16",
		"## Median (min – max) over 3 pairs",
		"| **T_sync / floor-sync** (target ≤ 1.5) | **1.20** (1.20 – 1.20) |",
		// The median of the ratios taken within each pair.
		"| **T_ready / floor-ready** (target ≤ 1.15) | **1.30** (1.20 – 1.50) |",
		"| **kube-apiserver CPU per Robot, operator / floor** | **1.60** (1.50 – 2.00) |",
		"| kube-apiserver CPU per Robot: floor | 10.0 ms (10.0 ms – 20.0 ms) |",
		"| … operator | 20.0 ms (16.0 ms – 30.0 ms) |",
		"| etcd CPU per Robot: floor | 10.0 ms (10.0 ms – 10.0 ms) |",
		"| kube-controller-manager CPU per Robot: floor | 5.0 ms (5.0 ms – 5.0 ms) |",
		"| robot-operator CPU per Robot | 2.0 ms (2.0 ms – 2.0 ms) |",
		"| floor-ready (every Deployment Available) | 30.0 s (20.0 s – 40.0 s) |",
		"| operator writes per Robot, create → all Ready (Events apart) | 3.00 (3.00 – 3.00) |",
		"| Available → Robot Ready, p99 over the Robots (target ≤ 2 s) | 1.0 s (0.5 s – 1.5 s) |",
		// Every pair, in the order run.
		"| 1 | 10.0 s | 12.0 s | 1.20 | 20.0 s | 30.0 s | 1.50 | 10.0 / 20.0 (2.00) | 10.0 / 20.0 | 5.0 / 6.0 | 2.0 | 3.00 |",
		"| 2 | 10.0 s | 12.0 s | 1.20 | 40.0 s | 48.0 s | 1.20 | 20.0 / 30.0 (1.50) |",
		"| 3 | 10.0 s | 12.0 s | 1.20 | 30.0 s | 39.0 s | 1.30 | 10.0 / 16.0 (1.60) |",
		// The rest from the first pair.
		"## The first pair in detail",
		"| idle writes (1m0s after convergence) | 0 |",
		"| operator syncs per Robot, create → all Ready | 2.50 |",
		"| restarted: RSS / live heap | 48.0 MiB / 4.0 MiB |",
		"| … with 0 unrelated Deployments and 0 pods | not measured |",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if i, j := strings.Index(report, "| 1 |"), strings.Index(report, "| 2 |"); i < 0 || j < i {
		t.Errorf("the pairs are not listed in the order run")
	}
}

func TestRenderReportOnePair(t *testing.T) {
	e := &environment{Env: &localcluster.Env{Tools: map[string]string{}}}
	cfg := config{sizes: []int{100, 200}, pairs: 1}
	a, b := fakePair(1, 20*time.Second, 30*time.Second, 1, 2), fakePair(1, 10*time.Second, 11*time.Second, 1, 1)
	b.n = 200
	report := renderReport(e, cfg, []*series{{n: 100, pairs: []*result{a}}, {n: 200, pairs: []*result{b}}})
	for _, want := range []string{
		"## Median (min – max) over 1 pair\n",
		"| | N = 100 | N = 200 |",
		// A single pair has no range to give.
		"| **T_ready / floor-ready** (target ≤ 1.15) | **1.50** | **1.10** |",
		"| kube-apiserver CPU per Robot: floor | 10.0 ms | 5.0 ms |",
		"**N = 200**",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}

func TestRenderReportPairWithoutExtras(t *testing.T) {
	// A pair after the first measures no idle or restart writes; if it
	// stands first (it never does when run), the report says so instead
	// of failing.
	r := fakePair(2, 20*time.Second, 30*time.Second, 1, 2)
	report := renderReport(&environment{Env: &localcluster.Env{Tools: map[string]string{}}}, config{sizes: []int{100}, pairs: 1, unrelated: 10}, []*series{{n: 100, pairs: []*result{r}}})
	for _, want := range []string{"| idle writes (0s after convergence) | not measured |", "| restart writes (fresh operator, 0s) | not measured |",
		"| … with 10 unrelated Deployments and 10 pods | not measured |"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}

func TestWriteReportKeepsWhatFollowsTheMarker(t *testing.T) {
	path := t.TempDir() + "/benchmarks.md"
	if err := writeReport(path, "# Benchmarks\n\nold figures\n"); err != nil {
		t.Fatal(err)
	}
	// A file without the marker is replaced whole.
	if err := writeReport(path, "# Benchmarks\n\nfigures 1\n"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "# Benchmarks\n\nfigures 1\n" {
		t.Fatalf("without the marker: %q", got)
	}
	kept := keptMarker + "\n\n## Against the previous run\n\nwritten by hand\n"
	if err := os.WriteFile(path, []byte("# Benchmarks\n\nfigures 1\n\n"+kept), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeReport(path, "# Benchmarks\n\nfigures 2\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if want := "# Benchmarks\n\nfigures 2\n\n" + kept; string(got) != want {
		t.Errorf("with the marker:\n%s\nwant:\n%s", got, want)
	}
}

func TestStageGivesThePercentilesOfTheNamesThatReachedBoth(t *testing.T) {
	from, to := newMilestones(200), newMilestones(200)
	t0 := time.Unix(1000, 0)
	for i := range 200 {
		name := fmt.Sprintf("robot-%d", i)
		from.mark(name, t0)
		if i < 100 {
			// 100 ms, 200 ms, … 10 s after its first milestone.
			to.mark(name, t0.Add(time.Duration(i+1)*100*time.Millisecond))
		}
	}
	// One that reached the second alone counts for nothing.
	to.mark("robot-only-ready", t0)
	if got, want := stage(from, to), "5.0 s / 9.0 s / 9.9 s / 10.0 s"; got != want {
		t.Errorf("stage = %q, want %q", got, want)
	}
	if got := stage(newMilestones(1), to); got != "(none)" {
		t.Errorf("stage with no name in common = %q, want (none)", got)
	}
}
