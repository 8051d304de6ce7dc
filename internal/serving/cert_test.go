package serving

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

// writeCertificate writes a new self-signed certificate for host into dir as
// tls.crt and tls.key, with the given modification time, and returns it.
func writeCertificate(t *testing.T, dir, host string, modTime time.Time) *x509.Certificate {
	t.Helper()
	cert, err := selfSignedCertificate(time.Now(), host)
	if err != nil {
		t.Fatal(err)
	}
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{
		metricsCertFile: {Type: "CERTIFICATE", Bytes: cert.Certificate[0]},
		metricsKeyFile:  {Type: "PRIVATE KEY", Bytes: key},
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, modTime, modTime); err != nil {
			t.Fatal(err)
		}
	}
	return cert.Leaf
}

// servedCertificate connects to server and returns the certificate it
// presents.
func servedCertificate(t *testing.T, address string) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", address, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// TestMetricsCertificateReload: a certificate written into the directory
// over the one served is served from the next connection on, without a
// restart; a broken one is not, and the previous one stays.
func TestMetricsCertificateReload(t *testing.T) {
	dir := t.TempDir()
	start := time.Now().Add(-time.Hour)
	first := writeCertificate(t, dir, "first.example", start)

	config, err := metricsTLSConfig(ktesting.NewLogger(t, ktesting.DefaultConfig), dir)
	if err != nil {
		t.Fatal(err)
	}
	// As the operator serves: the configuration on a TLS listener, so that
	// nothing else provides a certificate.
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Second}
	go func() { _ = server.Serve(tls.NewListener(listener, config)) }()
	defer server.Close()
	address := listener.Addr().String()

	if got := servedCertificate(t, address); !got.Equal(first) {
		t.Fatalf("serves %v, want the certificate in the directory (%v)", got.DNSNames, first.DNSNames)
	}
	if got := servedCertificate(t, address); !got.Equal(first) {
		t.Fatalf("a second connection with no change: serves %v, want %v", got.DNSNames, first.DNSNames)
	}

	second := writeCertificate(t, dir, "second.example", start.Add(time.Minute))
	if got := servedCertificate(t, address); !got.Equal(second) {
		t.Errorf("after a renewal: serves %v, want the new certificate %v", got.DNSNames, second.DNSNames)
	}

	// A renewal caught half-written: the key file is not a key yet.
	if err := os.WriteFile(filepath.Join(dir, metricsKeyFile), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := servedCertificate(t, address); !got.Equal(second) {
		t.Errorf("with a broken key file: serves %v, want the previous certificate %v", got.DNSNames, second.DNSNames)
	}

	third := writeCertificate(t, dir, "third.example", start.Add(2*time.Minute))
	if got := servedCertificate(t, address); !got.Equal(third) {
		t.Errorf("after the renewal completed: serves %v, want %v", got.DNSNames, third.DNSNames)
	}
}

// TestMetricsCertificateDirMissing: a directory without a certificate fails
// at start-up, not at the first scrape.
func TestMetricsCertificateDirMissing(t *testing.T) {
	if _, err := metricsTLSConfig(ktesting.NewLogger(t, ktesting.DefaultConfig), t.TempDir()); err == nil {
		t.Error("an empty -metrics-cert-dir was accepted, want an error")
	}
}

// TestSelfSignedCertificate: the certificate made at start-up is for the
// names and addresses given, a server certificate, valid now.
func TestSelfSignedCertificate(t *testing.T) {
	now := time.Now()
	cert, err := selfSignedCertificate(now, "localhost", "127.0.0.1", "")
	if err != nil {
		t.Fatal(err)
	}
	leaf := cert.Leaf
	if err := leaf.VerifyHostname("localhost"); err != nil {
		t.Error(err)
	}
	if err := leaf.VerifyHostname("127.0.0.1"); err != nil {
		t.Error(err)
	}
	if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		t.Errorf("valid from %v to %v, not now (%v)", leaf.NotBefore, leaf.NotAfter, now)
	}
	if len(leaf.ExtKeyUsage) != 1 || leaf.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("extended key usage %v, want server auth", leaf.ExtKeyUsage)
	}
}
