// Command robot-operator keeps, for each Robot, an owned Deployment in the
// state the Robot asks for, and reports that Deployment's state in the
// Robot's status.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/robot-operator/robot-operator/internal/app"
	"github.com/robot-operator/robot-operator/internal/conversion"
	"github.com/robot-operator/robot-operator/internal/leader"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/precheck"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// version and revision (the commit) are stamped at build time (see the
// Makefile); app.Build says what an unstamped build reports.
var version, revision = "dev", ""

// options are the command-line settings.
type options struct {
	printVersion  bool
	loggingFormat string
	verbosity     int
	// The Controller's own settings.
	shutdownTimeout time.Duration
	policy          policy.Policy
	// run is what app.Run wires and runs.
	run app.Options
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program; it returns the process exit code. Errors a user
// can fix come out as one line on stderr, not as a stack trace.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == precheck.Command {
		return precheck.Main(args[1:], stdout, stderr)
	}
	opts, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "robot-operator: %v (run with -help for usage)\n", err)
		return 2
	}
	if opts.printVersion {
		fmt.Fprintln(stdout, app.Build(version, revision))
		return 0
	}
	if opts.loggingFormat == "json" {
		// JSON lines, one object per entry, with structured values (the
		// Robot as {"name","namespace"}) and the verbosity of -v.
		klog.SetLogger(logr.FromSlogHandler(slog.NewJSONHandler(stderr, &slog.HandlerOptions{
			Level: slog.Level(-opts.verbosity),
			// logr's verbosity N arrives as slog level -N: show it as "v",
			// the way klog's own JSON format does.
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if level, ok := a.Value.Any().(slog.Level); ok && a.Key == slog.LevelKey && level <= slog.LevelInfo {
					return slog.Int("v", int(-level))
				}
				return a
			},
		})))
	}
	defer klog.Flush()

	// The first SIGINT or SIGTERM stops the operator cleanly; a second one
	// kills it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	logger := klog.FromContext(ctx)

	opts.run.Version, opts.run.Revision = version, revision
	if err := app.Run(ctx, opts.run, newController(opts)); err != nil {
		klog.Flush()
		fmt.Fprintf(stderr, "robot-operator: %v\n", err)
		return 1
	}
	logger.Info("Stopped")
	return 0
}

