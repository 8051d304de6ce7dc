package main

import (
	"fmt"
	"net/http"
	"time"
)

// stuckSyncThreshold is how long one sync may run before the liveness check
// fails. A sync makes a few API requests, each bounded by client timeouts;
// one that runs this long is stuck, and a restart is the cure.
const stuckSyncThreshold = 5 * time.Minute

// healthHandler serves /healthz (the process is alive and no worker is
// stuck) and /readyz (the informer caches have synced).
func healthHandler(c *Controller) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if key, took := c.LongestSync(); took > stuckSyncThreshold {
			http.Error(w, fmt.Sprintf("the sync of Robot %s has been running for %s", key, took.Round(time.Second)), http.StatusInternalServerError)
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
