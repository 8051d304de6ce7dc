package serving

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/klog/v2"
)

// Limits are what an HTTP server allows one connection: how long it may
// take to send its headers and its whole request, how long an answer may
// take to write, how long it may stay idle between requests, and how large
// its headers may be.
type Limits struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
}

// DefaultLimits are the limits of every server whose handler asks for no
// others. Their callers are the API server, a scraper and the kubelet, all
// on the cluster network, which send a request of at most a few MiB in well
// under a second, so the limits are generous for them and short for anyone
// who wants to hold a connection with a trickle of bytes.
//   - ReadHeaderTimeout also bounds the TLS handshake (net/http takes the
//     shortest of the timeouts for it).
//   - ReadTimeout bounds headers and body: a 4 MiB ConversionReview needs
//     only 0.4 MB/s to arrive in time.
//   - WriteTimeout runs from the end of the headers to the end of the
//     answer, so it covers the handler too; a conversion or a scrape takes
//     milliseconds, and the API server gives a conversion 30s at most.
//   - IdleTimeout closes a keep-alive connection that sends nothing more;
//     a scraper or the API server that comes back later opens another.
//   - MaxHeaderBytes covers the request line and every header: a projected
//     ServiceAccount token is 1-2 KB, and no path the servers serve is
//     longer than /debug/pprof/goroutine?debug=2.
var DefaultLimits = Limits{
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       10 * time.Second,
	WriteTimeout:      20 * time.Second,
	IdleTimeout:       60 * time.Second,
	MaxHeaderBytes:    16 << 10,
}

// limited is a handler that asks Serve for limits of its own.
type limited interface {
	Limits() Limits
}

// Serve starts an HTTP server for handler on addr, over TLS when tlsConfig
// is not nil, with the handler's Limits when it has a Limits method, else
// with DefaultLimits.
func Serve(logger klog.Logger, name, addr string, handler http.Handler, tlsConfig *tls.Config) (*http.Server, error) {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serving %s: %w", name, err)
	}
	if tlsConfig != nil {
		listener = tls.NewListener(listener, tlsConfig)
	}
	limits := DefaultLimits
	if l, ok := handler.(limited); ok {
		limits = l.Limits()
	}
	server := &http.Server{
		Addr:              listener.Addr().String(),
		Handler:           handler,
		ReadHeaderTimeout: limits.ReadHeaderTimeout,
		ReadTimeout:       limits.ReadTimeout,
		WriteTimeout:      limits.WriteTimeout,
		IdleTimeout:       limits.IdleTimeout,
		MaxHeaderBytes:    limits.MaxHeaderBytes,
		ErrorLog:          newErrorLog(logger, name),
	}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "HTTP server failed", "server", name)
		}
	}()
	logger.Info("Serving", "server", name, "address", server.Addr, "tls", tlsConfig != nil)
	return server, nil
}

// ShutdownServers stops servers, giving the requests under way 5 seconds
// to end.
func ShutdownServers(logger klog.Logger, servers []*http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, server := range servers {
		if err := server.Shutdown(ctx); err != nil {
			logger.Error(err, "Stopping an HTTP server")
		}
	}
}
