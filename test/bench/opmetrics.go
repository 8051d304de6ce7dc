package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/robot-operator/robot-operator/test/internal/task"
)

// The operator's own series the bench reads.
const (
	syncsSeries        = "robot_operator_syncs_total"
	queueDepthSeries   = "workqueue_depth"
	queueWaitSeries    = "workqueue_queue_duration_seconds"
	timeToSyncedSeries = "robot_operator_time_to_synced_seconds"
	timeToReadySeries  = "robot_operator_time_to_ready_seconds"
	// robotQueue is the name of the operator's work queue.
	robotQueue = "robot"
)

// families are the metric families of one scrape, by name.
type families map[string]*dto.MetricFamily

// scrape reads the operator's /metrics.
func (o *operator) scrape(ctx context.Context) (families, error) {
	body, err := get(ctx, "http://"+o.metrics+"/metrics")
	if err != nil {
		return nil, err
	}
	return parseMetrics(string(body))
}

// syncs is how many syncs the operator has made, whatever their result.
func (o *operator) syncs(ctx context.Context) (float64, error) {
	f, err := o.scrape(ctx)
	if err != nil {
		return 0, err
	}
	return f.sum(syncsSeries, nil), nil
}

func parseMetrics(text string) (families, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(text))
}

// matches says whether m has every label of want.
func matches(m *dto.Metric, want map[string]string) bool {
	for name, value := range want {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == name && l.GetValue() == value {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// sum is the sum of the counters or gauges of family name whose labels
// include want.
func (f families) sum(name string, want map[string]string) float64 {
	var total float64
	for _, m := range f[name].GetMetric() {
		if matches(m, want) {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}

// histogram is a cumulative Prometheus histogram: counts[i] observations
// at most upper[i], the last bound +Inf.
type histogram struct {
	upper  []float64
	counts []uint64
}

// histogram returns the first histogram of family name whose labels
// include want; an empty one when there is none.
func (f families) histogram(name string, want map[string]string) histogram {
	for _, m := range f[name].GetMetric() {
		if !matches(m, want) || m.GetHistogram() == nil {
			continue
		}
		var h histogram
		for _, b := range m.GetHistogram().GetBucket() {
			h.upper = append(h.upper, b.GetUpperBound())
			h.counts = append(h.counts, b.GetCumulativeCount())
		}
		if len(h.upper) == 0 || !math.IsInf(h.upper[len(h.upper)-1], 1) {
			h.upper = append(h.upper, math.Inf(1))
			h.counts = append(h.counts, m.GetHistogram().GetSampleCount())
		}
		return h
	}
	return histogram{}
}

// count is the number of observations.
func (h histogram) count() uint64 {
	if len(h.counts) == 0 {
		return 0
	}
	return h.counts[len(h.counts)-1]
}

// since is what was observed after before, a scrape of the same histogram.
func (h histogram) since(before histogram) histogram {
	if len(before.counts) != len(h.counts) {
		return h
	}
	d := histogram{upper: h.upper, counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		d.counts[i] = h.counts[i] - min(before.counts[i], h.counts[i])
	}
	return d
}

// quantile estimates the q-quantile as Prometheus' histogram_quantile
// does: linearly within the bucket that holds it, from 0 for the first
// bucket; in the +Inf bucket, the largest finite bound. NaN when empty.
func (h histogram) quantile(q float64) float64 {
	total := h.count()
	if total == 0 {
		return math.NaN()
	}
	rank := q * float64(total)
	i := sort.Search(len(h.counts), func(i int) bool { return float64(h.counts[i]) >= rank })
	if i == len(h.counts)-1 && math.IsInf(h.upper[i], 1) {
		if i == 0 {
			return math.NaN()
		}
		return h.upper[i-1]
	}
	lower, below := 0.0, uint64(0)
	if i > 0 {
		lower, below = h.upper[i-1], h.counts[i-1]
	}
	inBucket := float64(h.counts[i] - below)
	if inBucket == 0 {
		return h.upper[i]
	}
	return lower + (h.upper[i]-lower)*(rank-float64(below))/inBucket
}

// bucket returns the bounds of the bucket that holds the q-quantile: the
// estimate is only known to lie between them.
func (h histogram) bucket(q float64) (lower, upper float64) {
	rank := q * float64(h.count())
	i := sort.Search(len(h.counts), func(i int) bool { return float64(h.counts[i]) >= rank })
	if i >= len(h.counts) {
		return math.NaN(), math.NaN()
	}
	if i > 0 {
		lower = h.upper[i-1]
	}
	return lower, h.upper[i]
}

// quantiles renders p50 / p99 of h in seconds, each with the bucket that
// holds it (the operator's queue histogram has a bucket per decade), and
// how many observations.
func (h histogram) quantiles() string {
	if h.count() == 0 {
		return "no observation"
	}
	estimate := func(q float64) string {
		lower, upper := h.bucket(q)
		return fmt.Sprintf("%s (%s – %s)", shortSecs(h.quantile(q)), shortSecs(lower), shortSecs(upper))
	}
	return fmt.Sprintf("%s / %s, %d observed", estimate(.5), estimate(.99), h.count())
}

// shortSecs renders seconds to three significant figures, in ms below 1 s.
func shortSecs(s float64) string {
	switch {
	case math.IsNaN(s):
		return "n/a"
	case math.IsInf(s, 1):
		return "+Inf"
	case s == 0:
		return "0"
	case s < 1:
		return fmt.Sprintf("%.3g ms", s*1000)
	default:
		return fmt.Sprintf("%.3g s", s)
	}
}

// waitAllChecked waits until the operator has synced robots Robots (each
// one at least once, a restarted operator's initial list) and its queue is
// empty, and returns when it saw that.
func (o *operator) waitAllChecked(ctx context.Context, robots int, timeout time.Duration) (time.Time, error) {
	var at time.Time
	// Each scrape lists every Robot in the operator's cache (its
	// robot_operator_robots gauge): poll less often when they are many.
	interval := 200 * time.Millisecond
	if robots > 10000 {
		interval = time.Second
	}
	err := task.WaitFor(ctx, timeout, interval, "the operator to sync every Robot", func() (bool, error) {
		f, err := o.scrape(ctx)
		if err != nil {
			return false, nil
		}
		if f.sum(syncsSeries, nil) < float64(robots) || f.sum(queueDepthSeries, map[string]string{"name": robotQueue}) > 0 {
			return false, nil
		}
		at = time.Now()
		return true, nil
	})
	return at, err
}

// outsideMemoryLimit splits the operator's resident set by what the Go
// runtime's memory limit does not count (runtime/debug.SetMemoryLimit
// counts its mapped memory not released to the system): anon is its
// anonymous resident memory less that count, negative when the runtime
// holds memory it has not touched; file is its file-backed resident memory,
// the binary's pages, which the kernel can drop and read again when the
// container nears its limit.
func (o *operator) outsideMemoryLimit(ctx context.Context) (anon int64, file uint64, err error) {
	f, err := o.scrape(ctx)
	if err != nil {
		return 0, 0, err
	}
	counted := f.sum("go_memstats_sys_bytes", nil) - f.sum("go_memstats_heap_released_bytes", nil)
	if counted <= 0 {
		return 0, 0, fmt.Errorf("the operator exports no go_memstats_sys_bytes")
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", o.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	rssAnon, rssFile := procStatusBytes(string(status), "RssAnon"), procStatusBytes(string(status), "RssFile")
	return int64(rssAnon) - int64(counted), rssFile, nil
}

// procStatusBytes is the field of /proc/PID/status, given in kB, in bytes;
// 0 when it has none.
func procStatusBytes(status, field string) uint64 {
	for line := range strings.Lines(status) {
		var kb uint64
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
