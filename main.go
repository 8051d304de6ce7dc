// Command robot-operator keeps, for each Robot, an owned Deployment in the
// state the Robot asks for, and reports that Deployment's state in the
// Robot's status.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/robot-operator/robot-operator/internal/conversion"
	"github.com/robot-operator/robot-operator/internal/leader"
	"github.com/robot-operator/robot-operator/internal/metrics"
	"github.com/robot-operator/robot-operator/internal/migration"
	"github.com/robot-operator/robot-operator/internal/outage"
	"github.com/robot-operator/robot-operator/internal/podsummary"
	"github.com/robot-operator/robot-operator/internal/precheck"
	"github.com/robot-operator/robot-operator/internal/robotclient"
	"github.com/robot-operator/robot-operator/internal/serving"
	"github.com/robot-operator/robot-operator/internal/transform"
	"github.com/robot-operator/robot-operator/internal/webhookcert"
	"github.com/robot-operator/robot-operator/internal/workload"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/robot-operator/robot-operator/pkg/apis/robot"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
	informers "github.com/robot-operator/robot-operator/pkg/generated/informers/externalversions"
)

// version is stamped at build time (see the Makefile).
var version = "dev"

// options are the command-line settings.
type options struct {
	printVersion    bool
	kubeconfig      string
	master          string
	namespace       string
	workers         int
	qps             float64
	burst           int
	resyncPeriod    time.Duration
	shutdownTimeout time.Duration
	syncTimeout     time.Duration
	leaderElection  leader.Config
	metricsAddr     string
	metricsSecure   bool
	metricsCertDir  string
	healthAddr      string
	pprofAddr       string
	loggingFormat   string
	serviceTypes    []robotv1beta1.ServiceType
	verbosity       int
	webhook         webhookOptions
}

// webhookOptions say where the conversion webhook listens, how the API
// server reaches it, and who keeps its certificates.
type webhookOptions struct {
	addr      string
	namespace string
	secret    string
	service   string
	url       string
	certs     string
}

