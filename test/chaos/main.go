// Command chaos breaks things on purpose while robot-operator works, and
// checks afterwards that nothing the operator owns was lost, duplicated or
// recreated, that every Robot converged, and that the operator neither hot
// looped during the fault nor kept writing once converged.
//
// Each scenario gets a fresh local cluster (hack/cluster.sh, named chaos),
// N Robots created and changed while the fault happens, and the operator
// running as its own ServiceAccount with the RBAC of artifacts/deploy. The
// API server's audit log is the witness of the operator's requests.
//
// Run it with `make chaos` or `go run ./test/chaos -n 60 -scenarios 1,3,7,10`.
// It exits non-zero when any invariant fails.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/robot-operator/robot-operator/test/internal/localcluster"
)

type config struct {
	n         int
	cluster   string
	scenarios []int
	kills     int
	fight     time.Duration
	churn     time.Duration
	churnRate float64
	hostile   int
	idle      time.Duration
	out       string
	root      string
	seed      int64
}

func main() {
	cfg := config{}
	var scenarios string
	flag.IntVar(&cfg.n, "n", 300, "Robots per scenario.")
	flag.StringVar(&cfg.cluster, "cluster", "chaos", "Name of the local cluster each scenario makes afresh (and removes).")
	flag.StringVar(&scenarios, "scenarios", "1,3,7", "Comma-separated scenarios to run: 1 (kill -9 the operator), 2 (kill -9 the leader of two replicas), 3 (kube-apiserver down), 4 (etcd down), 5 (watches expire: 410 Gone), 6 (partition the leader from the API server), 7 (another writer fights), 8 (churn: Robots created, changed and deleted for -churn), 9 (hostile input: -hostile random Robots at the schema's edges), 10 (kill -9 both replicas serving the conversion webhook, writes through v1alpha1 and v1beta1).")
	flag.IntVar(&cfg.kills, "kills", 50, "Scenario 1: how many times to kill the operator.")
	flag.DurationVar(&cfg.fight, "fight", 2*time.Minute, "Scenario 7: how long the other writer fights.")
	flag.DurationVar(&cfg.churn, "churn", 20*time.Minute, "Scenario 8: how long Robots are created, changed and deleted.")
	flag.Float64Var(&cfg.churnRate, "churn-rate", 4, "Scenario 8: Robots created, and as many deleted and changed, per second.")
	flag.IntVar(&cfg.hostile, "hostile", 2000, "Scenario 9: how many random Robots to create (instead of -n).")
	flag.DurationVar(&cfg.idle, "idle", 30*time.Second, "How long a converged operator must make no write.")
	flag.StringVar(&cfg.out, "out", "", "Also write the markdown table here.")
	flag.Int64Var(&cfg.seed, "seed", 0, "Seed of the random choices (0: the time).")
	flag.Parse()
	for _, s := range strings.Split(scenarios, ",") {
		id, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || scenarioByID(id) == nil {
			fmt.Fprintf(os.Stderr, "chaos: unknown scenario %q\n", s)
			os.Exit(2)
		}
		cfg.scenarios = append(cfg.scenarios, id)
	}
	if cfg.seed == 0 {
		cfg.seed = time.Now().UnixNano()
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	cfg.root = root

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	if !ok {
		fmt.Fprintln(os.Stderr, "chaos: an invariant failed")
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) (bool, error) {
	env, err := newEnvironment(ctx, cfg)
	if err != nil {
		return false, err
	}
	logf("seed %d", cfg.seed)
	var results []*result
	for _, id := range cfg.scenarios {
		s := scenarioByID(id)
		n := cfg.n
		if s.id == hostileScenario {
			n = cfg.hostile
		}
		logf("=== scenario %d: %s (N = %d)", s.id, s.name, n)
		start := time.Now()
		r, err := runScenario(ctx, env, s)
		if err != nil {
			return false, fmt.Errorf("scenario %d: %w", id, err)
		}
		r.wall = time.Since(start)
		for _, c := range r.checks {
			if !c.ok {
				logf("scenario %d: FAIL %s: %s", id, c.name, c.detail)
			}
		}
		results = append(results, r)
	}
	table := renderTable(cfg, results)
	fmt.Println(table)
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(table), 0o644); err != nil {
			return false, err
		}
	}
	for _, r := range results {
		if !r.passed() {
			return false, nil
		}
	}
	return true, nil
}

var logf = localcluster.Logger("chaos")
