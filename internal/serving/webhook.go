package serving

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/robot-operator/robot-operator/internal/conversion"
)

// MaxConcurrentReviews is how many ConversionReviews the webhook converts
// at once; MaxConvertingBytes bounds their bodies. A review of the
// largest size the webhook reads (4 MiB) allocates about 35 MiB while it
// is decoded, converted and encoded (BenchmarkWebhookLargestReview), not
// all of it live at once, so 2 at once, beside the bodies held, fit in
// the shipped 512Mi memory limit with the 118 MiB live heap of 10,000
// Robots (docs/benchmarks.md), the Go runtime's limit set from the
// container's. A Robot's review is a few kilobytes: 4 of them run at once.
// The API server sends one review per object it reads in another version
// and, on a 429, waits the Retry-After and tries again (up to 10 times),
// so a burst over the limit is slowed, not failed.
const MaxConcurrentReviews = 4

// MaxConvertingBytes bounds the bodies of the reviews converted at once:
// 2 of the largest reviews the webhook reads, where MaxConcurrentReviews
// of the usual few kilobytes. Each review weighs at least a
// MaxConcurrentReviews-th of it.
const MaxConvertingBytes = 2 * conversion.MaxReviewBytes

// MaxOpenReviews bounds the requests the webhook holds at once, whether it
// is reading their body, waiting for a slot or converting: each may hold a
// body of up to conversion.MaxReviewBytes, so bodies never take more than
// 12 × 4 MiB. A request over it is answered 429 at once, unread.
const MaxOpenReviews = 12

// MaxOpenReviewsPerHost bounds the requests from one source address at
// once, so that a host that trickles its bodies, or sends many, leaves the
// other half to the API server. The API server sends from one address
// (each replica from its own), and needs no more than the slots and their
// waiting room.
const MaxOpenReviewsPerHost = MaxOpenReviews / 2

// reviewReadTimeout is how long a review's body may take to arrive once
// its headers have. The API server sends a review whole at once: 4 MiB on
// the cluster network takes milliseconds, and 3 seconds still leaves it
// 1.4 MB/s. The server's ReadTimeout (10s) would let a trickled body hold
// its place three times as long.
const reviewReadTimeout = 3 * time.Second

// reviewSlotWait is how long a review, its body read, waits for a slot
// before it is answered 429. A conversion takes milliseconds, so a second
// absorbs a burst from the API server.
const reviewSlotWait = time.Second

// reviewRetryAfter is the Retry-After of a 429, in seconds.
const reviewRetryAfter = "1"

// WebhookHandler returns the conversion webhook server's handler: convert
// at conversion.Path, each review's body read first under its own
// deadline, then at most MaxConcurrentReviews converted at once.
func WebhookHandler(convert http.Handler) http.Handler {
	mux := http.NewServeMux()
	gate := newReviewGate(MaxOpenReviews, MaxOpenReviewsPerHost)
	mux.Handle(conversion.Path, gate.wrap(readBodyFirst(limitConcurrency(convert, MaxConcurrentReviews, MaxConvertingBytes, reviewSlotWait), conversion.MaxReviewBytes, reviewReadTimeout)))
	return mux
}

// reviewGate bounds the requests held at once, in all and per source
// address.
type reviewGate struct {
	limit, perHost int

	mu     sync.Mutex
	open   int
	byHost map[string]int
}

func newReviewGate(limit, perHost int) *reviewGate {
	return &reviewGate{limit: limit, perHost: perHost, byHost: map[string]int{}}
}

// wrap serves next only for a request within the gate's bounds, and
// answers any other 429 with a Retry-After, its body unread.
func (g *reviewGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		if !g.enter(host) {
			tooMany(w)
			return
		}
		defer g.leave(host)
		next.ServeHTTP(w, r)
	})
}

func (g *reviewGate) enter(host string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open >= g.limit || g.byHost[host] >= g.perHost {
		return false
	}
	g.open++
	g.byHost[host]++
	return true
}

func (g *reviewGate) leave(host string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open--
	if g.byHost[host]--; g.byHost[host] <= 0 {
		delete(g.byHost, host)
	}
}

// readBodyFirst reads the request's body, at most limit bytes of it and
// within timeout, before next is called: a body that trickles in then
// holds no slot of next's. A body over limit is passed on cut at limit+1
// bytes, for next to refuse as too large; one that does not arrive in
// time is answered 408, and the connection closed.
func readBodyFirst(next http.Handler, limit int64, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		controller := http.NewResponseController(w)
		// Without a deadline of its own (a test's recorder), the body is
		// bounded by the server's ReadTimeout alone.
		_ = controller.SetReadDeadline(time.Now().Add(timeout))
		body, err := conversion.ReadBody(io.LimitReader(r.Body, limit+1), r.ContentLength)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				w.Header().Set("Connection", "close")
				http.Error(w, "the ConversionReview's body did not arrive in time", http.StatusRequestTimeout)
				return
			}
			http.Error(w, "reading the ConversionReview: "+err.Error(), http.StatusBadRequest)
			return
		}
		_ = controller.SetReadDeadline(time.Time{})
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// limitConcurrency serves with next at most limit requests, and at most
// budget bytes of bodies, at once: a request weighs its body, and at
// least budget/limit, so limit small reviews or fewer large ones run
// together. A request over the bounds waits up to wait for room, then is
// answered 429 with a Retry-After. The body is read already
// (readBodyFirst), so its Content-Length is its size.
func limitConcurrency(next http.Handler, limit int, budget int64, wait time.Duration) http.Handler {
	room := semaphore.NewWeighted(budget)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		weight := min(max(r.ContentLength, budget/int64(limit)), budget)
		if !room.TryAcquire(weight) {
			ctx, cancel := context.WithTimeout(r.Context(), wait)
			err := room.Acquire(ctx, weight)
			cancel()
			if err != nil {
				if r.Context().Err() == nil {
					tooMany(w)
				}
				return
			}
		}
		defer room.Release(weight)
		next.ServeHTTP(w, r)
	})
}

// tooMany answers 429 with a Retry-After, which the API server honours.
func tooMany(w http.ResponseWriter) {
	w.Header().Set("Retry-After", reviewRetryAfter)
	http.Error(w, "too many conversions at once: try again later", http.StatusTooManyRequests)
}
