package serving

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/conversion"
)

// TestWebhookLimitsConcurrentReviews: no more than MaxConcurrentReviews
// reviews are served at once, whatever the number of clients; the others
// get 429 with a Retry-After soon, which the API server's client honours
// by trying again.
func TestWebhookLimitsConcurrentReviews(t *testing.T) {
	const extra = 3
	var inFlight, most atomic.Int32
	entered := make(chan struct{}, MaxConcurrentReviews+extra)
	release := make(chan struct{})
	blocking := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		entered <- struct{}{}
		<-release
	})
	handler := WebhookHandler(blocking)

	type answer struct {
		code       int
		retryAfter string
		took       time.Duration
	}
	answers := make(chan answer, MaxConcurrentReviews+extra)
	var wg sync.WaitGroup
	for range MaxConcurrentReviews + extra {
		wg.Go(func() {
			start := time.Now()
			request := httptest.NewRequest(http.MethodPost, conversion.Path, strings.NewReader("{}"))
			recorder := httptest.NewRecorder()
			handler.ServeHTTP(recorder, request)
			answers <- answer{recorder.Code, recorder.Header().Get("Retry-After"), time.Since(start)}
		})
	}
	// The reviews over the limit are answered while the others still run.
	deadline := time.After(reviewSlotWait + 5*time.Second)
	for range extra {
		select {
		case a := <-answers:
			if a.code != http.StatusTooManyRequests || a.retryAfter == "" {
				t.Errorf("a review over the limit: status %d, Retry-After %q; want 429 with a Retry-After", a.code, a.retryAfter)
			}
		case <-deadline:
			t.Fatalf("%d reviews ran at once (limit %d), and none of the others was turned away", most.Load(), MaxConcurrentReviews)
		}
	}
	close(release)
	wg.Wait()
	close(answers)
	for a := range answers {
		if a.code != http.StatusOK {
			t.Errorf("a review within the limit: status %d, want 200", a.code)
		}
	}
	if got := most.Load(); got > MaxConcurrentReviews {
		t.Errorf("%d reviews ran at once, want at most %d", got, MaxConcurrentReviews)
	}
}

// TestWebhookReviewWaitsForASlot: a review that arrives while the limit is
// reached gets the first slot that frees within reviewSlotWait.
func TestWebhookReviewWaitsForASlot(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, MaxConcurrentReviews+1)
	handler := WebhookHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	post := func() int {
		recorder := httptest.NewRecorder()
		handler.ServeHTTP(recorder, httptest.NewRequest(http.MethodPost, conversion.Path, strings.NewReader("{}")))
		return recorder.Code
	}
	var wg sync.WaitGroup
	for range MaxConcurrentReviews {
		wg.Go(func() { post() })
		<-entered
	}
	late := make(chan int, 1)
	go func() { late <- post() }()
	time.Sleep(reviewSlotWait / 4)
	release <- struct{}{} // one review ends
	close(release)
	wg.Wait()
	if code := <-late; code != http.StatusOK {
		t.Errorf("a review that waited for a slot: status %d, want 200", code)
	}
}

// TestWebhookBoundsTheBytesItConverts: reviews of the largest size the
// webhook reads are converted at most MaxConvertingBytes' worth at once
// (each allocates several times its size while it is converted); the
// others wait for a slot, then get 429.
func TestWebhookBoundsTheBytesItConverts(t *testing.T) {
	largest := MaxConvertingBytes / conversion.MaxReviewBytes
	if largest < 1 || largest >= MaxConcurrentReviews {
		t.Fatalf("MaxConvertingBytes lets %d of the largest reviews convert at once: want at least 1 and fewer than the %d small ones", largest, MaxConcurrentReviews)
	}
	var inFlight, most atomic.Int32
	release := make(chan struct{})
	handler := WebhookHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
	}))
	body := strings.Repeat("x", conversion.MaxReviewBytes-1024)
	codes := make(chan int, MaxConcurrentReviews)
	var wg sync.WaitGroup
	for range MaxConcurrentReviews {
		wg.Go(func() {
			recorder := httptest.NewRecorder()
			handler.ServeHTTP(recorder, httptest.NewRequest(http.MethodPost, conversion.Path, strings.NewReader(body)))
			codes <- recorder.Code
		})
	}
	// Those over the bytes' bound are turned away once they waited.
	for range MaxConcurrentReviews - int(largest) {
		select {
		case code := <-codes:
			if code != http.StatusTooManyRequests {
				t.Errorf("a large review over the bound: status %d, want 429", code)
			}
		case <-time.After(reviewSlotWait + 5*time.Second):
			t.Fatalf("%d of the largest reviews converted at once, want at most %d", most.Load(), largest)
		}
	}
	close(release)
	wg.Wait()
	if got := most.Load(); got != int32(largest) {
		t.Errorf("%d of the largest reviews converted at once, want %d", got, largest)
	}
}
