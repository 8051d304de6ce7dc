// Package metrics holds the operator's Prometheus metrics: syncs, time to
// Ready (whether a Robot is Ready for a generation is internal/status's
// answer), Robots by condition, the size of its in-memory maps, and the
// adapters that give the workqueue and client-go their metrics.
package metrics
