//go:build tools

// Package tools pins promtool, which checks and unit-tests the alerting
// rules in artifacts/monitoring. It is a module of its own because the
// Prometheus server's dependency graph is large and shares nothing the
// other tools need.
//
// The pin is v0.315.0 (Prometheus 3.15.0) rather than v0.316.0: the
// Nomad API pseudo-version that v0.316.0 requires is not served by the
// module proxy, so v0.316.0 does not build from the proxy alone.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
