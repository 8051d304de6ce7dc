// Package serving runs the operator's HTTP servers: the metrics endpoint,
// behind authentication and authorization by the API server over TLS, with
// its certificate; the health probes with their stuck-sync watchdog; and
// pprof.
package serving
