package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// renderReport is the markdown table of every figure, one column per N.
func renderReport(e *environment, cfg config, results []*result) string {
	var b strings.Builder
	ns := make([]string, len(cfg.sizes))
	for i, n := range cfg.sizes {
		ns[i] = fmt.Sprint(n)
	}
	b.WriteString(`# Benchmarks

Written by ` + "`make bench`" + ` (test/bench). For each N, on fresh local kwok clusters (real
kube-apiserver, etcd, controller-manager with QPS limits off, scheduler; kwok nodes that mark
pods Running), with the operator built from the tree running as its own process under its own
ServiceAccount and the RBAC of artifacts/deploy:

- **floor**: a plain client without throttling, at the same concurrency, makes the writes no
  operator can avoid (create the Robot, create its Deployment, write its status once), then
  waits for every Deployment to be Available. floor-sync is when those writes are done;
  floor-ready when all are Available.
- **operator**: N Robots (1 replica each) are created at that concurrency; T_sync is when every
  Robot has its Deployment as asked and ` + "`status.observedGeneration`" + ` current, T_ready
  when every Robot is Ready=True with ` + "`availableReplicas == replicas`" + `. Then the
  operator idles, is restarted, and 10,000 unrelated Deployments and 10,000 unrelated pods
  (Pending, bound by no scheduler) are added.
- **warm-up**: before either clock starts, one Robot is taken through the same steps in a
  namespace of its own, so that neither side pays on the clock for a fresh cluster's first
  requests (serving the new CRD, the controllers' first syncs).
- **API cost** comes from the API server's audit log, filtered by the operator's user.
- **Where the time goes**: per Robot, from its creation to its Deployment first seen, to the
  Deployment Available, to the Robot Ready (p50 / p90 / max); for the floor, Deployment created
  to Available.
- **CPU seconds** per process from /proc, from the first create until all are Ready (or
  Available, for the floor); "all" is the machine's busy time over all its cores.
- The plot (benchmark-latency.png) shows each Robot's create → Ready latency by when it was
  created.

Times on a shared 2-core machine are noisy: compare the ratios, taken within one run.

`)
	fmt.Fprintf(&b, "Measured %s on %d cores, %s of memory; Kubernetes %s (kwok %s), %s, operator %s.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), e.memory, e.tools["K8S_VERSION"], kwokVersion(e), e.goVersion, e.commit)
	extra := ""
	if cfg.operatorArgs != "" {
		extra = fmt.Sprintf(" -operator-args %q", cfg.operatorArgs)
	}
	fmt.Fprintf(&b, "Command: `go run ./test/bench -n %s -concurrency %d -idle %s -unrelated %d%s`\n\n",
		strings.Join(ns, ","), cfg.concurrency, cfg.idle, cfg.unrelated, extra)

	header := "| | N = " + strings.Join(ns, " | N = ") + " |\n|---|" + strings.Repeat("---|", len(results)) + "\n"
	b.WriteString(header)
	row := func(name string, cell func(r *result) string) {
		cells := make([]string, len(results))
		for i, r := range results {
			cells[i] = cell(r)
		}
		fmt.Fprintf(&b, "| %s | %s |\n", name, strings.Join(cells, " | "))
	}
	row("floor-sync (plain client: Robot + Deployment + one status write each)", func(r *result) string { return secs(r.floorSync) })
	row("T_sync (every Deployment as asked, status.observedGeneration current)", func(r *result) string { return secs(r.tSync) })
	row("**T_sync / floor-sync** (target ≤ 1.5)", func(r *result) string { return fmt.Sprintf("**%.2f**", ratio(r.tSync, r.floorSync)) })
	row("floor-ready (every Deployment Available)", func(r *result) string { return secs(r.floorReady) })
	row("T_ready (every Robot Ready, availableReplicas = replicas)", func(r *result) string { return secs(r.tReady) })
	row("**T_ready / floor-ready** (target ≤ 1.15)", func(r *result) string { return fmt.Sprintf("**%.2f**", ratio(r.tReady, r.floorReady)) })
	row("create → Ready, p50 / p90 / p99", func(r *result) string {
		return fmt.Sprintf("%s / %s / %s", secs(percentile(r.latencies, .5)), secs(percentile(r.latencies, .9)), secs(percentile(r.latencies, .99)))
	})
	row("where the time goes, p50 / p90 / max: floor", func(r *result) string { return r.floorStages })
	row("… operator", func(r *result) string { return r.stages })
	row("CPU seconds, first create → all Ready: floor", func(r *result) string { return r.floorCPU.String() })
	row("… operator", func(r *result) string { return r.operatorCPU.String() })
	row("operator writes per Robot, create → all Ready (Events apart)", func(r *result) string {
		return fmt.Sprintf("%.2f", float64(r.creation.total.writes)/float64(r.n))
	})
	row("… by verb, resource, code (per Robot)", func(r *result) string { return breakdown(r.creation.writes, r.n) })
	row("Event writes per Robot", func(r *result) string { return fmt.Sprintf("%.2f", float64(r.creation.events)/float64(r.n)) })
	row("reads per Robot after start-up (by verb, resource, code)", func(r *result) string {
		return fmt.Sprintf("%.2f<br>%s", float64(r.creation.total.reads)/float64(r.n), breakdown(r.creation.reads, r.n))
	})
	row("409 Conflict / 429 Too Many Requests", func(r *result) string {
		return fmt.Sprintf("%d / %d", r.creation.total.conflicts+r.idle.total.conflicts, r.creation.total.throttled+r.idle.total.throttled)
	})
	row(fmt.Sprintf("idle writes (%s after convergence)", cfg.idle), func(r *result) string { return fmt.Sprint(r.idle.total.writes + r.idle.events) })
	row(fmt.Sprintf("restart writes (fresh operator, %s)", cfg.settle), func(r *result) string { return fmt.Sprint(r.restart.total.writes + r.restart.events) })
	row("peak RSS / live heap after convergence", func(r *result) string { return mib(r.peakRSS) + " / " + mib(r.heap) })
	row("restarted: RSS / live heap", func(r *result) string { return mib(r.baseRSS) + " / " + mib(r.baseHeap) })
	row(fmt.Sprintf("… with %d unrelated Deployments and %[1]d pods", cfg.unrelated), func(r *result) string {
		if r.unrelRSS == 0 {
			return "not measured"
		}
		return fmt.Sprintf("%s / %s (RSS %+.1f %%)", mib(r.unrelRSS), mib(r.unrelHeap), 100*(float64(r.unrelRSS)/float64(r.baseRSS)-1))
	})
	return b.String()
}

func mib(bytes uint64) string { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }

func kwokVersion(e *environment) string {
	parts := strings.Split(e.tools["KWOK"], "/")
	if len(parts) >= 2 {
		return strings.TrimPrefix(parts[len(parts)-2], "kwok-")
	}
	return "unknown"
}
