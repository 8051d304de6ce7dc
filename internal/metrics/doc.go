// Package metrics holds the operator's Prometheus metrics: syncs, time to
// Ready, Robots by condition, the size of its in-memory maps, and the
// adapters that give the workqueue and client-go their metrics.
package metrics
