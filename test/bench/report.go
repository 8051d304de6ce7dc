package main

import (
	"cmp"
	"fmt"
	"math"
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
	fmt.Fprintf(&b, "Command: `go run ./test/bench -n %s -pairs %d -concurrency %d -idle %s -unrelated %d%s`\n\n",
		strings.Join(ns, ","), cfg.pairs, cfg.concurrency, cfg.idle, cfg.unrelated, extraFlags(cfg))
	if what := robotsMeasured(cfg); what != "" {
		b.WriteString(what + "\n\n")
	}

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
	summary("etcd CPU per Robot, operator / floor", cpuRatio(etcd), twoPlaces)
	summary("robot-operator CPU per Robot", operatorCPUPerRobot(operatorProcess), millis)
	summary("robot-operator RSS before the first Robot", func(r *result) float64 { return nonZero(r.emptyRSS) }, mibOf)
	summary("robot-operator peak RSS per Robot while converging, above that", rssPerRobot, kib)
	summary("robot-operator live heap per Robot after convergence, above its heap before the first Robot", heapPerRobot, kib)
	summary("floor-sync (plain client: Robot + Deployment + one status write each)", seconds(func(r *result) time.Duration { return r.floorSync }), tenths)
	summary("T_sync (every Deployment as asked, status.observedGeneration current)", seconds(func(r *result) time.Duration { return r.tSync }), tenths)
	summary("floor-ready (every Deployment Available)", seconds(func(r *result) time.Duration { return r.floorReady }), tenths)
	summary("T_ready (every Robot Ready, availableReplicas = replicas)", seconds(func(r *result) time.Duration { return r.tReady }), tenths)
	summary("operator writes per Robot, create → all Ready (Events apart)", writesPerRobot, twoPlaces)
	summary("Available → Robot Ready, p99 over the Robots (target ≤ 2 s)", seconds(func(r *result) time.Duration { return r.readyAfterAvailable }), tenths)

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
	first("where the time goes, p50 / p90 / p99 / max: floor", func(r *result) string { return cmp.Or(r.floorStages, "not measured") })
	first("… operator", func(r *result) string { return r.stages })
	first("CPU seconds, first create → all Ready: floor", func(r *result) string {
		if r.floorCPU == nil {
			return "not measured"
		}
		return r.floorCPU.String()
	})
	first("… operator", func(r *result) string { return r.operatorCPU.String() })
	first("operator writes per Robot, create → all Ready (Events apart)", func(r *result) string { return twoPlaces(writesPerRobot(r)) })
	first("… by verb, resource, code (per Robot)", func(r *result) string { return breakdown(r.creation.writes, r.n) })
	first("operator syncs per Robot, create → all Ready", func(r *result) string { return fmt.Sprintf("%.2f", r.syncs/float64(r.n)) })
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
		switch {
		case r.idle.total.writes+r.idle.events == 0:
			return "0"
		case r.idle.total.writes == 0:
			return fmt.Sprintf("%d (Events)", r.idle.events)
		}
		return fmt.Sprintf("%d<br>%s<br>Events: %d", r.idle.total.writes+r.idle.events, breakdown(r.idle.writes, 1), r.idle.events)
	})
	first("conversion webhook calls per Robot, create → all Ready (the API server's)", func(r *result) string { return r.conversions.perRobot(r.n) })
	first("… in the floor's phase, create → all Available", func(r *result) string {
		if !cfg.floor {
			return "not measured"
		}
		return r.floorConversions.perRobot(r.n)
	})
	first(fmt.Sprintf("… while idle (%s after convergence), in all", cfg.idle), func(r *result) string {
		if r.idleConversions == nil {
			return "not measured"
		}
		return r.idleConversions.String()
	})
	first(fmt.Sprintf("restart writes (fresh operator, %s)", cfg.settle), func(r *result) string {
		if r.restart == nil {
			return "not measured"
		}
		return fmt.Sprint(r.restart.total.writes + r.restart.events)
	})
	first("peak RSS / live heap after convergence", func(r *result) string { return mib(r.peakRSS) + " / " + mib(r.heap) })
	first("RSS the Go memory limit does not count, after convergence: anonymous (RssAnon − (go_memstats_sys_bytes − go_memstats_heap_released_bytes)) / file-backed (RssFile, the binary's pages)", func(r *result) string {
		if r.fileRSS == 0 {
			return "not measured"
		}
		return fmt.Sprintf("%+.1f MiB / %s", float64(r.anonOutsideLimit)/(1<<20), mib(r.fileRSS))
	})
	first("restart: caches synced (the relist) / every Robot checked, from the process's start", func(r *result) string {
		if r.restartChecked == 0 {
			return "not measured"
		}
		return secs(r.restartReady) + " / " + secs(r.restartChecked)
	})
	first("restart: robot-operator CPU until every Robot checked", func(r *result) string {
		if r.restartChecked == 0 {
			return "not measured"
		}
		return fmt.Sprintf("%.1f s (%.2f ms per Robot)", r.restartCPU.Seconds(), float64(r.restartCPU.Microseconds())/1000/float64(r.n))
	})
	first("restarted: peak RSS (per Robot above the RSS before the first Robot)", func(r *result) string {
		if r.basePeakRSS == 0 {
			return "not measured"
		}
		return fmt.Sprintf("%s (%s)", mib(r.basePeakRSS), kib(restartedRSSPerRobot(r)))
	})
	first("restarted: RSS / live heap", func(r *result) string { return mib(r.baseRSS) + " / " + mib(r.baseHeap) })
	first(fmt.Sprintf("… with %d unrelated Deployments and %[1]d pods", cfg.unrelated), func(r *result) string {
		if r.unrelRSS == 0 || r.baseRSS == 0 {
			return "not measured"
		}
		return fmt.Sprintf("%s / %s (RSS %+.1f %%)", mib(r.unrelRSS), mib(r.unrelHeap), 100*(float64(r.unrelRSS)/float64(r.baseRSS)-1))
	})
	if cfg.churn > 0 {
		renderChurn(&b, cfg, results)
	}
	return b.String()
}

