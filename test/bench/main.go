// Command bench measures robot-operator against the physical floor of a
// local kwok cluster: how fast N Robots converge and become Ready compared
// with a plain client making the writes no operator can avoid, what the
// operator costs the API server (from the audit log), and its memory with
// and without 10,000 unrelated Deployments and pods in the cluster.
//
// Run it with `make bench` (N = 1000) or `go run ./test/bench -n 20`. Each N
// is measured in -pairs floor/operator pairs, run in turn (floor, operator,
// floor, operator, …), each phase on a fresh cluster of its own. Every
// ratio is taken within a pair, and reported as its median and its range
// over the pairs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientfeatures "k8s.io/client-go/features"

	"github.com/robot-operator/robot-operator/test/internal/localcluster"
)

type config struct {
	// cluster names the local cluster each phase makes afresh (and removes).
	cluster     string
	sizes       []int
	pairs       int
	concurrency int
	idle        time.Duration
	settle      time.Duration
	unrelated   int
	out         string
	plot        string
	root        string
	timeout     time.Duration
	// operatorArgs are extra flags for the operator.
	operatorArgs string
	// profile records CPU profiles of the API server (and the operator)
	// during each phase.
	profile bool
	// profileLength is how long -profile records each phase from its
	// first create; 0 records it whole.
	profileLength time.Duration
	// requestCosts measures what each kind of request costs instead.
	requestCosts bool
	// cbor makes -request-costs send and accept Robots in CBOR.
	cbor bool
	// namespaces is how many namespaces the Robots are spread over.
	namespaces int
	// service gives each Robot a port, and so a ClusterIP Service.
	service bool
	// controllerOnly makes Robots of 0 replicas and no Service: the
	// controller's own path, no pods.
	controllerOnly bool
	// floor runs the floor phase of each pair; without it the figures
	// against the floor are not measured.
	floor bool
	// churn is how long to change Robots' specs at churnRate a second, in
	// the first pair of each N, after the restart; 0 skips it.
	churn     time.Duration
	churnRate float64
	// scalePlot is where to draw memory and time to Ready against N.
	scalePlot string
	// v1beta1Only makes the CRD serve v1beta1 alone, not v1alpha1 as
	// shipped (-v1alpha1-served=false): the API server then keeps one watch
	// cache of Robots, not two.
	v1beta1Only bool
	// webhook serves the conversion webhook as installed: in the
	// operator's phase by the operator, in the floor's by the same handler
	// in the bench's process; the CRD points at it.
	webhook bool
}

