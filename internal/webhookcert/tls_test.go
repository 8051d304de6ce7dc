package webhookcert

import (
	"crypto/tls"
	"net"
	"testing"
)

// handshake runs a TLS handshake between a server with config and a
// client that offers at most maxVersion, and returns the client's error.
func handshake(t *testing.T, config *tls.Config, maxVersion uint16) error {
	t.Helper()
	serverConn, clientConn := net.Pipe()
	defer serverConn.Close()
	defer clientConn.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tls.Server(serverConn, config).Handshake()
		serverConn.Close()
	}()
	err := tls.Client(clientConn, &tls.Config{InsecureSkipVerify: true, MaxVersion: maxVersion}).Handshake()
	clientConn.Close()
	<-done
	return err
}

// TestWebhookTLSVersions: the webhook's one client is the API server,
// which speaks TLS 1.3, so nothing older is offered.
func TestWebhookTLSVersions(t *testing.T) {
	var source Source
	if err := source.Update(mustCheck(t, nil, hosts, start).Data); err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, source.TLSConfig(), tls.VersionTLS13); err != nil {
		t.Errorf("a TLS 1.3 client: %v", err)
	}
	if err := handshake(t, source.TLSConfig(), tls.VersionTLS12); err == nil {
		t.Error("a TLS 1.2 client was served, want only TLS 1.3")
	}
}