// renderChurn is the table of the spec changes of the first pair of each N.
func renderChurn(b *strings.Builder, cfg config, results []*series) {
	fmt.Fprintf(b, "\n## Churn: %.0f spec changes a second for %s, after the restart\n\n", cfg.churnRate, cfg.churn)
	b.WriteString("Each change gives a Robot a new image: a new generation and a rollout. The bench's times run from the change's request to " +
		"the first status it saw Synced (Ready) for that generation or a later one; the operator's from its seeing the generation, " +
		"estimated from its histograms' buckets as histogram_quantile does, each with the bucket that holds it: the estimate is " +
		"known only to lie in that bucket, and the work queue's buckets are a decade wide.\n\n")
	b.WriteString("| | N = " + strings.Join(sizes(results), " | N = ") + " |\n|---|" + strings.Repeat("---|", len(results)) + "\n")
	row := func(name string, cell func(c *churnResult, n int) string) {
		cells := make([]string, len(results))
		for i, s := range results {
			if c := s.first().churn; c != nil {
				cells[i] = cell(c, s.n)
			} else {
				cells[i] = "not measured"
			}
		}
		fmt.Fprintf(b, "| %s | %s |\n", name, strings.Join(cells, " | "))
	}
	p50p99 := func(d []time.Duration) string {
		return fmt.Sprintf("%s / %s (%d)", secs(percentile(d, .5)), secs(percentile(d, .99)), len(d))
	}
	row("spec changes sent, over", func(c *churnResult, _ int) string {
		return fmt.Sprintf("%d in %s (%.1f a second)", c.changes, secs(c.elapsed), float64(c.changes)/c.elapsed.Seconds())
	})
	row("change → Synced, p50 / p99 (changes seen), bench's watch", func(c *churnResult, _ int) string { return p50p99(c.toSynced) })
	row("change → Ready, p50 / p99 (changes seen), bench's watch", func(c *churnResult, _ int) string { return p50p99(c.toReady) })
	row("work queue wait, p50 / p99, operator's workqueue_queue_duration_seconds", func(c *churnResult, _ int) string { return c.queueWait.quantiles() })
	row("generation seen → Synced, p50 / p99, operator's time_to_synced_seconds", func(c *churnResult, _ int) string { return c.opSynced.quantiles() })
	row("generation seen → Ready, p50 / p99, operator's time_to_ready_seconds", func(c *churnResult, _ int) string { return c.opReady.quantiles() })
	row("operator writes per change (Events apart)", func(c *churnResult, _ int) string {
		return fmt.Sprintf("%.2f<br>%s", float64(c.writes.total.writes)/float64(c.changes), breakdown(c.writes.writes, c.changes))
	})
	row("operator reads per change", func(c *churnResult, _ int) string {
		return fmt.Sprintf("%.2f<br>%s", float64(c.writes.total.reads)/float64(c.changes), breakdown(c.writes.reads, c.changes))
	})
	row("CPU seconds over the churn, to the last Ready", func(c *churnResult, _ int) string { return c.cpu.String() })
}

func sizes(results []*series) []string {
	ns := make([]string, len(results))
	for i, s := range results {
		ns[i] = fmt.Sprint(s.n)
	}
	return ns
}