func main() {
	cfg := config{}
	var sizes string
	flag.StringVar(&sizes, "n", "1000", "Comma-separated numbers of Robots to measure, -pairs floor/operator pairs each.")
	flag.IntVar(&cfg.pairs, "pairs", 3, "Floor/operator pairs to run for each N, in turn, each phase on a fresh cluster; the report gives each ratio's median and range over them (-request-costs runs once).")
	flag.StringVar(&cfg.cluster, "cluster", "robot-operator-bench", "Name of the local cluster each phase makes afresh (and removes); give two runs on one machine different names.")
	flag.IntVar(&cfg.concurrency, "concurrency", 16, "Concurrent writers of the floor client and of the Robot creator, and the operator's -workers.")
	flag.DurationVar(&cfg.idle, "idle", 60*time.Second, "How long to count the operator's writes after convergence, in the first pair of each N.")
	flag.DurationVar(&cfg.settle, "restart-settle", 20*time.Second, "How long to count a restarted operator's writes after its caches synced, in the first pair of each N.")
	flag.IntVar(&cfg.unrelated, "unrelated", 10000, "Unrelated Deployments, and as many pods, to add for the memory comparison in the first pair of each N (0 skips it).")
	flag.StringVar(&cfg.out, "out", "", "Write the markdown report here (default: print it only).")
	flag.StringVar(&cfg.plot, "plot", "", "Write a PNG plot of per-Robot latency here.")
	flag.DurationVar(&cfg.timeout, "timeout", 30*time.Minute, "Give up on one floor/operator pair after this long.")
	flag.StringVar(&cfg.operatorArgs, "operator-args", "", "Extra flags for the operator, space-separated (e.g. \"-kube-api-qps=500\").")
	flag.BoolVar(&cfg.profile, "profile", false, "Record CPU profiles of the API server and the operator from the first create of each phase (-profile-length), and the operator's heap after convergence, into _output/bench (the operator then samples its allocations finely, which costs it about a tenth of its CPU); with -request-costs, 4s of the API server at the start of each kind of request.")
	flag.DurationVar(&cfg.profileLength, "profile-length", 20*time.Second, "With -profile: how long to record each phase's CPU from its first create; 0 records the whole phase, to its last Ready, in consecutive 10s profiles (…-001.pprof, …-002.pprof; go tool pprof -top adds up the files it is given).")
	flag.BoolVar(&cfg.requestCosts, "request-costs", false, "Instead of the benchmark, measure the API server's and etcd's CPU per request of each kind the floor and the operator make, and of the alternatives (N = the first -n).")
	flag.BoolVar(&cfg.cbor, "cbor", false, "With -request-costs: the cluster serves custom resources in CBOR (its alpha gate CBORServingAndStorage on) and every Robot request is made in CBOR.")
	flag.IntVar(&cfg.namespaces, "namespaces", 1, "Spread the Robots (and the floor's objects) over this many namespaces, bench-00, bench-01, … (1: the namespace bench).")
	flag.BoolVar(&cfg.service, "service", false, "Give each Robot a port, and so a ClusterIP Service, which the floor creates too: the full path.")
	flag.BoolVar(&cfg.controllerOnly, "controller-only", false, "Robots of 0 replicas with service.type None: the controller's own path, no pods, no Service (the floor's Deployments have 0 replicas too).")
	flag.BoolVar(&cfg.floor, "floor", true, "Run the floor phase of each pair (-floor=false: the operator alone, no ratio to the floor).")
	flag.DurationVar(&cfg.churn, "churn", 0, "After the restart, in the first pair of each N, change Robots' specs (a new image, so a rollout) at -churn-rate a second for this long, and report the queue's wait and the time to Synced and to Ready (0 skips it).")
	flag.Float64Var(&cfg.churnRate, "churn-rate", 10, "Spec changes a second under -churn.")
	flag.StringVar(&cfg.scalePlot, "scale-plot", "", "Write a PNG plot of the operator's memory and of T_ready against N here (medians over the pairs).")
	v1alpha1Served := flag.Bool("v1alpha1-served", true, "Serve the CRD's v1alpha1 as shipped; false: serve v1beta1 alone, in every phase, to measure what a second served version costs the API server (a watch cache of its own, which converts every Robot written).")
	flag.BoolVar(&cfg.webhook, "webhook", true, "Serve the conversion webhook as installed, so that every conversion the API server asks for is answered, not failed: in the operator's phase the operator listens on loopback and the CRD points the API server at it; in the floor's the bench serves the same handler (its CPU is the floor client's). -webhook=false: no webhook answers, in either phase. The report counts conversions per Robot either way.")
	flag.Parse()
	cfg.v1beta1Only = !*v1alpha1Served
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench: -n wants positive integers, got %q\n", s)
			os.Exit(2)
		}
		cfg.sizes = append(cfg.sizes, n)
	}
	if cfg.namespaces < 1 || cfg.churn < 0 || cfg.churnRate <= 0 {
		fmt.Fprintln(os.Stderr, "bench: -namespaces must be at least 1, -churn not negative, -churn-rate positive")
		os.Exit(2)
	}
	if cfg.profileLength != 0 && cfg.profileLength < time.Second {
		// The profile endpoints take whole seconds: less would ask for 0,
		// which they answer with a default instead.
		fmt.Fprintf(os.Stderr, "bench: -profile-length wants 0 (the whole phase) or at least 1s, got %s\n", cfg.profileLength)
		os.Exit(2)
	}
	if cfg.pairs < 1 {
		fmt.Fprintf(os.Stderr, "bench: -pairs wants a positive integer, got %d\n", cfg.pairs)
		os.Exit(2)
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	cfg.root = root
	if cfg.cbor {
		if !cfg.requestCosts {
			fmt.Fprintln(os.Stderr, "bench: -cbor goes with -request-costs")
			os.Exit(2)
		}
		// In this process only: the cluster tools it runs would ask
		// for CBOR too, were the gates set in the environment.
		clientfeatures.ReplaceFeatureGates(cborGates{clientfeatures.FeatureGates()})
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	env, err := newEnvironment(ctx, cfg)
	if err != nil {
		return err
	}
	if cfg.requestCosts {
		report, err := measureRequestCosts(ctx, env, cfg.sizes[0], cfg.cbor)
		if err != nil {
			return err
		}
		fmt.Println(report)
		if cfg.out != "" {
			return writeReport(cfg.out, report)
		}
		return nil
	}
	var results []*series
	for _, n := range cfg.sizes {
		s := &series{n: n}
		for pair := 1; pair <= cfg.pairs; pair++ {
			logf("=== N = %d, pair %d of %d", n, pair, cfg.pairs)
			r, err := measure(ctx, env, n, pair)
			if err != nil {
				return fmt.Errorf("N = %d, pair %d: %w", n, pair, err)
			}
			s.pairs = append(s.pairs, r)
			if !cfg.floor {
				logf("N = %d, pair %d: T_sync %s, T_ready %s, kube-apiserver %.1f ms per Robot (no floor)",
					n, pair, secs(r.tSync), secs(r.tReady), operatorCPUPerRobot(apiServer)(r))
				continue
			}
			logf("N = %d, pair %d: T_sync %s (floor %s, ×%.2f), T_ready %s (floor %s, ×%.2f), kube-apiserver %.1f ms per Robot (floor %.1f, ×%.2f)",
				n, pair, secs(r.tSync), secs(r.floorSync), syncRatio(r), secs(r.tReady), secs(r.floorReady), readyRatio(r),
				operatorCPUPerRobot(apiServer)(r), floorCPUPerRobot(apiServer)(r), cpuRatio(apiServer)(r))
		}
		results = append(results, s)
		logf("N = %d over %d %s: T_sync / floor-sync %s, T_ready / floor-ready %s", n, len(s.pairs), plural(len(s.pairs), "pair", "pairs"),
			s.over(syncRatio).format(twoPlaces), s.over(readyRatio).format(twoPlaces))
	}

	report := renderReport(env, cfg, results)
	fmt.Println(report)
	if cfg.out != "" {
		if err := writeReport(cfg.out, report); err != nil {
			return err
		}
		logf("wrote %s", cfg.out)
	}
	if cfg.scalePlot != "" {
		if err := writeScalePlot(cfg.scalePlot, results); err != nil {
			return err
		}
		logf("wrote %s", cfg.scalePlot)
	}
	if cfg.plot != "" {
		first := make([]*result, len(results))
		for i, s := range results {
			first[i] = s.first()
		}
		if err := writePlot(cfg.plot, first); err != nil {
			return err
		}
		logf("wrote %s", cfg.plot)
	}
	return nil
}

var logf = localcluster.Logger("bench")

// cborGates are client-go's feature gates with CBOR allowed and preferred.
type cborGates struct{ clientfeatures.Gates }

func (g cborGates) Enabled(f clientfeatures.Feature) bool {
	return f == clientfeatures.ClientsAllowCBOR || f == clientfeatures.ClientsPreferCBOR || g.Gates.Enabled(f)
}

// keptMarker starts the part of a report file that a new report keeps: what
// people wrote below the figures (comparisons, attributions) outlives the
// run that replaces them.
const keptMarker = "<!-- Written by hand from here on: make bench replaces what is above this line only. -->"

// writeReport writes report to path, followed by what the file held from
// keptMarker on, if it had one.
func writeReport(path, report string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if i := strings.Index(string(old), keptMarker); i >= 0 {
		report = strings.TrimRight(report, "\n") + "\n\n" + string(old[i:])
	}
	return os.WriteFile(path, []byte(report), 0o644)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
