package app

import (
	"context"
	"net"
	"net/http"

	"github.com/robot-operator/robot-operator/internal/observe"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// ObservePath is where the health probes' server serves an observe-only
// operator's report, as text.
const ObservePath = "/observe"

// observing returns opts as an observe-only operator runs them: it takes no
// part in leader election (it runs beside the leader and holds no Lease),
// serves no conversion webhook (the API server must never be pointed at
// it) and keeps no certificates, whatever the flags say. Each of those would
// write; what would write besides is refused by its clients
// (readOnlyConfig).
func observing(logger klog.Logger, opts Options) Options {
	if !opts.ObserveOnly {
		return opts
	}
	if opts.LeaderElection.Enabled || (opts.Webhook.Addr != "" && opts.Webhook.Addr != "0") {
		logger.Info("Observe-only: not taking part in leader election and not serving the conversion webhook",
			"leaderElect", opts.LeaderElection.Enabled, "webhookBindAddress", opts.Webhook.Addr)
	}
	opts.LeaderElection.Enabled = false
	opts.Webhook.Addr = "0"
	return opts
}

// observingClients drops from c, for an observe-only operator, the client
// of the check before a change: its dry-run pod is a POST the read-only
// transport refuses, and a refused check would let every change through
// with a log line. The preview reports what the operator's own comparison
// decides, before any check.
func observingClients(opts Options, c *clients) {
	if opts.ObserveOnly {
		c.preflight = nil
	}
}

// readOnlyConfig makes every client built from cfg, and from its copies,
// refuse to write: only reads, and the metrics endpoint's reviews, leave
// the process (observe.ReadOnly). It sits beneath the outage gate, which
// would take a refusal for a failed request and probe the API server once;
// the writer of an observe-only operator sends no write for it to refuse.
func readOnlyConfig(cfg *rest.Config) {
	cfg.Wrap(observe.ReadOnly)
}

// newReport returns the report of an observe-only operator, its gauges
// registered; nil when the operator writes.
func newReport(ctx context.Context, opts Options, identity string, registry prometheus.Registerer) *observe.Report {
	if !opts.ObserveOnly {
		return nil
	}
	logger := klog.FromContext(ctx)
	logger.Info("Observe-only: writing nothing, reporting what this release would change", "identity", identity, "page", ObservePath)
	report := observe.NewReport(logger)
	registry.MustRegister(report)
	return report
}

// healthHandler is the health probes' handler, with the report at
// ObservePath when there is one, for loopback only.
func healthHandler(health http.Handler, report *observe.Report) http.Handler {
	if report == nil {
		return health
	}
	mux := http.NewServeMux()
	mux.Handle("/", health)
	mux.Handle(ObservePath, loopbackOnly(report))
	return mux
}

// loopbackOnly serves next to connections from the host itself only. The
// report names Robots of every namespace and the values their Deployments
// differ by, and the health probes' port that serves it is reached by the
// kubelet from the node: kubectl port-forward, and a run outside the
// cluster, connect from loopback; anyone else on the pod network is
// refused, whether or not a NetworkPolicy is enforced.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			http.Error(w, ObservePath+" is served to loopback only: read it through kubectl port-forward", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
