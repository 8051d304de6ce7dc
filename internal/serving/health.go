package serving

import (
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
// stuck past syncTimeout) and /readyz (the informer caches have synced).
func HealthHandler(c syncWatch, syncTimeout time.Duration) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if key, took := c.LongestSync(); took > StuckSyncThreshold(syncTimeout) {
			http.Error(w, fmt.Sprintf("the sync of Robot %s has been running for %s, past its deadline of %s", key, took.Round(time.Second), syncTimeout), http.StatusInternalServerError)
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
