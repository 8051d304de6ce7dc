package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// BuildInfo is what the binary knows of how it was built: the release, the
// commit and the Go toolchain.
type BuildInfo struct {
	Version   string
	Revision  string
	GoVersion string
}

// String is the line that robot-operator -version prints.
func (b BuildInfo) String() string {
	return fmt.Sprintf("robot-operator %s (revision %s, %s)", b.Version, b.Revision, b.GoVersion)
}

// NewBuildInfoGauge returns the robot_operator_build_info gauge, always 1,
// whose labels say which build runs: a dashboard joins it to the other
// series to tell the replicas of two releases apart during a rollout.
func NewBuildInfoGauge(b BuildInfo) prometheus.Collector {
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace:   metricsNamespace,
		Name:        "build_info",
		Help:        "Always 1, labelled with the operator's release (version), commit (revision) and Go version (goversion).",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion},
	})
	gauge.Set(1)
	return gauge
}
