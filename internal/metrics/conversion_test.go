package metrics

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/robot-operator/robot-operator/internal/conversion"
)

// TestConversionSeriesAreBoundedWhateverTheReviewsAsk: the webhook answers
// anyone who reaches it, so what a review asks for (its desired version)
// must not become a series of its own: reviews asking for ever new versions
// would grow the operator's memory and every scrape without bound.
func TestConversionSeriesAreBoundedWhateverTheReviewsAsk(t *testing.T) {
	registry := prometheus.NewPedanticRegistry()
	m, err := NewConversionMetrics(registry)
	if err != nil {
		t.Fatal(err)
	}
	handler, err := conversion.NewHandler(m.Observe, m.ObserveIgnored)
	if err != nil {
		t.Fatal(err)
	}
	before := reviewSeries(t, registry)
	for i := range 100 {
		body := fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u-%d","desiredAPIVersion":"robot.dev/v%d-%s",`+
			`"objects":[{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"r"},"spec":{"image":"x"}}]}}`, i, i, bytes.Repeat([]byte("x"), 64))
		request := httptest.NewRequest(http.MethodPost, conversion.Path, bytes.NewReader([]byte(body)))
		request.Header.Set("Content-Type", "application/json")
		recorder := httptest.NewRecorder()
		handler.ServeHTTP(recorder, request)
		if recorder.Code != http.StatusOK {
			t.Fatalf("review %d: status %d", i, recorder.Code)
		}
	}
	if after := reviewSeries(t, registry); after > before+1 {
		t.Errorf("100 reviews asking for 100 unknown versions made %d series of robot_operator_conversion_reviews_total from %d; want at most one more, whatever they ask", after, before)
	}
}

// reviewSeries counts the series of robot_operator_conversion_reviews_total.
func reviewSeries(t *testing.T, registry *prometheus.Registry) int {
	t.Helper()
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		if family.GetName() == "robot_operator_conversion_reviews_total" {
			return len(family.GetMetric())
		}
	}
	return 0
}
