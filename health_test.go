package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/serving"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
)

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
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		c := f.newController(ctx)
		c.syncTimeout = tc.syncTimeout
		clock := clocktesting.NewFakeClock(robottest.FixtureNow)
		c.clock = clock
		c.inflight.Store(cache.ObjectName{Namespace: "default", Name: "test"}, clock.Now())
		clock.Step(tc.running)

		rec := httptest.NewRecorder()
		serving.HealthHandler(c, c.syncTimeout).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		if rec.Code != tc.want {
			t.Errorf("-sync-timeout=%v, a sync running for %v: /healthz answered %d %q, want %d",
				tc.syncTimeout, tc.running, rec.Code, rec.Body.String(), tc.want)
		}
	}
}
