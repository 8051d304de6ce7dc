package main

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// series is every floor/operator pair measured for one N, in the order run.
type series struct {
	n     int
	pairs []*result
}

// first is the pair that also measured the operator at rest, restarted and
// among unrelated objects.
func (s *series) first() *result { return s.pairs[0] }

// spread is one figure over the pairs: its median and its range.
type spread struct {
	median, min, max float64
	count            int
}

// summarize is the median (the mean of the middle two for an even count),
// the smallest and the largest of values.
func summarize(values []float64) spread {
	if len(values) == 0 {
		return spread{}
	}
	v := append([]float64(nil), values...)
	sort.Float64s(v)
	s := spread{min: v[0], max: v[len(v)-1], count: len(v)}
	if m := len(v) / 2; len(v)%2 == 1 {
		s.median = v[m]
	} else {
		s.median = (v[m-1] + v[m]) / 2
	}
	return s
}

// format renders the median, and the range after it when there is more
// than one pair: "1.23 (1.10 – 1.40)"; "not measured" with no value.
func (s spread) format(f func(float64) string) string { return s.formatWith(f, f) }

// formatWith renders the median with median and the range with bound.
func (s spread) formatWith(median, bound func(float64) string) string {
	if s.count == 0 {
		return "not measured"
	}
	if s.count <= 1 {
		return median(s.median)
	}
	return fmt.Sprintf("%s (%s – %s)", median(s.median), bound(s.min), bound(s.max))
}

// over summarizes fig over the pairs of s that measured it: fig is NaN for
// a pair that did not.
func (s *series) over(fig func(r *result) float64) spread {
	values := make([]float64, 0, len(s.pairs))
	for _, r := range s.pairs {
		if v := fig(r); !math.IsNaN(v) {
			values = append(values, v)
		}
	}
	return summarize(values)
}

// cpuPerRobot is the CPU a process used in u, in milliseconds per Robot.
func cpuPerRobot(u cpuUse, process string, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(u[process].Microseconds()) / 1000 / float64(n)
}

// The figures of one pair, each taken within that pair.

// syncRatio and readyRatio are NaN when the floor was not measured.
func syncRatio(r *result) float64  { return measured(r.floorSync, ratio(r.tSync, r.floorSync)) }
func readyRatio(r *result) float64 { return measured(r.floorReady, ratio(r.tReady, r.floorReady)) }

// measured is v, or NaN when d, the figure it comes from, is zero: not
// measured.
func measured(d time.Duration, v float64) float64 {
	if d == 0 {
		return math.NaN()
	}
	return v
}

func floorCPUPerRobot(process string) func(r *result) float64 {
	return func(r *result) float64 {
		if r.floorCPU == nil {
			return math.NaN()
		}
		return cpuPerRobot(r.floorCPU, process, r.n)
	}
}

func operatorCPUPerRobot(process string) func(r *result) float64 {
	return func(r *result) float64 { return cpuPerRobot(r.operatorCPU, process, r.n) }
}

// cpuRatio is the operator's phase's CPU per Robot of a process over the
// floor's, in one pair.
func cpuRatio(process string) func(r *result) float64 {
	return func(r *result) float64 {
		if r.floorCPU == nil {
			return math.NaN()
		}
		floor := cpuPerRobot(r.floorCPU, process, r.n)
		if floor == 0 {
			return 0
		}
		return cpuPerRobot(r.operatorCPU, process, r.n) / floor
	}
}

// writesPerRobot is the operator's writes, Events apart, from the first
// create until all were Ready.
func writesPerRobot(r *result) float64 {
	if r.creation == nil || r.n == 0 {
		return 0
	}
	return float64(r.creation.total.writes) / float64(r.n)
}

// seconds is d in seconds, NaN when zero: not measured.
func seconds(d func(r *result) time.Duration) func(r *result) float64 {
	return func(r *result) float64 { return measured(d(r), d(r).Seconds()) }
}

// perRobot is what the Robots added to a memory figure, from before the
// first create (before) to after (after), in KiB per Robot; NaN when
// either was not measured.
func perRobot(after, before uint64, n int) float64 {
	if after == 0 || before == 0 || n == 0 {
		return math.NaN()
	}
	return (float64(after) - float64(before)) / 1024 / float64(n)
}

func rssPerRobot(r *result) float64          { return perRobot(r.peakRSS, r.emptyRSS, r.n) }
func heapPerRobot(r *result) float64         { return perRobot(r.heap, r.emptyHeap, r.n) }
func restartedRSSPerRobot(r *result) float64 { return perRobot(r.basePeakRSS, r.emptyRSS, r.n) }

// The cluster's processes whose CPU per Robot the report gives, by the names
// of their pid files.
const (
	apiServer         = "kube-apiserver"
	etcd              = "etcd"
	controllerManager = "kube-controller-manager"
	operatorProcess   = "robot-operator"
)

func twoPlaces(v float64) string { return fmt.Sprintf("%.2f", v) }
func boldRatio(v float64) string { return fmt.Sprintf("**%.2f**", v) }
func millis(v float64) string    { return fmt.Sprintf("%.1f ms", v) }
func tenths(v float64) string    { return fmt.Sprintf("%.1f s", v) }
func kib(v float64) string       { return fmt.Sprintf("%.1f KiB", v) }
func mibOf(v float64) string     { return fmt.Sprintf("%.1f MiB", v/(1<<20)) }
