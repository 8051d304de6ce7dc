package serving

import (
	"log"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/klog/v2"
)

// What net/http says of a connection (a failed TLS handshake, a panic in
// a handler, an error accepting) is logged at most errorLogRate lines a
// second, in bursts of errorLogBurst. Anyone who can connect can cause
// such lines, a failed handshake each, so they are limited; the next line
// let through says how many were left out.
const (
	errorLogRate  = 1
	errorLogBurst = 5
)

// newErrorLog returns the http.Server.ErrorLog of the server name: its
// lines go to logger, as structured entries, within the limit.
func newErrorLog(logger klog.Logger, name string) *log.Logger {
	return log.New(&errorLogWriter{
		logger:  logger.WithValues("server", name),
		limiter: rate.NewLimiter(errorLogRate, errorLogBurst),
		now:     time.Now,
	}, "", 0)
}

// errorLogWriter is the writer of a log.Logger that turns each line into a
// log entry, or counts it when it is over the limit.
type errorLogWriter struct {
	logger  klog.Logger
	limiter *rate.Limiter
	now     func() time.Time

	mu      sync.Mutex
	dropped int // lines left out since the last one logged
}

// Write logs one line written by net/http.
func (w *errorLogWriter) Write(line []byte) (int, error) {
	w.mu.Lock()
	if !w.limiter.AllowN(w.now(), 1) {
		w.dropped++
		w.mu.Unlock()
		return len(line), nil
	}
	dropped := w.dropped
	w.dropped = 0
	w.mu.Unlock()
	message := strings.TrimPrefix(strings.TrimSpace(string(line)), "http: ")
	if dropped > 0 {
		w.logger.Info("HTTP server error", "message", message, "dropped", dropped)
	} else {
		w.logger.Info("HTTP server error", "message", message)
	}
	return len(line), nil
}
