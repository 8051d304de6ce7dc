package main

import (
	"github.com/prometheus/client_golang/prometheus"
)

// RegisterMetrics registers the controller's metrics, and a gauge of the
// Robots by their Ready condition computed from the cache at each scrape.
func (c *Controller) RegisterMetrics(registry prometheus.Registerer) error {
	for _, collector := range []prometheus.Collector{
		c.metrics.syncs, c.metrics.syncDuration, c.metrics.timeToReady, c.metrics.leader,
		&robotsCollector{lister: c.robotsLister},
		&trackedCollector{sizes: c.trackedObjects},
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
		"readiness":           c.readiness.len(),
		"written_robots":      c.writtenRobots.len(),
		"written_deployments": c.writtenDeployments.len(),
		"written_services":    c.writtenServices.len(),
		"specs_checked":       c.specsChecked.len(),
		"fights":              c.fights.len(),
		"inflight":            syncMapLen(&c.inflight),
	}
}

// runLeading runs run, the controller's workers, with the leader gauge at
// 1 for as long as they run.
func (c *Controller) runLeading(run func() error) error {
	c.metrics.leader.Set(1)
	defer c.metrics.leader.Set(0)
	return run()
}
