package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/robot-operator/robot-operator/internal/metrics"
)

// RegisterMetrics registers the controller's metrics, and a gauge of the
// Robots by their Ready condition computed from the cache at each scrape.
func (c *Controller) RegisterMetrics(registry prometheus.Registerer) error {
	for _, collector := range []prometheus.Collector{
		c.metrics.Syncs, c.metrics.SyncDuration, c.metrics.TimeToReady, c.metrics.Leader,
		&metrics.RobotsCollector{Lister: c.robotsLister},
		&metrics.TrackedCollector{Sizes: c.trackedObjects},
	} {
		if err := registry.Register(collector); err != nil {
			return err
		}
	}
	return nil
}

// trackedObjects returns the size of each map the controller keeps per
// object, by the name the robot_operator_tracked_objects gauge gives it.
func (c *Controller) trackedObjects() map[string]int {
	return map[string]int{
		"readiness":           c.readiness.Len(),
		"written_robots":      c.writtenRobots.Len(),
		"written_deployments": c.writtenDeployments.Len(),
		"written_services":    c.writtenServices.Len(),
		"specs_checked":       c.specsChecked.Len(),
		"fights":              c.fights.Len(),
		"inflight":            metrics.SyncMapLen(&c.inflight),
	}
}

// runLeading runs run, the controller's workers, with the leader gauge at
// 1 for as long as they run.
func (c *Controller) runLeading(run func() error) error {
	c.metrics.Leader.Set(1)
	defer c.metrics.Leader.Set(0)
	return run()
}