// The values of -webhook-certs.
const (
	webhookCertsSelf     = "self"
	webhookCertsExternal = "external"
)

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
		fmt.Fprintln(stdout, version)
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

	if err := runOperator(ctx, opts); err != nil {
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
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Only required if out-of-cluster.")
	fs.StringVar(&opts.master, "master", "", "The address of the Kubernetes API server. Overrides any value in kubeconfig. Only required if out-of-cluster.")
	fs.StringVar(&opts.namespace, "namespace", metav1.NamespaceAll, "Watch Robots and manage Deployments in this namespace only (default: all namespaces).")
	fs.IntVar(&opts.workers, "workers", 8, "How many Robots to sync at the same time.")
	fs.Float64Var(&opts.qps, "kube-api-qps", 1000, "Sustained requests per second to the API server, over all workers and Events (the leader election Lease and the metrics endpoint's reviews have clients of their own).")
	fs.IntVar(&opts.burst, "kube-api-burst", 2000, "Requests the operator may send at once above -kube-api-qps.")
	fs.DurationVar(&opts.resyncPeriod, "resync-period", 10*time.Minute, "How often every Robot is rechecked against the cache even when nothing changed (0 turns it off). A converged Robot costs no API request.")
	fs.DurationVar(&opts.shutdownTimeout, "shutdown-timeout", 20*time.Second, "On SIGTERM or SIGINT, how long the syncs in flight may take to finish before they are cancelled.")
	fs.DurationVar(&opts.syncTimeout, "sync-timeout", defaultSyncTimeout, "How long one sync of a Robot, all its API requests included, may take before it is cancelled and retried with backoff. The liveness check fails for a sync running ten times as long (at least a minute).")

	le := &opts.leaderElection
	fs.BoolVar(&le.Enabled, "leader-elect", false, "Run only while holding a Lease, so that one of several replicas writes at a time. The shipped manifests turn it on.")
	fs.StringVar(&le.Namespace, "leader-elect-namespace", "", "Namespace of the leader election Lease (default: the pod's namespace in a cluster, \"default\" outside one).")
	fs.StringVar(&le.Id, "leader-elect-id", "robot-operator", "Name of the leader election Lease.")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long followers wait after the last renewal before taking the Lease over.")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before it gives up and exits. Must be less than the lease duration.")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "How often to try to acquire or renew the Lease.")

	fs.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8080", "Address to serve Prometheus metrics on, at /metrics (\"0\" turns it off).")
	fs.BoolVar(&opts.metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS, only to callers whose bearer token the API server authenticates (TokenReview) and who may get /metrics (SubjectAccessReview; see the ClusterRole robot-operator-metrics-reader). -metrics-secure=false serves plain HTTP to anyone, for local runs.")
	fs.StringVar(&opts.metricsCertDir, "metrics-cert-dir", "", "Directory with the metrics server's tls.crt and tls.key (a kubernetes.io/tls Secret, e.g. from cert-manager), loaded again when they change (default: a self-signed certificate made at start-up).")
	fs.StringVar(&opts.healthAddr, "health-probe-bind-address", ":8081", "Address to serve /healthz and /readyz on (\"0\" turns it off).")
	fs.StringVar(&opts.pprofAddr, "pprof-bind-address", "", "Address to serve Go profiles on, at /debug/pprof/ (off unless set; keep it on loopback).")
	fs.StringVar(&opts.loggingFormat, "logging-format", "text", "Log format: text or json.")
	wh := &opts.webhook
	fs.StringVar(&wh.addr, "webhook-bind-address", ":9443", "Address to serve the CRD's conversion webhook on, over HTTPS at "+conversion.Path+", on every replica (\"0\" turns it off, and with it the certificates' upkeep).")
	fs.StringVar(&wh.namespace, "webhook-namespace", "", "Namespace of the webhook's Secret and Service (default: the pod's namespace in a cluster, \"default\" outside one).")
	fs.StringVar(&wh.secret, "webhook-secret", "robot-operator-webhook-cert", "The Secret that holds the webhook's certificate (tls.crt, tls.key) and CA (ca.crt); the manifests ship it empty.")
	fs.StringVar(&wh.service, "webhook-service", "robot-operator-webhook", "The Service, port 443, through which the API server reaches the webhook.")
	fs.StringVar(&wh.url, "webhook-url", "", "The https:// URL at which the API server reaches the webhook, instead of -webhook-service: for an operator run outside the cluster, e.g. https://127.0.0.1:9443/convert. The CRD must be installed with the same url.")
	fs.StringVar(&wh.certs, "webhook-certs", webhookCertsSelf, "Who keeps the webhook's certificates: self (any replica, leader or not, makes a CA and a serving certificate into -webhook-secret, renews them, makes the Secret again if it is deleted, and sets the CRD's caBundle), or external (cert-manager or another writer fills the Secret; the replicas only copy its ca.crt into the CRD's caBundle, keeping the previous one until it expires).")
	serviceTypes := fs.String("service-types", "ClusterIP,NodePort,LoadBalancer", "The types of Service the operator creates for Robots, comma-separated: a Robot that asks for another reports Synced=False, ServiceTypeNotAllowed. ClusterIP alone keeps whoever may create a Robot from opening a NodePort or a LoadBalancer through the operator.")
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
	if wh.namespace == "" {
		wh.namespace = leader.DefaultLeaseNamespace()
	}
	if le.Namespace == "" {
		le.Namespace = leader.DefaultLeaseNamespace()
	}
	opts.verbosity, _ = strconv.Atoi(fs.Lookup("v").Value.String())
	for _, name := range strings.Split(*serviceTypes, ",") {
		t := robotv1beta1.ServiceType(strings.TrimSpace(name))
		if !slices.Contains([]robotv1beta1.ServiceType{robotv1beta1.ServiceTypeClusterIP, robotv1beta1.ServiceTypeNodePort, robotv1beta1.ServiceTypeLoadBalancer}, t) {
			return nil, fmt.Errorf("-service-types: %q is not a Service type the operator creates; give ClusterIP, NodePort or LoadBalancer, comma-separated", name)
		}
		if !slices.Contains(opts.serviceTypes, t) {
			opts.serviceTypes = append(opts.serviceTypes, t)
		}
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case opts.workers < 1:
		return nil, fmt.Errorf("-workers must be at least 1, not %d", opts.workers)
	case opts.qps <= 0:
		return nil, fmt.Errorf("-kube-api-qps must be positive, not %v", opts.qps)
	case opts.burst < 1:
		return nil, fmt.Errorf("-kube-api-burst must be at least 1, not %d", opts.burst)
	case opts.resyncPeriod < 0:
		return nil, fmt.Errorf("-resync-period must not be negative, not %v", opts.resyncPeriod)
	case opts.shutdownTimeout < 0:
		return nil, fmt.Errorf("-shutdown-timeout must not be negative, not %v", opts.shutdownTimeout)
	case opts.syncTimeout <= 0:
		return nil, fmt.Errorf("-sync-timeout must be positive, not %v", opts.syncTimeout)
	case opts.metricsCertDir != "" && !opts.metricsSecure:
		return nil, fmt.Errorf("-metrics-cert-dir needs -metrics-secure")
	case opts.loggingFormat != "text" && opts.loggingFormat != "json":
		return nil, fmt.Errorf("-logging-format must be text or json, not %q", opts.loggingFormat)
	case wh.certs != webhookCertsSelf && wh.certs != webhookCertsExternal:
		return nil, fmt.Errorf("-webhook-certs must be self or external, not %q", wh.certs)
	case le.Enabled && le.RenewDeadline >= le.LeaseDuration:
		return nil, fmt.Errorf("-leader-elect-renew-deadline (%v) must be less than -leader-elect-lease-duration (%v)", le.RenewDeadline, le.LeaseDuration)
	case le.Enabled && le.RetryPeriod >= le.RenewDeadline:
		return nil, fmt.Errorf("-leader-elect-retry-period (%v) must be less than -leader-elect-renew-deadline (%v)", le.RetryPeriod, le.RenewDeadline)
	}
	return opts, nil
}

