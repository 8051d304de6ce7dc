package main

import (
	"fmt"
	"net/http"
	"time"
)

// stuckSyncThreshold is how long one sync may run before the liveness check
// fails: ten times the sync deadline, and at least a minute (5 minutes with
// the default -sync-timeout of 30s). A sync's context ends at its deadline,
// and the sync returns as soon as its request in flight sees that; one that
// runs on far past it ignores its context (a deadlock, a call made without
// it), and only a restart frees its worker. The margin keeps a slow machine
// (CPU starvation, a long GC pause) from being taken for a stuck one.
func stuckSyncThreshold(syncTimeout time.Duration) time.Duration {
	return max(10*syncTimeout, time.Minute)
}

// healthHandler serves /healthz (the process is alive and no worker is
// stuck) and /readyz (the informer caches have synced).
func healthHandler(c *Controller) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if key, took := c.LongestSync(); took > stuckSyncThreshold(c.syncTimeout) {
			http.Error(w, fmt.Sprintf("the sync of Robot %s has been running for %s, past its deadline of %s", key, took.Round(time.Second), c.syncTimeout), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !c.HasSynced() {
			http.Error(w, "the informer caches have not synced yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}
