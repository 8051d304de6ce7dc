package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// renderReport is the markdown report: the method, the median and range of
// every ratio and CPU figure over the pairs (one column per N), every
// pair's figures, and the rest from the first pair of each N.
func renderReport(e *environment, cfg config, results []*series) string {
	var b strings.Builder
	ns := make([]string, len(cfg.sizes))
	for i, n := range cfg.sizes {
		ns[i] = fmt.Sprint(n)
	}
	b.WriteString(methodText)
	fmt.Fprintf(&b, "Measured %s on %d cores, %s of memory; Kubernetes %s (kwok %s), %s, operator %s.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), e.memory, e.Tools["K8S_VERSION"], kwokVersion(e), e.goVersion, e.Commit)
	extra := ""
	if cfg.operatorArgs != "" {
		extra = fmt.Sprintf(" -operator-args %q", cfg.operatorArgs)
	}
	fmt.Fprintf(&b, "Command: `go run ./test/bench -n %s -pairs %d -concurrency %d -idle %s -unrelated %d%s`\n\n",
		strings.Join(ns, ","), cfg.pairs, cfg.concurrency, cfg.idle, cfg.unrelated, extra)

	header := func() {
		b.WriteString("| | N = " + strings.Join(ns, " | N = ") + " |\n|---|" + strings.Repeat("---|", len(results)) + "\n")
	}
	row := func(name string, cell func(s *series) string) {
		cells := make([]string, len(results))
		for i, s := range results {
			cells[i] = cell(s)
		}
		fmt.Fprintf(&b, "| %s | %s |\n", name, strings.Join(cells, " | "))
	}
	summary := func(name string, fig func(r *result) float64, f func(float64) string) {
		row(name, func(s *series) string { return s.over(fig).format(f) })
	}
	boldSummary := func(name string, fig func(r *result) float64) {
		row(name, func(s *series) string { return s.over(fig).formatWith(boldRatio, twoPlaces) })
	}

	fmt.Fprintf(&b, "## Median (min – max) over %d %s\n\n", cfg.pairs, plural(cfg.pairs, "pair", "pairs"))
	header()
	boldSummary("**T_sync / floor-sync** (target ≤ 1.5)", syncRatio)
	boldSummary("**T_ready / floor-ready** (target ≤ 1.15)", readyRatio)
	boldSummary("**kube-apiserver CPU per Robot, operator / floor**", cpuRatio(apiServer))
	for _, p := range []string{apiServer, etcd, controllerManager} {
		summary(p+" CPU per Robot: floor", floorCPUPerRobot(p), millis)
		summary("… operator", operatorCPUPerRobot(p), millis)
	}
	summary("robot-operator CPU per Robot", operatorCPUPerRobot(operatorProcess), millis)
	summary("floor-sync (plain client: Robot + Deployment + one status write each)", seconds(func(r *result) time.Duration { return r.floorSync }), tenths)
	summary("T_sync (every Deployment as asked, status.observedGeneration current)", seconds(func(r *result) time.Duration { return r.tSync }), tenths)
	summary("floor-ready (every Deployment Available)", seconds(func(r *result) time.Duration { return r.floorReady }), tenths)
	summary("T_ready (every Robot Ready, availableReplicas = replicas)", seconds(func(r *result) time.Duration { return r.tReady }), tenths)
	summary("operator writes per Robot, create → all Ready (Events apart)", writesPerRobot, twoPlaces)

	b.WriteString("\n## Every pair\n\nIn the order run; CPU in ms per Robot, floor / operator, from the first create until all were Ready.\n")
	for _, s := range results {
		fmt.Fprintf(&b, "\n**N = %d**\n\n", s.n)
		b.WriteString("| pair | floor-sync | T_sync | T_sync / floor-sync | floor-ready | T_ready | T_ready / floor-ready | kube-apiserver (× operator / floor) | etcd | kube-controller-manager | robot-operator | operator writes per Robot |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range s.pairs {
			cpu := func(p string) string {
				return fmt.Sprintf("%.1f / %.1f", floorCPUPerRobot(p)(r), operatorCPUPerRobot(p)(r))
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %.2f | %s | %s | %.2f | %s (%.2f) | %s | %s | %.1f | %.2f |\n",
				r.pair, secs(r.floorSync), secs(r.tSync), syncRatio(r), secs(r.floorReady), secs(r.tReady), readyRatio(r),
				cpu(apiServer), cpuRatio(apiServer)(r), cpu(etcd), cpu(controllerManager), operatorCPUPerRobot(operatorProcess)(r), writesPerRobot(r))
		}
	}

	b.WriteString("\n## The first pair in detail\n\n")
	header()
	first := func(name string, cell func(r *result) string) {
		row(name, func(s *series) string { return cell(s.first()) })
	}
	first("create → Ready, p50 / p90 / p99", func(r *result) string {
		return fmt.Sprintf("%s / %s / %s", secs(percentile(r.latencies, .5)), secs(percentile(r.latencies, .9)), secs(percentile(r.latencies, .99)))
	})
	first("where the time goes, p50 / p90 / max: floor", func(r *result) string { return r.floorStages })
	first("… operator", func(r *result) string { return r.stages })
	first("CPU seconds, first create → all Ready: floor", func(r *result) string { return r.floorCPU.String() })
	first("… operator", func(r *result) string { return r.operatorCPU.String() })
	first("operator writes per Robot, create → all Ready (Events apart)", func(r *result) string { return twoPlaces(writesPerRobot(r)) })
	first("… by verb, resource, code (per Robot)", func(r *result) string { return breakdown(r.creation.writes, r.n) })
	first("Event writes per Robot", func(r *result) string { return fmt.Sprintf("%.2f", float64(r.creation.events)/float64(r.n)) })
	first("reads per Robot after start-up (by verb, resource, code)", func(r *result) string {
		return fmt.Sprintf("%.2f<br>%s", float64(r.creation.total.reads)/float64(r.n), breakdown(r.creation.reads, r.n))
	})
	first("409 Conflict / 429 Too Many Requests", func(r *result) string {
		conflicts, throttled := r.creation.total.conflicts, r.creation.total.throttled
		if r.idle != nil {
			conflicts, throttled = conflicts+r.idle.total.conflicts, throttled+r.idle.total.throttled
		}
		return fmt.Sprintf("%d / %d", conflicts, throttled)
	})
	first(fmt.Sprintf("idle writes (%s after convergence)", cfg.idle), func(r *result) string {
		if r.idle == nil {
			return "not measured"
		}
		return fmt.Sprint(r.idle.total.writes + r.idle.events)
	})
	first(fmt.Sprintf("restart writes (fresh operator, %s)", cfg.settle), func(r *result) string {
		if r.restart == nil {
			return "not measured"
		}
		return fmt.Sprint(r.restart.total.writes + r.restart.events)
	})
	first("peak RSS / live heap after convergence", func(r *result) string { return mib(r.peakRSS) + " / " + mib(r.heap) })
	first("restarted: RSS / live heap", func(r *result) string { return mib(r.baseRSS) + " / " + mib(r.baseHeap) })
	first(fmt.Sprintf("… with %d unrelated Deployments and %[1]d pods", cfg.unrelated), func(r *result) string {
		if r.unrelRSS == 0 || r.baseRSS == 0 {
			return "not measured"
		}
		return fmt.Sprintf("%s / %s (RSS %+.1f %%)", mib(r.unrelRSS), mib(r.unrelHeap), 100*(float64(r.unrelRSS)/float64(r.baseRSS)-1))
	})
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func mib(bytes uint64) string { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }

func kwokVersion(e *environment) string {
	parts := strings.Split(e.Tools["KWOK"], "/")
	if len(parts) >= 2 {
		return strings.TrimPrefix(parts[len(parts)-2], "kwok-")
	}
	return "unknown"
}

// methodText is how the figures are measured, at the head of the report.
const methodText = `# Benchmarks

Written by ` + "`make bench`" + ` (test/bench). For each N, on fresh local kwok clusters (real
kube-apiserver, etcd, controller-manager with QPS limits off, scheduler; kwok nodes that mark
pods Running), with the operator built from the tree running as its own process under its own
ServiceAccount and the RBAC of artifacts/deploy:

- **pairs**: each N is measured in several floor/operator pairs (` + "`-pairs`" + `, 3 by default),
  run in turn: floor, operator, floor, operator, … Every phase gets a fresh cluster of its own.
  Each ratio is taken within one pair, whose two phases run minutes apart on the same machine,
  so that what makes the machine faster or slower from one run to the next mostly cancels out.
- **median (min – max)**: each figure is computed per pair, then given as its median over the
  pairs (the mean of the middle two for an even number of pairs), with the smallest and the
  largest value in brackets: how far a single pair could have been off. "Every pair" lists
  each pair's figures.
- **floor**: a plain client without throttling, at the same concurrency, makes the writes no
  operator can avoid (create the Robot, create its Deployment, write its status once), then
  waits for every Deployment to be Available. floor-sync is when those writes are done;
  floor-ready when all are Available.
- **operator**: N Robots (1 replica each) are created at that concurrency; T_sync is when every
  Robot has its Deployment as asked and ` + "`status.observedGeneration`" + ` current, T_ready
  when every Robot is Ready=True with ` + "`availableReplicas == replicas`" + `. Then, in the
  first pair only, the operator idles, is restarted, and 10,000 unrelated Deployments and
  10,000 unrelated pods (Pending, bound by no scheduler) are added.
- **warm-up**: before either clock starts, one Robot is taken through the same steps in a
  namespace of its own, so that neither side pays on the clock for a fresh cluster's first
  requests (serving the new CRD, the controllers' first syncs).
- **CPU per Robot**, the primary cost figure: the CPU time (user and system, from /proc) that
  kube-apiserver, etcd and kube-controller-manager used from the first create until all were
  Ready (Available, for the floor), divided by N, in ms per Robot. It depends much less on what
  else the machine is doing than the times do. The operator / floor ratio of the API server's
  CPU per Robot is what the operator's requests cost it against the requests any controller
  must make. It also holds what the processes spend anyway while the clock runs, which weighs
  more at small N and in the longer phase.
- **API cost** comes from the API server's audit log, filtered by the operator's user: the
  writes while converging in every pair; the reads, idle and restart writes in the first.
- **The first pair in detail**: per Robot, from its creation to its Deployment first seen, to
  the Deployment Available, to the Robot Ready (p50 / p90 / max; for the floor, Deployment
  created to Available); CPU seconds by process ("all" is the machine's busy time over all its
  cores); the operator's requests; its memory. The plot (benchmark-latency.png) shows each
  Robot's create → Ready latency by when it was created, in the first pair.

Times on a shared 2-core machine are noisy (absolute times have varied twofold between runs):
compare the ratios and the CPU per Robot, with their ranges.

`
