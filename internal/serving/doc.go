// Package serving runs the operator's HTTP servers: the metrics endpoint,
// behind authentication and authorization by the API server over TLS, with
// its certificate; the health probes with their stuck-sync watchdog; pprof;
// and the conversion webhook's handler, limited in how many reviews it
// serves at once. Every server gets timeouts, a bound on its headers and a
// rate-limited error log (Serve), so that whoever can reach a port cannot
// hold its connections or the operator's memory.
package serving
