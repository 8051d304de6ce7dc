package app

import (
	"context"
	"crypto/tls"
	"net/http"
	"sync"

	"github.com/robot-operator/robot-operator/internal/leader"
	"github.com/robot-operator/robot-operator/internal/serving"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// serveAndLead listens, starts the informers and the webhook's upkeep, and
// runs the storage migration and the controller's workers, under leader
// election when it is on, until ctx is done.
func serveAndLead(ctx context.Context, opts Options, w wired) error {
	logger := klog.FromContext(ctx)
	// Listen before anything else starts, so a taken port fails at once.
	var servers []*http.Server
	defer func() { serving.ShutdownServers(logger, servers) }()
	webhook, err := newWebhook(opts.Webhook, w.clients, w.registry)
	if err != nil {
		return err
	}
	migrator, err := newMigrator(opts, w.clients, w.controller.Recorder(), w.registry)
	if err != nil {
		return err
	}
	servers, err = listen(ctx, opts, w, webhook)
	if err != nil {
		return err
	}

	// Informers run on every replica, leader or not, so that a new leader
	// starts with warm caches and /readyz tells when they are.
	// Shutdown waits for the informers, which stop only when their stop
	// channel closes: close it on every way out, not only on a signal.
	informersCtx, stopInformers := context.WithCancel(ctx)
	var watches sync.WaitGroup
	defer func() {
		stopInformers()
		watches.Wait()
		w.informers.shutdown()
	}()
	w.informers.start(informersCtx.Done())
	watches.Go(func() {
		// The optional kinds' transform asks the Robot cache, as the
		// Deployments' does.
		if w.informers.waitForRobots(informersCtx.Done()) {
			watchOptionalAPIs(informersCtx, w.clients.crds, w.informers.apis)
		}
	})
	watches.Go(func() {
		// Its handlers queue Robots from the Robot cache.
		if w.informers.waitForRobots(informersCtx.Done()) {
			watchGateways(informersCtx, w.clients.crds, w.informers.gateways, w.informers.gatewaysFound)
		}
	})
	if webhook.upkeep != nil {
		watches.Go(func() {
			if err := webhook.upkeep.Run(informersCtx); err != nil {
				logger.Error(err, "Keeping the webhook's certificates")
			}
		})
	}

	logger.Info("Starting robot-operator", "version", opts.Version, "revision", Build(opts.Version, opts.Revision).Revision, "host", w.cfg.Host, "namespace", namespaceOrAll(opts.Namespace),
		"workers", opts.Workers, "leaderElection", opts.LeaderElection.Enabled, "observeOnly", opts.ObserveOnly)
	lead := func(ctx context.Context) error {
		go migrateStorage(ctx, migrator, opts.ServeV1alpha1)
		return w.controller.Lead(ctx, opts.Workers)
	}
	if !opts.LeaderElection.Enabled {
		return lead(ctx)
	}
	leaseClient, err := newLeaseClient(w.cfg)
	if err != nil {
		return err
	}
	return leader.Run(ctx, leaseClient, opts.LeaderElection, w.identity, func(ctx context.Context, mayWrite func() error) error {
		w.fence.Arm(mayWrite)
		return lead(ctx)
	})
}

// listen serves the metrics, the health probes, the profiles and the
// conversion webhook, each on its address unless that is empty or "0". It
// returns the servers it started, also when one fails to listen.
func listen(ctx context.Context, opts Options, w wired, webhook *webhook) ([]*http.Server, error) {
	logger := klog.FromContext(ctx)
	metricsHandler, metricsTLS, err := serving.MetricsEndpoint(ctx, opts.MetricsSecure, opts.MetricsCertDir, w.registry, w.clients.review)
	if err != nil {
		return nil, err
	}
	var servers []*http.Server
	for _, s := range []struct {
		name, addr string
		handler    http.Handler
		tls        *tls.Config
	}{
		{"metrics", opts.MetricsAddr, metricsHandler, metricsTLS},
		{"health probes", opts.HealthAddr, healthHandler(serving.HealthHandler(w.controller, opts.SyncTimeout, webhook.ready), w.report), nil},
		{"pprof", opts.PprofAddr, serving.ProfileHandler(), nil},
		{"conversion webhook", opts.Webhook.Addr, webhook.handler, webhook.tls},
	} {
		if s.addr == "" || s.addr == "0" {
			continue
		}
		server, err := serving.Serve(logger, s.name, s.addr, s.handler, s.tls)
		if err != nil {
			return servers, err
		}
		servers = append(servers, server)
	}
	return servers, nil
}

func namespaceOrAll(namespace string) string {
	if namespace == metav1.NamespaceAll {
		return "(all)"
	}
	return namespace
}