// parseFlags reads the command line. klog's flags (-v, -logtostderr, ...) are
// accepted too.
func parseFlags(args []string, usageOut io.Writer) (*options, error) {
	fs := flag.NewFlagSet("robot-operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	klog.InitFlags(fs)

	opts := &options{}
	fs.BoolVar(&opts.printVersion, "version", false, "Print the operator's version and exit.")
	fs.StringVar(&opts.run.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Only required if out-of-cluster.")
	fs.StringVar(&opts.run.Master, "master", "", "The address of the Kubernetes API server. Overrides any value in kubeconfig. Only required if out-of-cluster.")
	fs.StringVar(&opts.run.Namespace, "namespace", metav1.NamespaceAll, "Watch Robots and manage Deployments in this namespace only (default: all namespaces).")
	fs.IntVar(&opts.run.Workers, "workers", 8, "How many Robots to sync at the same time.")
	fs.Float64Var(&opts.run.QPS, "kube-api-qps", 1000, "Sustained requests per second to the API server, over all workers and Events (the leader election Lease and the metrics endpoint's reviews have clients of their own).")
	fs.IntVar(&opts.run.Burst, "kube-api-burst", 2000, "Requests the operator may send at once above -kube-api-qps.")
	fs.BoolVar(&opts.run.Compression, "kube-api-compression", false, "Ask the API server to gzip its responses. Off, the default, spares the API server and the operator the CPU of compressing every watch event and list; turn it on only for an operator far from its API server on a slow link.")
	fs.DurationVar(&opts.run.ResyncPeriod, "resync-period", 10*time.Minute, "How often every Robot is rechecked against the cache even when nothing changed (0 turns it off). A converged Robot costs no API request.")
	fs.DurationVar(&opts.shutdownTimeout, "shutdown-timeout", 20*time.Second, "On SIGTERM or SIGINT, how long the syncs in flight may take to finish before they are cancelled.")
	fs.DurationVar(&opts.run.SyncTimeout, "sync-timeout", defaultSyncTimeout, "How long one sync of a Robot, all its API requests included, may take before it is cancelled and retried with backoff. The liveness check fails for a sync running ten times as long (at least a minute).")

	le := &opts.run.LeaderElection
	fs.BoolVar(&le.Enabled, "leader-elect", false, "Run only while holding a Lease, so that one of several replicas writes at a time. The shipped manifests turn it on.")
	fs.StringVar(&le.Namespace, "leader-elect-namespace", "", "Namespace of the leader election Lease (default: the pod's namespace in a cluster, \"default\" outside one).")
	fs.StringVar(&le.Id, "leader-elect-id", "robot-operator", "Name of the leader election Lease.")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long followers wait after the last renewal before taking the Lease over.")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before it gives up and exits. Must be less than the lease duration.")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "How often to try to acquire or renew the Lease.")

	fs.StringVar(&opts.run.MetricsAddr, "metrics-bind-address", ":8080", "Address to serve Prometheus metrics on, at /metrics (\"0\" turns it off).")
	fs.BoolVar(&opts.run.MetricsSecure, "metrics-secure", true, "Serve metrics over HTTPS, only to callers whose bearer token the API server authenticates (TokenReview) and who may get /metrics (SubjectAccessReview; see the ClusterRole robot-operator-metrics-reader). -metrics-secure=false serves plain HTTP to anyone, for local runs.")
	fs.StringVar(&opts.run.MetricsCertDir, "metrics-cert-dir", "", "Directory with the metrics server's tls.crt and tls.key (a kubernetes.io/tls Secret, e.g. from cert-manager), loaded again when they change (default: a self-signed certificate made at start-up).")
	fs.StringVar(&opts.run.HealthAddr, "health-probe-bind-address", ":8081", "Address to serve /healthz and /readyz on (\"0\" turns it off).")
	fs.StringVar(&opts.run.PprofAddr, "pprof-bind-address", "", "Address to serve Go profiles on, at /debug/pprof/ (off unless set; keep it on loopback).")
	fs.BoolVar(&opts.run.MemoryLimitFromCgroup, "memory-limit-from-cgroup", true, "Set the Go runtime's memory limit (GOMEMLIMIT) to the container's memory limit, read from its cgroup at start-up, less the larger of a tenth of it and 32 MiB; nothing is set when the container has no limit or GOMEMLIMIT is set in the environment.")
	fs.BoolVar(&opts.run.ObserveOnly, "observe-only", false, "Write nothing, and report what this release would change: per Robot in the log, in total in the robot_operator_observe_* gauges, and at "+app.ObservePath+" on the health probes' address. Every client refuses writes; no Lease is taken (-leader-elect is ignored) and no webhook served. Run it beside the leader before an upgrade (docs/operating.md).")
	fs.StringVar(&opts.loggingFormat, "logging-format", "text", "Log format: text or json.")
	wh := &opts.run.Webhook
	fs.StringVar(&wh.Addr, "webhook-bind-address", ":9443", "Address to serve the CRD's conversion webhook on, over HTTPS at "+conversion.Path+", on every replica (\"0\" turns it off, and with it the certificates' upkeep).")
	fs.StringVar(&wh.Namespace, "webhook-namespace", "", "Namespace of the webhook's Secret and Service (default: the pod's namespace in a cluster, \"default\" outside one).")
	fs.StringVar(&wh.Secret, "webhook-secret", "robot-operator-webhook-cert", "The Secret that holds the webhook's certificate (tls.crt, tls.key) and CA (ca.crt); the manifests ship it empty.")
	fs.StringVar(&wh.Service, "webhook-service", "robot-operator-webhook", "The Service, port 443, through which the API server reaches the webhook.")
	fs.StringVar(&wh.URL, "webhook-url", "", "The https:// URL at which the API server reaches the webhook, instead of -webhook-service: for an operator run outside the cluster, e.g. https://127.0.0.1:9443/convert. The CRD must be installed with the same url.")
	fs.StringVar(&wh.Certs, "webhook-certs", app.WebhookCertsSelf, "Who keeps the webhook's certificates: self (any replica, leader or not, makes a CA and a serving certificate into -webhook-secret, renews them, makes the Secret again if it is deleted, and sets the CRD's caBundle), or external (cert-manager or another writer fills the Secret; the replicas only copy its ca.crt into the CRD's caBundle, keeping the previous one until it expires).")
	fs.Func("serve-v1alpha1", "Whether the CRD serves robot.dev/v1alpha1 (true or false): the leader of an operator that watches every namespace sets it once the Robots are stored as v1beta1 (default: the CRD as installed). See docs/operating.md before turning it off.", func(v string) error {
		serve, err := strconv.ParseBool(v)
		opts.run.ServeV1alpha1 = &serve
		return err
	})
	completePolicy := opts.policy.Flags(fs)
	// The flag package prints the usage on every parse error; print it only
	// when asked for, so that a mistake gives one line.
	fs.Usage = func() {}

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(usageOut, "Usage: robot-operator [flags]\n       robot-operator "+precheck.Command+" [flags]   (before an upgrade: which Robots would not convert cleanly)\n\nKeeps a Deployment for each Robot (robot.dev/v1beta1) and reports its state on the Robot.\n\nFlags:\n")
			fs.SetOutput(usageOut)
			fs.PrintDefaults()
		}
		return nil, err
	}
	if wh.Namespace == "" {
		wh.Namespace = leader.DefaultLeaseNamespace()
	}
	if le.Namespace == "" {
		le.Namespace = leader.DefaultLeaseNamespace()
	}
	opts.verbosity, _ = strconv.Atoi(fs.Lookup("v").Value.String())
	if err := completePolicy(); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	return opts, nil
}

