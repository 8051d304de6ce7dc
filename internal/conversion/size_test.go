package conversion

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// reviewOfSize returns a ConversionReview of one v1beta1 Robot whose image
// is padded so that the body is about size bytes.
func reviewOfSize(size int) []byte {
	const head = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"big","desiredAPIVersion":"robot.dev/v1alpha1","objects":[{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"big","namespace":"team"},"spec":{"image":"`
	const tail = `"}}]}}`
	return fmt.Appendf(nil, "%s%s%s", head, strings.Repeat("x", size-len(head)-len(tail)), tail)
}

// TestReviewSizeLimit: a review as large as the largest Robot the API
// server accepts converts; one past the cap is refused with 413 before it
// is decoded.
func TestReviewSizeLimit(t *testing.T) {
	handler, err := NewHandler(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		size int
		want int
	}{
		// The API server refuses request bodies over 3 MiB, so no Robot
		// is larger.
		{name: "a 3 MiB Robot", size: 3 << 20, want: http.StatusOK},
		{name: "just past the cap", size: MaxReviewBytes + 1, want: http.StatusRequestEntityTooLarge},
		{name: "5 MiB", size: 5 << 20, want: http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			request := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(reviewOfSize(tc.size)))
			request.Header.Set("Content-Type", "application/json")
			recorder := httptest.NewRecorder()
			handler.ServeHTTP(recorder, request)
			if recorder.Code != tc.want {
				t.Errorf("a review of %d bytes: status %d, want %d", tc.size, recorder.Code, tc.want)
			}
		})
	}
}
