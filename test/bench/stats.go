package main

import (
	"fmt"
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
// than one pair: "1.23 (1.10 – 1.40)".
func (s spread) format(f func(float64) string) string { return s.formatWith(f, f) }

// formatWith renders the median with median and the range with bound.
func (s spread) formatWith(median, bound func(float64) string) string {
	if s.count <= 1 {
		return median(s.median)
	}
	return fmt.Sprintf("%s (%s – %s)", median(s.median), bound(s.min), bound(s.max))
}

// over summarizes fig over the pairs of s.
func (s *series) over(fig func(r *result) float64) spread {
	values := make([]float64, len(s.pairs))
	for i, r := range s.pairs {
		values[i] = fig(r)
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

func syncRatio(r *result) float64  { return ratio(r.tSync, r.floorSync) }
func readyRatio(r *result) float64 { return ratio(r.tReady, r.floorReady) }

func floorCPUPerRobot(process string) func(r *result) float64 {
	return func(r *result) float64 { return cpuPerRobot(r.floorCPU, process, r.n) }
}

func operatorCPUPerRobot(process string) func(r *result) float64 {
	return func(r *result) float64 { return cpuPerRobot(r.operatorCPU, process, r.n) }
}

// cpuRatio is the operator's phase's CPU per Robot of a process over the
// floor's, in one pair.
func cpuRatio(process string) func(r *result) float64 {
	return func(r *result) float64 {
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

func seconds(d func(r *result) time.Duration) func(r *result) float64 {
	return func(r *result) float64 { return d(r).Seconds() }
}

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
