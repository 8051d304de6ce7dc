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

// Serve starts an HTTP server for handler on addr, over TLS when tlsConfig
// is not nil.
func Serve(logger klog.Logger, name, addr string, handler http.Handler, tlsConfig *tls.Config) (*http.Server, error) {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serving %s: %w", name, err)
	}
	if tlsConfig != nil {
		listener = tls.NewListener(listener, tlsConfig)
	}
	server := &http.Server{Addr: listener.Addr().String(), Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "HTTP server failed", "server", name)
		}
	}()
	logger.Info("Serving", "server", name, "address", listener.Addr().String(), "tls", tlsConfig != nil)
	return server, nil
}

func ShutdownServers(logger klog.Logger, servers []*http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, server := range servers {
		if err := server.Shutdown(ctx); err != nil {
			logger.Error(err, "Stopping an HTTP server")
		}
	}
}
