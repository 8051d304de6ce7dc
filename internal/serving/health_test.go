package serving

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
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
