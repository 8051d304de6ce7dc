package serving

import (
	"net/http"
	"time"

	"github.com/robot-operator/robot-operator/internal/conversion"
)

// MaxConcurrentReviews is how many ConversionReviews the webhook serves
// at once. A review of the largest size the webhook reads (4 MiB)
// allocates about 33 MiB while it is read, decoded, converted and encoded
// (measured), not all of it live at once, so 4 at once (a peak heap of
// about 90 MiB under a flood of them, docs/security.md) fit in the shipped
// 512Mi memory limit beside the 118 MiB live heap of 10,000 Robots
// (docs/benchmarks.md), the Go runtime's limit set from the container's. The API server sends one review per object
// it reads in another version and, on a 429, waits the Retry-After and
// tries again (up to 10 times), so a burst over the limit is slowed, not
// failed.
const MaxConcurrentReviews = 4

// reviewSlotWait is how long a review waits for a slot before it is
// answered 429. A conversion takes milliseconds, so a second absorbs a
// burst from the API server; the wait holds no body (it is read only once
// the review has a slot), only the connection.
const reviewSlotWait = time.Second

// reviewRetryAfter is the Retry-After of a 429, in seconds.
const reviewRetryAfter = "1"

// WebhookHandler returns the conversion webhook server's handler: convert
// at conversion.Path, at most MaxConcurrentReviews at once.
func WebhookHandler(convert http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(conversion.Path, limitConcurrency(convert, MaxConcurrentReviews, reviewSlotWait))
	return mux
}

// limitConcurrency serves at most limit requests with next at once. A
// request over the limit waits up to wait for one to end, then is answered
// 429 with a Retry-After.
func limitConcurrency(next http.Handler, limit int, wait time.Duration) http.Handler {
	slots := make(chan struct{}, limit)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
		default:
			timer := time.NewTimer(wait)
			defer timer.Stop()
			select {
			case slots <- struct{}{}:
			case <-timer.C:
				w.Header().Set("Retry-After", reviewRetryAfter)
				http.Error(w, "too many conversions at once: try again later", http.StatusTooManyRequests)
				return
			case <-r.Context().Done():
				return
			}
		}
		defer func() { <-slots }()
		next.ServeHTTP(w, r)
	})
}
