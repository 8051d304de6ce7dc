package metrics

import "github.com/prometheus/client_golang/prometheus"

// FleetHelp is the help of the fleet budget's gauge.
const FleetHelp = "Robots under the fleet budget (-fleet-rollout-budget), by state: rolling, holding a slot while their Deployment rolls a change of the pod template that does not come from their spec; waiting, for a slot. Only the leader's are non-zero."

var fleetDesc = prometheus.NewDesc(metricsNamespace+"_fleet_rollouts", FleetHelp, []string{"state"}, nil)

// FleetCollector reports, at each scrape, how many Robots roll under the
// fleet budget and how many wait for it.
type FleetCollector struct {
	// Counts returns the Robots rolling and waiting.
	Counts func() (rolling, waiting int)
}

// NewFleetCollector returns the fleet budget's gauge, read from counts.
func NewFleetCollector(counts func() (rolling, waiting int)) *FleetCollector {
	return &FleetCollector{Counts: counts}
}

func (fc *FleetCollector) Describe(ch chan<- *prometheus.Desc) { ch <- fleetDesc }

func (fc *FleetCollector) Collect(ch chan<- prometheus.Metric) {
	rolling, waiting := fc.Counts()
	ch <- prometheus.MustNewConstMetric(fleetDesc, prometheus.GaugeValue, float64(rolling), "rolling")
	ch <- prometheus.MustNewConstMetric(fleetDesc, prometheus.GaugeValue, float64(waiting), "waiting")
}
