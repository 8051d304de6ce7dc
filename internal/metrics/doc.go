// Package metrics holds the operator's Prometheus metrics: syncs, time to
// Synced and to Ready (whether a Robot's status reached either for a
// generation is internal/status's answer), Robots by condition, the size of
// its in-memory maps, and the adapters that give the workqueue and
// client-go their metrics.
package metrics