// runOperator connects to the cluster and runs the controller until ctx is
// done.
func runOperator(ctx context.Context, opts *options) error {
	logger := klog.FromContext(ctx)
	identity, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("reading the host name: %w", err)
	}
	identity += "_" + string(uuid.NewUUID())

	cfg, err := restConfig(opts, identity)
	if err != nil {
		return err
	}
	// Metrics providers must be in place before the first client or queue.
	registry := prometheus.NewRegistry()
	metrics.RegisterProcessMetrics(registry)
	if err := checkCluster(cfg); err != nil {
		return err
	}

	// The informers' and the syncs' requests go through the outage gate:
	// while the API server is down they wait for it (reads) or fail unsent
	// (writes), and one probe looks for its return, so that the operator
	// resumes the moment it answers instead of after the back-off the
	// failures would have built up. The Lease and the metrics reviews keep
	// clients of their own, outside the gate: a leader must see that it
	// cannot renew.
	gate, err := newOutageGate(ctx, cfg)
	if err != nil {
		return err
	}
	syncCfg := rest.CopyConfig(cfg)
	syncCfg.Wrap(gate.Wrap)

	// Built-in types travel as protobuf, which costs the API server and the
	// operator less CPU to encode and decode than JSON; Robots, a custom
	// resource, have only JSON.
	kubeClient, err := kubernetes.NewForConfig(protobufConfig(syncCfg))
	if err != nil {
		return fmt.Errorf("building the Kubernetes client: %w", err)
	}
	robotClient, err := robotclient.NewForConfig(syncCfg)
	if err != nil {
		return fmt.Errorf("building the Robot client: %w", err)
	}

	// Only the Deployments and Services the operator manages are cached, so
	// memory follows the Robots, not the cluster: those a Robot controls
	// whole but for the little of their managedFields the controller reads,
	// any other with the label as a stub (transform.Workloads). A Robot's
	// managedFields are never read, and dropped.
	kubeInformerFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, opts.resyncPeriod,
		kubeinformers.WithNamespace(opts.namespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.SelectorFromSet(labels.Set{workload.LabelManagedBy: workload.LabelManagedByValue}).String()
		}),
		kubeinformers.WithTransform(transform.Workloads))
	// The pods and ReplicaSets of those Deployments, by the same label (a
	// ReplicaSet has its pod template's labels), summarized to what says
	// why the pods of each Deployment's current ReplicaSet do not run
	// (internal/podsummary). No resync: the Robots' own resync rechecks them.
	podInformerFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 0,
		kubeinformers.WithNamespace(opts.namespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.SelectorFromSet(labels.Set{workload.LabelManagedBy: workload.LabelManagedByValue}).String()
		}),
		kubeinformers.WithTransform(podsummary.Summarize))
	robotInformerFactory := informers.NewSharedInformerFactoryWithOptions(robotClient, opts.resyncPeriod,
		informers.WithNamespace(opts.namespace),
		informers.WithTransform(transform.StripManagedFields))

	// The write fence: open until this process leads, then shut whenever
	// the Lease may have gone to another replica.
	fence := &leader.Fence{}
	controller, err := NewController(ctx, Options{
		KubeClient:         kubeClient,
		RobotClient:        robotClient,
		DeploymentInformer: kubeInformerFactory.Apps().V1().Deployments(),
		ServiceInformer:    kubeInformerFactory.Core().V1().Services(),
		RobotInformer:      robotInformerFactory.Robot().V1beta1().Robots(),
		PodInformer:        podInformerFactory.Core().V1().Pods().Informer(),
		ReplicaSetInformer: podInformerFactory.Apps().V1().ReplicaSets().Informer(),
		SyncTimeout:        opts.syncTimeout,
		ShutdownTimeout:    opts.shutdownTimeout,
		MayWrite:           fence.Check,
		Outage:             gate,
		ServiceTypes:       opts.serviceTypes,
	})
	if err != nil {
		return err
	}
	if err := controller.RegisterMetrics(registry); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}

	// Listen before anything else starts, so a taken port fails at once.
	var servers []*http.Server
	defer func() { serving.ShutdownServers(logger, servers) }()
	// The metrics endpoint's reviews get a client of their own, so that
	// scrapes, or a flood of made-up tokens, never wait on the syncs' rate
	// limiter nor make the syncs wait on theirs.
	reviewClient, err := kubernetes.NewForConfig(reviewConfig(cfg))
	if err != nil {
		return fmt.Errorf("building the metrics review client: %w", err)
	}
	webhook, err := newWebhook(opts.webhook, kubeClient, syncCfg, registry)
	if err != nil {
		return err
	}
	migrator, err := newMigrator(opts, robotClient, syncCfg, controller.writer.Recorder, registry)
	if err != nil {
		return err
	}
	metricsHandler, metricsTLS, err := serving.MetricsEndpoint(ctx, opts.metricsSecure, opts.metricsCertDir, registry, reviewClient)
	if err != nil {
		return err
	}
	for _, s := range []struct {
		name, addr string
		handler    http.Handler
		tls        *tls.Config
	}{
		{"metrics", opts.metricsAddr, metricsHandler, metricsTLS},
		{"health probes", opts.healthAddr, serving.HealthHandler(controller, opts.syncTimeout, webhook.ready), nil},
		{"pprof", opts.pprofAddr, serving.ProfileHandler(), nil},
		{"conversion webhook", opts.webhook.addr, webhook.handler, webhook.tls},
	} {
		if s.addr == "" || s.addr == "0" {
			continue
		}
		server, err := serving.Serve(logger, s.name, s.addr, s.handler, s.tls)
		if err != nil {
			return err
		}
		servers = append(servers, server)
	}

	// Informers run on every replica, leader or not, so that a new leader
	// starts with warm caches and /readyz tells when they are.
	// Shutdown waits for the informers, which stop only when their stop
	// channel closes: close it on every way out, not only on a signal.
	informersCtx, stopInformers := context.WithCancel(ctx)
	defer func() {
		stopInformers()
		kubeInformerFactory.Shutdown()
		podInformerFactory.Shutdown()
		robotInformerFactory.Shutdown()
	}()
	kubeInformerFactory.Start(informersCtx.Done())
	podInformerFactory.Start(informersCtx.Done())
	robotInformerFactory.Start(informersCtx.Done())
	var watches sync.WaitGroup
	defer watches.Wait()
	if webhook.upkeep != nil {
		watches.Go(func() {
			if err := webhook.upkeep.Run(informersCtx); err != nil {
				logger.Error(err, "Keeping the webhook's certificates")
			}
		})
	}

	logger.Info("Starting robot-operator", "version", version, "host", cfg.Host, "namespace", namespaceOrAll(opts.namespace),
		"workers", opts.workers, "leaderElection", opts.leaderElection.Enabled)
	if !opts.leaderElection.Enabled {
		go migrateStorage(ctx, migrator)
		return controller.runLeading(func() error { return controller.Run(ctx, opts.workers) })
	}
	// The Lease gets a client of its own, so that a burst of syncs waiting
	// on the shared rate limiter never delays a renewal.
	leaseCfg := protobufConfig(cfg)
	leaseCfg.RateLimiter = nil
	leaseCfg.QPS, leaseCfg.Burst = 5, 10
	leaseClient, err := kubernetes.NewForConfig(leaseCfg)
	if err != nil {
		return fmt.Errorf("building the leader election client: %w", err)
	}
	return leader.Run(ctx, leaseClient, opts.leaderElection, identity, func(ctx context.Context, mayWrite func() error) error {
		fence.Arm(mayWrite)
		go migrateStorage(ctx, migrator)
		return controller.runLeading(func() error { return controller.Run(ctx, opts.workers) })
	})
}

