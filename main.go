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
	"os"
	"os/signal"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
	informers "github.com/robot-operator/robot-operator/pkg/generated/informers/externalversions"
)

// version is stamped at build time (see the Makefile).
var version = "dev"

// options are the command-line settings.
type options struct {
	kubeconfig   string
	master       string
	namespace    string
	workers      int
	qps          float64
	burst        int
	resyncPeriod time.Duration
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program; it returns the process exit code. Errors a user
// can fix come out as one line on stderr, not as a stack trace.
func run(args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "robot-operator: %v (run with -help for usage)\n", err)
		return 2
	}
	defer klog.Flush()

	// The first SIGINT or SIGTERM stops the operator cleanly; a second one
	// kills it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	logger := klog.FromContext(ctx)

	if err := runOperator(ctx, opts); err != nil {
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
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Only required if out-of-cluster.")
	fs.StringVar(&opts.master, "master", "", "The address of the Kubernetes API server. Overrides any value in kubeconfig. Only required if out-of-cluster.")
	fs.StringVar(&opts.namespace, "namespace", metav1.NamespaceAll, "Watch Robots and manage Deployments in this namespace only (default: all namespaces).")
	fs.IntVar(&opts.workers, "workers", 8, "How many Robots to sync at the same time.")
	fs.Float64Var(&opts.qps, "kube-api-qps", 200, "Sustained requests per second to the API server, over all workers.")
	fs.IntVar(&opts.burst, "kube-api-burst", 400, "Requests the operator may send at once above -kube-api-qps.")
	fs.DurationVar(&opts.resyncPeriod, "resync-period", 10*time.Minute, "How often every Robot is rechecked against the cache even when nothing changed (0 turns it off). A converged Robot costs no API request.")
	// The flag package prints the usage on every parse error; print it only
	// when asked for, so that a mistake gives one line.
	fs.Usage = func() {}

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(usageOut, "Usage: robot-operator [flags]\n\nKeeps a Deployment for each Robot (robot.dev/v1alpha1) and reports its state on the Robot.\n\nFlags:\n")
			fs.SetOutput(usageOut)
			fs.PrintDefaults()
		}
		return nil, err
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
	}
	return opts, nil
}

// runOperator connects to the cluster and runs the controller until ctx is
// done.
func runOperator(ctx context.Context, opts *options) error {
	logger := klog.FromContext(ctx)
	cfg, err := restConfig(opts)
	if err != nil {
		return err
	}
	if err := checkCluster(cfg); err != nil {
		return err
	}

	kubeClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building the Kubernetes client: %w", err)
	}
	robotClient, err := clientset.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building the Robot client: %w", err)
	}

	// Only the Deployments the operator manages are cached, so memory follows
	// the Robots, not the cluster. managedFields are never read, so they are
	// dropped before they reach the cache.
	kubeInformerFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, opts.resyncPeriod,
		kubeinformers.WithNamespace(opts.namespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.SelectorFromSet(labels.Set{labelManagedBy: labelManagedByValue}).String()
		}),
		kubeinformers.WithTransform(stripManagedFields))
	robotInformerFactory := informers.NewSharedInformerFactoryWithOptions(robotClient, opts.resyncPeriod,
		informers.WithNamespace(opts.namespace),
		informers.WithTransform(stripManagedFields))

	controller, err := NewController(ctx, kubeClient, robotClient,
		kubeInformerFactory.Apps().V1().Deployments(),
		robotInformerFactory.Robot().V1alpha1().Robots())
	if err != nil {
		return err
	}

	kubeInformerFactory.Start(ctx.Done())
	robotInformerFactory.Start(ctx.Done())
	defer kubeInformerFactory.Shutdown()
	defer robotInformerFactory.Shutdown()

	logger.Info("Starting robot-operator", "version", version, "host", cfg.Host, "namespace", namespaceOrAll(opts.namespace), "workers", opts.workers)
	return controller.Run(ctx, opts.workers)
}

// restConfig builds the client configuration: from -kubeconfig and -master
// when given, from the pod's service account otherwise.
func restConfig(opts *options) (*rest.Config, error) {
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
	// The API server's audit log tells the operator's requests apart by this.
	cfg.UserAgent = "robot-operator/" + version
	return cfg, nil
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
	gv := robotv1alpha1.SchemeGroupVersion.String()
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

// stripManagedFields drops managedFields from objects before they are cached:
// the operator never reads them, and they are often the largest part of an
// object.
func stripManagedFields(obj interface{}) (interface{}, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

var _ cache.TransformFunc = stripManagedFields

func namespaceOrAll(namespace string) string {
	if namespace == metav1.NamespaceAll {
		return "(all)"
	}
	return namespace
}
