package serving

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/tools/cache"
)

// StuckSyncThreshold is how long one sync may run before the liveness check
// fails: ten times the sync deadline, and at least a minute (5 minutes with
// the default -sync-timeout of 30s). A sync's context ends at its deadline,
// and the sync returns as soon as its request in flight sees that; one that
// runs on far past it ignores its context (a deadlock, a call made without
// it), and only a restart frees its worker. The margin keeps a slow machine
// (CPU starvation, a long GC pause) from being taken for a stuck one.
func StuckSyncThreshold(syncTimeout time.Duration) time.Duration {
	return max(10*syncTimeout, time.Minute)
}

// syncWatch is what the health probes ask the controller.
type syncWatch interface {
	// HasSynced reports whether the informer caches have synced.
	HasSynced() bool
	// LongestSync returns the Robot whose sync has been running the
	// longest, and for how long.
	LongestSync() (cache.ObjectName, time.Duration)
}

// HealthHandler serves /healthz (the process is alive and no worker is
// stuck past syncTimeout), /readyz (the informer caches have synced and,
// when this replica serves the conversion webhook, it has a certificate to
// serve it with) and /readyz/webhook.
//
// /readyz/webhook is the readiness the Deployment's probe, and with it the
// webhook's Service, follows. For a replica that serves the webhook it asks
// only whether it can answer a conversion. It must not wait for the
// caches: while Robots are still stored as v1alpha1 (an upgrade from the
// previous release), the Robot informer syncs only through the webhook,
// which the Service reaches only on ready pods. The first replica of a new
// release would wait for itself. webhookReady is nil when this replica
// serves no webhook; /readyz/webhook is then /readyz.
func HealthHandler(c syncWatch, syncTimeout time.Duration, webhookReady func() error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if key, took := c.LongestSync(); took > StuckSyncThreshold(syncTimeout) {
			http.Error(w, fmt.Sprintf("the sync of Robot %s has been running for %s, past its deadline of %s", key, took.Round(time.Second), syncTimeout), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	cachesSynced := func() error {
		if !c.HasSynced() {
			return errors.New("the informer caches have not synced yet")
		}
		return nil
	}
	ready := func(checks ...func() error) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			for _, check := range checks {
				if check == nil {
					continue
				}
				if err := check(); err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
					return
				}
			}
			fmt.Fprintln(w, "ok")
		}
	}
	mux.HandleFunc("/readyz", ready(cachesSynced, webhookReady))
	if webhookReady != nil {
		mux.HandleFunc("/readyz/webhook", ready(webhookReady))
	} else {
		mux.HandleFunc("/readyz/webhook", ready(cachesSynced))
	}
	return mux
}
