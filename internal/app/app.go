// Package app wires the operator together and runs it: it connects to the
// cluster, builds the clients and the informers, serves the metrics, the
// health probes, the profiles and the conversion webhook, keeps the webhook's
// certificates, and runs the storage migration and the controller, under
// leader election when asked.
//
// It decides nothing about a Robot. The Controller that does lives in the
// command's own package, which app cannot import: the command passes Run a
// function that builds the Controller from what app wired.
package app

import (
	"context"
	"fmt"
	"github.com/robot-operator/robot-operator/internal/owned"
	"os"
	"time"

	"github.com/robot-operator/robot-operator/internal/leader"
	"github.com/robot-operator/robot-operator/internal/metrics"
	"github.com/robot-operator/robot-operator/internal/observe"
	"github.com/robot-operator/robot-operator/internal/outage"
	"github.com/robot-operator/robot-operator/internal/transform"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
	robotinformers "github.com/robot-operator/robot-operator/pkg/generated/informers/externalversions/robot/v1beta1"
)

// Options are the settings of a run, from the command line.
type Options struct {
	// Version is the operator's release, for the user agent, the log and
	// the build_info gauge; Revision is its commit, for the log and the
	// gauge (see Build).
	Version  string
	Revision string
	// Kubeconfig and Master say where the cluster is; both empty: the pod's
	// service account.
	Kubeconfig string
	Master     string
	// Namespace is the only namespace watched; empty: every namespace.
	Namespace string
	// Workers is how many Robots are synced at the same time.
	Workers int
	// QPS and Burst bound the requests of every client but the Lease's,
	// the API server probe's and the metrics reviews'.
	QPS   float64
	Burst int
	// Compression asks the API server to gzip its responses.
	Compression bool
	// ResyncPeriod is the informers' resync period of the Deployments,
	// the Services and the Robots.
	ResyncPeriod time.Duration
	// SyncTimeout bounds one sync; the liveness check follows it.
	SyncTimeout    time.Duration
	LeaderElection leader.Config
	// MetricsAddr, HealthAddr and PprofAddr are where the servers listen;
	// empty or "0": not served.
	MetricsAddr    string
	MetricsSecure  bool
	MetricsCertDir string
	HealthAddr     string
	PprofAddr      string
	Webhook        WebhookOptions
	// MemoryLimitFromCgroup sets the Go runtime's memory limit from the
	// container's, read from the cgroup files under CgroupRoot (empty:
	// memlimit.DefaultRoot), unless GOMEMLIMIT is set.
	MemoryLimitFromCgroup bool
	CgroupRoot            string
	// ObserveOnly runs the operator without writing anything (observe.go):
	// no leader election, no webhook, no migration; every client refuses
	// writes, and the syncs' writes are reported instead.
	ObserveOnly bool
	// ServeV1alpha1, when set, is whether the CRD serves robot.dev/v1alpha1:
	// the leader sets it once the migration is done. Nil leaves the CRD as
	// installed.
	ServeV1alpha1 *bool
}

// Controller is what Run runs on the leader: the Controller of the command,
// built by a NewController.
type Controller interface {
	// RegisterMetrics registers the controller's metrics.
	RegisterMetrics(registry prometheus.Registerer) error
	// HasSynced and LongestSync answer the health probes.
	HasSynced() bool
	LongestSync() (cache.ObjectName, time.Duration)
	// Recorder records Events on Robots; the storage migration's Warnings
	// go through it.
	Recorder() record.EventRecorder
	// Lead runs workers workers until ctx is done, and says meanwhile
	// that this replica leads.
	Lead(ctx context.Context, workers int) error
}

// Wiring is what Run builds for the Controller.
type Wiring struct {
	// KubeClient and RobotClient go through the outage gate and the shared
	// rate limiter.
	KubeClient  kubernetes.Interface
	RobotClient clientset.Interface
	// RobotInformer is the informer of the Robots.
	RobotInformer robotinformers.RobotInformer
	// Owned are the sources of the kinds a Robot owns: the clients and
	// the informer factories of the managed objects, and where the
	// optional kinds are discovered.
	Owned owned.Sources
	// PodInformer and ReplicaSetInformer hold the summaries of the managed
	// pods and ReplicaSets.
	PodInformer        cache.SharedIndexInformer
	ReplicaSetInformer cache.SharedIndexInformer
	// MayWrite is the write fence: to be asked before every write.
	MayWrite func() error
	// Outage is the gate the clients' requests go through.
	Outage *outage.Gate
	// NewerFields says which Robots hold fields this release does not
	// know, from the Robot informer's transform.
	NewerFields *transform.NewerFields
	// Observe, set when the operator runs observe-only, is where the
	// syncs' writes are reported instead of made.
	Observe *observe.Report
}

// NewController builds the Controller from what Run wired. It must start
// nothing: Run starts the informers and the workers.
type NewController func(ctx context.Context, wiring Wiring) (Controller, error)

// Run connects to the cluster and runs the operator until ctx is done: the
// informers, the servers and the webhook's upkeep on every replica; the
// storage migration and the controller's workers on the leader alone.
func Run(ctx context.Context, opts Options, newController NewController) error {
	// First, so that the caches filled below already count against it.
	setMemoryLimit(klog.FromContext(ctx), opts)
	opts = observing(klog.FromContext(ctx), opts)
	hostname, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("reading the host name: %w", err)
	}
	identity := hostname + "_" + string(uuid.NewUUID())

	cfg, err := restConfig(opts, identity)
	if err != nil {
		return err
	}
	// Metrics providers must be in place before the first client or queue.
	registry := prometheus.NewRegistry()
	metrics.RegisterProcessMetrics(registry)
	registry.MustRegister(metrics.NewBuildInfoGauge(Build(opts.Version, opts.Revision)))
	if err := checkCluster(cfg); err != nil {
		return err
	}
	if err := checkStorageVersion(ctx, cfg, opts.Version); err != nil {
		return err
	}
	c, err := newClients(ctx, cfg)
	if err != nil {
		return err
	}
	observingClients(opts, c)
	inf := newInformers(opts, c)
	inf.watchConfig(ctx, c.kube, c.metadata)

	// The write fence: open until this process leads, then shut whenever
	// the Lease may have gone to another replica.
	fence := &leader.Fence{}
	report := newReport(ctx, opts, identity, registry)
	controller, err := newController(ctx, Wiring{
		KubeClient:         c.kube,
		RobotClient:        c.robots,
		RobotInformer:      inf.robots.Robot().V1beta1().Robots(),
		Owned:              inf.owned(c),
		PodInformer:        inf.pods.Core().V1().Pods().Informer(),
		ReplicaSetInformer: inf.pods.Apps().V1().ReplicaSets().Informer(),
		MayWrite:           fence.Check,
		Outage:             c.gate,
		NewerFields:        inf.newerFields,
		Observe:            report,
	})
	if err != nil {
		return err
	}
	if err := controller.RegisterMetrics(registry); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	return serveAndLead(ctx, opts, wired{cfg: cfg, identity: identity, registry: registry, clients: c,
		informers: inf, fence: fence, controller: controller, report: report})
}

// wired is what Run has built by the time it starts anything.
type wired struct {
	cfg        *rest.Config
	identity   string
	registry   *prometheus.Registry
	clients    *clients
	informers  *informers
	fence      *leader.Fence
	controller Controller
	// report is nil unless the operator runs observe-only.
	report *observe.Report
}