// check says what is wrong with the values of the flags, if anything.
func (o *options) check() error {
	le, wh := o.run.LeaderElection, o.run.Webhook
	switch {
	case o.run.Workers < 1:
		return fmt.Errorf("-workers must be at least 1, not %d", o.run.Workers)
	case o.run.QPS <= 0:
		return fmt.Errorf("-kube-api-qps must be positive, not %v", o.run.QPS)
	case o.run.Burst < 1:
		return fmt.Errorf("-kube-api-burst must be at least 1, not %d", o.run.Burst)
	case o.run.ResyncPeriod < 0:
		return fmt.Errorf("-resync-period must not be negative, not %v", o.run.ResyncPeriod)
	case o.shutdownTimeout < 0:
		return fmt.Errorf("-shutdown-timeout must not be negative, not %v", o.shutdownTimeout)
	case o.run.SyncTimeout <= 0:
		return fmt.Errorf("-sync-timeout must be positive, not %v", o.run.SyncTimeout)
	case o.run.MetricsCertDir != "" && !o.run.MetricsSecure:
		return fmt.Errorf("-metrics-cert-dir needs -metrics-secure")
	case o.loggingFormat != "text" && o.loggingFormat != "json":
		return fmt.Errorf("-logging-format must be text or json, not %q", o.loggingFormat)
	case o.run.ServeV1alpha1 != nil && o.run.Namespace != metav1.NamespaceAll:
		return fmt.Errorf("-serve-v1alpha1 needs an operator that watches every namespace, not -namespace %s", o.run.Namespace)
	case wh.Certs != app.WebhookCertsSelf && wh.Certs != app.WebhookCertsExternal:
		return fmt.Errorf("-webhook-certs must be self or external, not %q", wh.Certs)
	case le.Enabled && le.RenewDeadline >= le.LeaseDuration:
		return fmt.Errorf("-leader-elect-renew-deadline (%v) must be less than -leader-elect-lease-duration (%v)", le.RenewDeadline, le.LeaseDuration)
	case le.Enabled && le.RetryPeriod >= le.RenewDeadline:
		return fmt.Errorf("-leader-elect-retry-period (%v) must be less than -leader-elect-renew-deadline (%v)", le.RetryPeriod, le.RenewDeadline)
	}
	return nil
}

// newController returns what builds the Controller from what app.Run wires.
func newController(opts *options) app.NewController {
	return func(ctx context.Context, wiring app.Wiring) (app.Controller, error) {
		controller, err := NewController(ctx, Options{
			Wiring:          wiring,
			SyncTimeout:     opts.run.SyncTimeout,
			ShutdownTimeout: opts.shutdownTimeout,
			Policy:          opts.policy,
		})
		if err != nil {
			return nil, err
		}
		return leading{controller}, nil
	}
}

// leading is the Controller as app.Run runs it.
type leading struct{ *Controller }

// Lead runs the workers with the leader gauge at 1 for as long as they run.
func (l leading) Lead(ctx context.Context, workers int) error {
	return l.metrics.Leading(func() error { return l.Run(ctx, workers) })
}

// Recorder records the Controller's Events.
func (l leading) Recorder() record.EventRecorder { return l.writer.Recorder }
