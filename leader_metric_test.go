package main

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/klog/v2/ktesting"
)

// TestLeaderGauge: robot_operator_leader is 1 exactly while the workers run,
// and is exported by RegisterMetrics, so that the alert on "no leader" sees
// every replica's 0 or 1.
func TestLeaderGauge(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	c := newFixture(t).newController(ctx)
	registry := prometheus.NewRegistry()
	if err := c.RegisterMetrics(registry); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(c.metrics.Leader); got != 0 {
		t.Errorf("before the workers run: leader %v, want 0", got)
	}
	stopped := errors.New("stopped")
	var during float64
	err := c.runLeading(func() error {
		during = testutil.ToFloat64(c.metrics.Leader)
		return stopped
	})
	if !errors.Is(err, stopped) {
		t.Errorf("runLeading returned %v, want the workers' error", err)
	}
	if during != 1 {
		t.Errorf("while the workers run: leader %v, want 1", during)
	}
	if got := testutil.ToFloat64(c.metrics.Leader); got != 0 {
		t.Errorf("after the workers stopped: leader %v, want 0", got)
	}
	if n, err := testutil.GatherAndCount(registry, "robot_operator_leader"); err != nil || n != 1 {
		t.Errorf("robot_operator_leader gathered %d times (error %v), want once", n, err)
	}
}