// restConfig builds the client configuration: from -kubeconfig and -master
// when given, from the pod's service account otherwise.
func restConfig(opts *options, identity string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if opts.kubeconfig == "" && opts.master == "" {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no cluster to connect to: pass -kubeconfig or -master, or run in a pod (%w)", err)
		}
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags(opts.master, opts.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading the cluster configuration: %w", err)
		}
	}
	cfg.QPS = float32(opts.qps)
	cfg.Burst = opts.burst
	// One limiter for every client built from cfg, so that -kube-api-qps
	// bounds the operator as a whole.
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	// The API server's audit log tells the operator's requests apart by
	// this, and one replica's from another's.
	cfg.UserAgent = "robot-operator/" + version + " (" + identity + ")"
	return cfg, nil
}

// protobufConfig is cfg for clients of built-in types only: they send and
// accept protobuf.
func protobufConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return c
}

// newOutageGate returns the gate the informers' and the syncs' requests go
// through. Its probe has a client of its own, outside the gate and the
// shared rate limiter, so that nothing the operator queues delays it.
func newOutageGate(ctx context.Context, cfg *rest.Config) (*outage.Gate, error) {
	c := protobufConfig(cfg)
	c.RateLimiter = nil
	c.QPS, c.Burst = 5, 5
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("building the API server probe's client: %w", err)
	}
	return outage.New(ctx, outage.ReadyzProbe(client.Discovery().RESTClient()), outage.ProbeInterval), nil
}

