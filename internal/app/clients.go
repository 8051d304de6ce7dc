package app

import (
	"context"
	"fmt"
	"k8s.io/client-go/metadata"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	"time"

	"github.com/robot-operator/robot-operator/internal/outage"
	"github.com/robot-operator/robot-operator/internal/robotclient"
	"github.com/robot-operator/robot-operator/internal/serving"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
)

// restConfig builds the client configuration: from Kubeconfig and Master
// when given, from the pod's service account otherwise.
func restConfig(opts Options, identity string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if opts.Kubeconfig == "" && opts.Master == "" {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no cluster to connect to: pass -kubeconfig or -master, or run in a pod (%w)", err)
		}
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags(opts.Master, opts.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading the cluster configuration: %w", err)
		}
	}
	cfg.QPS = float32(opts.QPS)
	cfg.Burst = opts.Burst
	// One limiter for every client built from cfg, so that -kube-api-qps
	// bounds the operator as a whole.
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	// The API server gzips what it sends a client that asks, each watch
	// event included, and Go's transport asks unless told not to: CPU on
	// both sides that a client next to its API server gains nothing for.
	// kube-controller-manager and kube-scheduler turn it off too.
	cfg.DisableCompression = !opts.Compression
	// The API server's audit log tells the operator's requests apart by
	// this, and one replica's from another's.
	cfg.UserAgent = "robot-operator/" + opts.Version + " (" + identity + ")"
	if opts.ObserveOnly {
		readOnlyConfig(cfg)
	}
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

// clients are the clients of the informers, the syncs, the webhook's upkeep
// and the storage migration, and of the metrics endpoint's reviews.
type clients struct {
	// gate is the outage gate that syncCfg's requests go through.
	gate   *outage.Gate
	kube   kubernetes.Interface
	robots clientset.Interface
	// crds reads and writes the Robot CRD: the webhook's caBundle and the
	// storage migration's storedVersions.
	crds apiextensionsclient.Interface
	// gateway writes the HTTPRoutes of the Robots that ask for them.
	gateway gatewayclient.Interface
	// metadata reads the Gateways' metadata, to tell a route's missing
	// Gateway.
	metadata metadata.Interface
	// review makes the metrics endpoint's TokenReviews and
	// SubjectAccessReviews.
	review kubernetes.Interface
	// preflight makes the checks of changed pod templates: through the
	// outage gate, under the checks' own token bucket, not the syncs'.
	preflight kubernetes.Interface
}

// newClients builds the clients from cfg.
//
// The informers' and the syncs' requests go through the outage gate: while
// the API server is down they wait for it (reads) or fail unsent (writes),
// and one probe looks for its return, so that the operator resumes the
// moment it answers instead of after the back-off the failures would have
// built up. The Lease and the metrics reviews keep clients of their own,
// outside the gate: a leader must see that it cannot renew.
func newClients(ctx context.Context, cfg *rest.Config) (*clients, error) {
	gate, err := newOutageGate(ctx, cfg)
	if err != nil {
		return nil, err
	}
	syncCfg := rest.CopyConfig(cfg)
	syncCfg.Wrap(gate.Wrap)
	c := &clients{gate: gate}

	// Built-in types travel as protobuf, which costs the API server and the
	// operator less CPU to encode and decode than JSON; Robots, a custom
	// resource, have only JSON.
	if c.kube, err = kubernetes.NewForConfig(protobufConfig(syncCfg)); err != nil {
		return nil, fmt.Errorf("building the Kubernetes client: %w", err)
	}
	if c.robots, err = robotclient.NewForConfig(syncCfg); err != nil {
		return nil, fmt.Errorf("building the Robot client: %w", err)
	}
	if c.crds, err = apiextensionsclient.NewForConfig(syncCfg); err != nil {
		return nil, fmt.Errorf("building the CRD client: %w", err)
	}
	if c.gateway, err = gatewayclient.NewForConfig(syncCfg); err != nil {
		return nil, fmt.Errorf("building the Gateway API client: %w", err)
	}
	if c.metadata, err = metadata.NewForConfig(syncCfg); err != nil {
		return nil, fmt.Errorf("building the metadata client: %w", err)
	}
	// The checks of changed pod templates have a rate limit of their own
	// (internal/preflight), so that a burst of changes never takes the
	// syncs' tokens, as Knative's admission-time check did.
	preflightCfg := protobufConfig(syncCfg)
	preflightCfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	if c.preflight, err = kubernetes.NewForConfig(preflightCfg); err != nil {
		return nil, fmt.Errorf("building the preflight client: %w", err)
	}
	// The metrics endpoint's reviews get a client of their own, so that
	// scrapes, or a flood of made-up tokens, never wait on the syncs' rate
	// limiter nor make the syncs wait on theirs.
	if c.review, err = kubernetes.NewForConfig(reviewConfig(cfg)); err != nil {
		return nil, fmt.Errorf("building the metrics review client: %w", err)
	}
	return c, nil
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

// newLeaseClient builds the leader election's client. The Lease gets a
// client of its own, so that a burst of syncs waiting on the shared rate
// limiter never delays a renewal.
func newLeaseClient(cfg *rest.Config) (kubernetes.Interface, error) {
	leaseCfg := protobufConfig(cfg)
	leaseCfg.RateLimiter = nil
	leaseCfg.QPS, leaseCfg.Burst = 5, 10
	leaseClient, err := kubernetes.NewForConfig(leaseCfg)
	if err != nil {
		return nil, fmt.Errorf("building the leader election client: %w", err)
	}
	return leaseClient, nil
}
