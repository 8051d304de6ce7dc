package serving

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

type fakeSyncWatch struct{ synced bool }

func (f fakeSyncWatch) HasSynced() bool                                { return f.synced }
func (f fakeSyncWatch) LongestSync() (cache.ObjectName, time.Duration) { return cache.ObjectName{}, 0 }

// TestReadyzAndTheWebhook: /readyz needs the caches and the webhook's
// certificate; /readyz/webhook, which the Deployment's probe follows, needs
// only the certificate when the webhook is served (its conversions may be
// what the caches wait for), and the caches when it is not.
func TestReadyzAndTheWebhook(t *testing.T) {
	noCert := errors.New("the webhook has no serving certificate yet")
	tests := []struct {
		name         string
		synced       bool
		webhookReady func() error
		path         string
		code         int
		says         string
	}{
		{"synced, certificate", true, func() error { return nil }, "/readyz", 200, "ok"},
		{"synced, no certificate", true, func() error { return noCert }, "/readyz", 503, "no serving certificate"},
		{"not synced, certificate", false, func() error { return nil }, "/readyz", 503, "caches have not synced"},
		{"no webhook, synced", true, nil, "/readyz", 200, "ok"},
		{"probe: not synced, certificate", false, func() error { return nil }, "/readyz/webhook", 200, "ok"},
		{"probe: synced, no certificate", true, func() error { return noCert }, "/readyz/webhook", 503, "no serving certificate"},
		{"probe: no webhook, not synced", false, nil, "/readyz/webhook", 503, "caches have not synced"},
		{"probe: no webhook, synced", true, nil, "/readyz/webhook", 200, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			HealthHandler(fakeSyncWatch{tt.synced}, time.Second, tt.webhookReady).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
			if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.says) {
				t.Errorf("GET %s: %d %q, want %d saying %q", tt.path, rec.Code, rec.Body.String(), tt.code, tt.says)
			}
		})
	}
}

// defaultSyncTimeout is the controller's default -sync-timeout.
const defaultSyncTimeout = 30 * time.Second

// runningSyncs is a controller whose caches have synced, or not, and whose
// one sync in flight, if any, started at started on clock.
type runningSyncs struct {
	synced  bool
	key     cache.ObjectName
	started time.Time
	clock   *clocktesting.FakeClock
}

func (r *runningSyncs) HasSynced() bool { return r.synced }

func (r *runningSyncs) LongestSync() (cache.ObjectName, time.Duration) {
	if r.started.IsZero() {
		return cache.ObjectName{}, 0
	}
	return r.key, r.clock.Since(r.started)
}

func TestHealthHandler(t *testing.T) {
	clock := clocktesting.NewFakeClock(robottest.FixtureNow)
	syncs := &runningSyncs{clock: clock}
	handler := HealthHandler(syncs, defaultSyncTimeout, nil)
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}

	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the caches synced: %d, want 503", code)
	}
	syncs.synced = true
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after the caches synced: %d, want 200", code)
	}

	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with no sync running: %d, want 200", code)
	}
	syncs.key, syncs.started = cache.ObjectName{Namespace: "default", Name: "slow"}, clock.Now()
	clock.Step(time.Minute)
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with a sync running for a minute: %d, want 200", code)
	}
	clock.Step(StuckSyncThreshold(defaultSyncTimeout))
	if code, body := get("/healthz"); code != http.StatusInternalServerError || !strings.Contains(body, "default/slow") {
		t.Errorf("/healthz with a stuck sync: %d %q, want 500 naming the Robot", code, body)
	}
}

// TestHealthzStuckThresholdFollowsTheSyncDeadline: /healthz fails only for a
// sync that has run far past its deadline, whatever -sync-timeout is.
func TestHealthzStuckThresholdFollowsTheSyncDeadline(t *testing.T) {
	for _, tc := range []struct {
		syncTimeout, running time.Duration
		want                 int
	}{
		{defaultSyncTimeout, time.Minute, http.StatusOK},
		{defaultSyncTimeout, 6 * time.Minute, http.StatusInternalServerError},
		// A long deadline: a sync well within it is not stuck.
		{2 * time.Minute, 6 * time.Minute, http.StatusOK},
		{2 * time.Minute, 21 * time.Minute, http.StatusInternalServerError},
		// A short one: still a minute at least, so that a slow machine is
		// not taken for a stuck one.
		{time.Second, 50 * time.Second, http.StatusOK},
		{time.Second, 61 * time.Second, http.StatusInternalServerError},
	} {
		clock := clocktesting.NewFakeClock(robottest.FixtureNow)
		syncs := &runningSyncs{synced: true, key: cache.ObjectName{Namespace: "default", Name: "test"}, started: clock.Now(), clock: clock}
		clock.Step(tc.running)

		rec := httptest.NewRecorder()
		HealthHandler(syncs, tc.syncTimeout, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if rec.Code != tc.want {
			t.Errorf("-sync-timeout=%v, a sync running for %v: /healthz answered %d %q, want %d",
				tc.syncTimeout, tc.running, rec.Code, rec.Body.String(), tc.want)
		}
	}
}