// reviewConfig is cfg for the metrics endpoint's TokenReviews and
// SubjectAccessReviews: a rate limiter of its own, sized for the limit the
// endpoint puts on its reviews, instead of the one every other client
// shares.
func reviewConfig(cfg *rest.Config) *rest.Config {
	c := protobufConfig(cfg)
	c.RateLimiter = nil
	c.QPS, c.Burst = serving.MetricsReviewQPS, serving.MetricsReviewBurst
	return c
}

// checkCluster fails fast, with a message a person can act on, when the API
// server cannot be reached or does not serve Robots.
func checkCluster(cfg *rest.Config) error {
	probe := rest.CopyConfig(cfg)
	probe.Timeout = 15 * time.Second
	client, err := kubernetes.NewForConfig(probe)
	if err != nil {
		return fmt.Errorf("building the Kubernetes client: %w", err)
	}
	gv := robotv1beta1.SchemeGroupVersion.String()
	_, err = client.Discovery().ServerResourcesForGroupVersion(gv)
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("the API server at %s does not serve %s: install the Robot CRD first (kubectl apply -f artifacts/crd/)", cfg.Host, gv)
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err):
		return fmt.Errorf("the API server at %s refused the operator's credentials: %w", cfg.Host, err)
	case meta.IsNoMatchError(err):
		return fmt.Errorf("the API server at %s does not serve %s: %w", cfg.Host, gv, err)
	default:
		return fmt.Errorf("cannot reach the API server at %s: %w", cfg.Host, err)
	}
}

