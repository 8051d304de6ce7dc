package metrics

import "github.com/prometheus/client_golang/prometheus"

// MigrationMetrics tell how the move of the Robots to the storage version
// goes, on the leader: a migration.Observer.
type MigrationMetrics struct {
	failures prometheus.Counter
	left     prometheus.Gauge
}

// NewMigrationMetrics returns the migration's metrics, registered with
// registry.
func NewMigrationMetrics(registry prometheus.Registerer) (*MigrationMetrics, error) {
	m := &MigrationMetrics{
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: metricsNamespace,
			Name:      "storage_migration_failures_total",
			Help:      "Rewrites of a Robot in the storage version that the API server refused; each refused Robot also gets a StorageMigrationFailed Warning Event.",
		}),
		left: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: metricsNamespace,
			Name:      "storage_migration_robots_left",
			Help:      "Robots whose rewrite in the storage version failed at the last attempt; the CRD's storedVersions keeps earlier versions while it is above 0.",
		}),
	}
	for _, c := range []prometheus.Collector{m.failures, m.left} {
		if err := registry.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// RewriteFailed counts one refused rewrite.
func (m *MigrationMetrics) RewriteFailed() { m.failures.Inc() }

// RobotsLeft sets the number of Robots still to rewrite.
func (m *MigrationMetrics) RobotsLeft(n int) { m.left.Set(float64(n)) }
