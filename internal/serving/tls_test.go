package serving

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

// TestMetricsTLSSuites: the metrics server takes TLS 1.2 for older
// scrapers, but only with AEAD suites: no CBC, no SHA-1.
func TestMetricsTLSSuites(t *testing.T) {
	config, err := metricsTLSConfig(ktesting.NewLogger(t, ktesting.DefaultConfig), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		client *tls.Config
		ok     bool
	}{
		{name: "TLS 1.3", client: &tls.Config{MinVersion: tls.VersionTLS13}, ok: true},
		{name: "TLS 1.2, AES-GCM", client: &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}, ok: true},
		{name: "TLS 1.2, ChaCha20-Poly1305", client: &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}}, ok: true},
		{name: "TLS 1.2, AES-128-CBC-SHA", client: &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}}},
		{name: "TLS 1.2, AES-256-CBC-SHA", client: &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA}}},
		{name: "TLS 1.1", client: &tls.Config{MaxVersion: tls.VersionTLS11}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serverConn, clientConn := net.Pipe()
			defer serverConn.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = tls.Server(serverConn, config).Handshake()
				serverConn.Close()
			}()
			tc.client.InsecureSkipVerify = true
			err := tls.Client(clientConn, tc.client).Handshake()
			clientConn.Close()
			<-done
			if tc.ok && err != nil {
				t.Errorf("handshake: %v, want it to succeed", err)
			}
			if !tc.ok && err == nil {
				t.Error("handshake succeeded, want it refused")
			}
		})
	}
}

// TestServeLogsErrorsThroughLogger: what net/http says of a connection
// (a failed TLS handshake, say) goes to the operator's logger, not to
// stderr in plain text, and a flood of such errors is logged a few lines
// a second, with the count of those left out.
func TestServeLogsErrorsThroughLogger(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	config, err := metricsTLSConfig(logger, "")
	if err != nil {
		t.Fatal(err)
	}
	server, err := Serve(logger, "test", "127.0.0.1:0", readsBody, config)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	plainHTTP := func() {
		conn, err := net.Dial("tcp", server.Addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write([]byte("GET / HTTP/1.1\r\nHost: not-tls\r\n\r\n"))
		_, _ = conn.Read(make([]byte, 512))
		conn.Close()
	}
	const attempts = 100
	for range attempts {
		plainHTTP()
	}
	// A line is let through again a second later, and says how many
	// were left out meanwhile.
	time.Sleep(1100 * time.Millisecond)
	plainHTTP()
	var logged string
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		logged = logger.GetSink().(ktesting.Underlier).GetBuffer().String()
		if strings.Contains(logged, "dropped") {
			break
		}
	}
	lines := strings.Count(logged, "TLS handshake error")
	if lines == 0 {
		t.Fatalf("%d failed handshakes, none logged through the logger:\n%s", attempts, logged)
	}
	if lines > errorLogBurst+2 {
		t.Errorf("%d failed handshakes in a second and one more logged %d lines, want at most %d", attempts+1, lines, errorLogBurst+2)
	}
	if !strings.Contains(logged, "dropped") {
		t.Errorf("the lines left out are not counted:\n%s", logged)
	}
}
