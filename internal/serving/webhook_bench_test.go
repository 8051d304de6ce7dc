package serving

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/conversion"
)

// BenchmarkWebhookLargestReview serves one review of just under
// conversion.MaxReviewBytes (a Robot whose image is the padding, converted
// to v1alpha1) through the webhook's handler, as the API server would send
// it, and reports the bytes allocated for it: the webhook holds
// MaxConcurrentReviews of these at once, beside MaxOpenReviews bodies.
func BenchmarkWebhookLargestReview(b *testing.B) {
	convert, err := conversion.NewHandler(nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	handler := WebhookHandler(convert)
	const head = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"bench","desiredAPIVersion":"robot.dev/v1alpha1","objects":[{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"bench","namespace":"bench"},"spec":{"image":"`
	const tail = `"}}]}}`
	size := conversion.MaxReviewBytes - 4096
	body := []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		request := httptest.NewRequest(http.MethodPost, conversion.Path, bytes.NewReader(body))
		request.Header.Set("Content-Type", "application/json")
		recorder := &discard{header: http.Header{}}
		handler.ServeHTTP(recorder, request)
		if recorder.code != 0 && recorder.code != http.StatusOK {
			b.Fatalf("status %d", recorder.code)
		}
	}
}

// discard is a ResponseWriter that keeps the status only, so that the
// answer's bytes are not counted as the handler's.
type discard struct {
	header http.Header
	code   int
}

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(p []byte) (int, error) { return io.Discard.Write(p) }
func (d *discard) WriteHeader(code int)        { d.code = code }