func namespaceOrAll(namespace string) string {
	if namespace == metav1.NamespaceAll {
		return "(all)"
	}
	return namespace
}

// webhook is the conversion webhook as runOperator runs it.
type webhook struct {
	handler http.Handler
	tls     *tls.Config
	// upkeep keeps the served certificate up to date, the certificates
	// (unless -webhook-certs=external) and the CRD's caBundle, on every
	// replica, leader or not; ready says whether this replica has a
	// certificate to serve with. Both nil when the webhook is off.
	upkeep *webhookcert.Upkeep
	ready  func() error
}

// newWebhook builds the conversion webhook: its handler, its TLS
// configuration fed by the Secret, and the upkeep of its certificates.
func newWebhook(opts webhookOptions, kubeClient kubernetes.Interface, cfg *rest.Config, registry prometheus.Registerer) (*webhook, error) {
	if opts.addr == "" || opts.addr == "0" {
		return &webhook{}, nil
	}
	conversionMetrics, err := metrics.NewConversionMetrics(registry)
	if err != nil {
		return nil, fmt.Errorf("registering the conversion metrics: %w", err)
	}
	handler, err := conversion.NewHandler(conversionMetrics.Observe, conversionMetrics.ObserveIgnored)
	if err != nil {
		return nil, err
	}
	source := &webhookcert.Source{}
	w := &webhook{handler: serving.WebhookHandler(handler), tls: source.TLSConfig(), ready: source.Ready}
	endpoint := webhookcert.Endpoint{ServiceNamespace: opts.namespace, ServiceName: opts.service, ServicePort: 443, Path: conversion.Path, URL: opts.url}
	if _, err := endpoint.Hosts(); err != nil {
		return nil, fmt.Errorf("-webhook-url: %w", err)
	}
	crdClient, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the CRD client: %w", err)
	}
	w.upkeep = &webhookcert.Upkeep{
		Secret: webhookcert.NewSecretWatch(kubeClient, opts.namespace, opts.secret, source),
		CRD:    webhookcert.NewCRDWatch(crdClient, robotsCRD),
	}
	w.upkeep.Manager = &webhookcert.Manager{
		Secrets:    kubeClient.CoreV1().Secrets(opts.namespace),
		SecretName: opts.secret,
		CRDs:       crdClient.ApiextensionsV1().CustomResourceDefinitions(),
		CRDName:    robotsCRD,
		Endpoint:   endpoint,
		Now:        time.Now,
		External:   opts.certs == webhookCertsExternal,
	}
	return w, nil
}

// robotsCRD is the name of the Robot CRD.
const robotsCRD = "robots." + robot.GroupName

// newMigrator returns what moves the Robots an earlier release stored as
// v1alpha1 to v1beta1; nil for an operator that watches one namespace, which
// cannot see, nor rewrite, every Robot. It records its Warning Events with
// recorder.
func newMigrator(opts *options, robotClient *clientset.Clientset, cfg *rest.Config, recorder record.EventRecorder, registry prometheus.Registerer) (*migration.Migrator, error) {
	if opts.namespace != metav1.NamespaceAll {
		return nil, nil
	}
	crdClient, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the CRD client: %w", err)
	}
	observer, err := metrics.NewMigrationMetrics(registry)
	if err != nil {
		return nil, fmt.Errorf("registering the migration's metrics: %w", err)
	}
	return &migration.Migrator{Robots: robotClient.RobotV1beta1(), CRDs: crdClient.ApiextensionsV1().CustomResourceDefinitions(), CRDName: robotsCRD,
		Recorder: recorder, Observer: observer}, nil
}

// migrateStorage runs the migration until it is done or ctx ends: it retries
// by itself, with backoff, what fails (the Robots stored as v1alpha1 are read
// through the conversion webhook, which may not answer yet).
func migrateStorage(ctx context.Context, migrator *migration.Migrator) {
	if migrator == nil {
		return
	}
	_, _ = migrator.Run(ctx)
}