// extraFlags are the flags of the run that differ from their defaults,
// beyond those the command line always shows.
func extraFlags(cfg config) string {
	var extra []string
	if cfg.namespaces > 1 {
		extra = append(extra, fmt.Sprintf("-namespaces %d", cfg.namespaces))
	}
	if cfg.service {
		extra = append(extra, "-service")
	}
	if cfg.controllerOnly {
		extra = append(extra, "-controller-only")
	}
	if !cfg.floor {
		extra = append(extra, "-floor=false")
	}
	if cfg.v1beta1Only {
		extra = append(extra, "-v1alpha1-served=false")
	}
	if cfg.webhook {
		extra = append(extra, "-webhook")
	}
	if cfg.churn > 0 {
		extra = append(extra, fmt.Sprintf("-churn %s -churn-rate %g", cfg.churn, cfg.churnRate))
	}
	if cfg.operatorArgs != "" {
		extra = append(extra, fmt.Sprintf("-operator-args %q", cfg.operatorArgs))
	}
	if len(extra) == 0 {
		return ""
	}
	return " " + strings.Join(extra, " ")
}

// robotsMeasured says what the measured Robots are, when not the default
// ones.
func robotsMeasured(cfg config) string {
	var parts []string
	switch {
	case cfg.controllerOnly:
		parts = append(parts, "Robots of 0 replicas with a port and `service.type: None`: the controller's own path, no pod, no Service")
	case cfg.service:
		parts = append(parts, "Robots of 1 replica with a port: each has a ClusterIP Service, which the floor creates too")
	}
	if cfg.namespaces > 1 {
		parts = append(parts, fmt.Sprintf("spread over %d namespaces", cfg.namespaces))
	}
	if !cfg.floor {
		parts = append(parts, "no floor phase: the figures against the floor are not measured")
	}
	if len(parts) == 0 {
		return ""
	}
	what := strings.Join(parts, "; ")
	return strings.ToUpper(what[:1]) + what[1:] + "."
}

// nonZero is v, or NaN when it is zero: not measured.
func nonZero(v uint64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return float64(v)
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

Written by test/bench (` + "`make bench`" + `, ` + "`make bench-scale`" + `, ` + "`make bench-controller-scale`" + `). For each N, on fresh local kwok clusters (real
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
- **the Robots**: by default each has 1 replica and no port, in the namespace ` + "`bench`" + `.
  ` + "`-service`" + ` gives each a port, and so a ClusterIP Service, which the floor creates too (the
  full path); ` + "`-namespaces K`" + ` spreads them, and the floor's objects, over K namespaces;
  ` + "`-controller-only`" + ` makes them of 0 replicas with ` + "`service.type: None`" + `, so that only
  the controller's own path runs (no pod, no Service), and ` + "`-floor=false`" + ` skips the floor.
- **memory per Robot**: the operator's RSS and live heap (after a forced collection) are read
  before the first create, with the warm-up Robot only, and again after convergence (peak RSS:
  the kernel's high-water mark); what the Robots added, divided by N, is the figure per Robot
  from which docs/operating.md sizes the operator's memory. The operator runs with
  ` + "`-memory-limit-from-cgroup=false`" + `: the figures are those of the Go runtime without a limit.
- **restart**: in the first pair, the operator is stopped after convergence and started again;
  the times from the new process's start to its caches synced (` + "`/readyz`" + `, the relist) and
  to every Robot synced once (its ` + "`robot_operator_syncs_total`" + ` at N + 1 with the work queue
  empty, polled every 200 ms), its CPU until then, its peak RSS, and its writes (0 is the goal)
  in the ` + "`-restart-settle`" + ` after that.
- **churn** (` + "`-churn D`" + `): after the restart, one Robot after another gets a new image,
  ` + "`-churn-rate`" + ` a second for D; the bench times each change to Synced and to Ready from its
  own watch, and reads the operator's histograms of the work queue's wait and of its time to
  Synced and to Ready over the churn.
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
  ` + "`patch(apply)`" + ` is a server-side apply (its ` + "`force=true`" + `), ` + "`patch`" + ` any other patch.
- **The first pair in detail**: per Robot, from its creation to its Deployment first seen, to
  the Deployment Available, to the Robot Ready (p50 / p90 / p99 / max; for the floor, Deployment
  created to Available); CPU seconds by process ("all" is the machine's busy time over all its
  cores); the operator's requests; its memory. The plot (benchmark-latency.png) shows each
  Robot's create → Ready latency by when it was created, in the first pair.

Times on a shared 2-core machine are noisy (absolute times have varied twofold between runs):
compare the ratios and the CPU per Robot, with their ranges.

`
