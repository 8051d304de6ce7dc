package serving

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// The file names in -metrics-cert-dir: those of a kubernetes.io/tls Secret,
// which is what cert-manager writes.
const (
	metricsCertFile = "tls.crt"
	metricsKeyFile  = "tls.key"
)

// selfSignedValidity is how long the certificate made at start-up is valid.
// A scraper that verifies certificates needs one from -metrics-cert-dir
// anyway; a year only has to outlast any one process.
const selfSignedValidity = 365 * 24 * time.Hour

// metricsCipherSuites are the TLS 1.2 suites the metrics server accepts:
// ECDHE with AES-GCM or ChaCha20-Poly1305 only, for ECDSA certificates (the
// self-signed one) and RSA ones (a cert-manager Issuer may make those).
// TLS 1.2 stays for scrapers built with older TLS stacks; TLS 1.3's own
// suites are all AEAD and not configurable.
var metricsCipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// metricsTLSConfig returns the TLS configuration of the metrics server: the
// certificate in certDir, reloaded when it changes, or a self-signed one
// made now when certDir is empty.
func metricsTLSConfig(logger klog.Logger, certDir string) (*tls.Config, error) {
	config := &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: metricsCipherSuites}
	if certDir == "" {
		host, _ := os.Hostname()
		cert, err := selfSignedCertificate(time.Now(), "localhost", host, "127.0.0.1", "::1")
		if err != nil {
			return nil, err
		}
		config.Certificates = []tls.Certificate{cert}
		return config, nil
	}
	reloader := &certReloader{logger: logger, certPath: filepath.Join(certDir, metricsCertFile), keyPath: filepath.Join(certDir, metricsKeyFile)}
	if _, err := reloader.GetCertificate(nil); err != nil {
		return nil, err
	}
	config.GetCertificate = reloader.GetCertificate
	return config, nil
}

// selfSignedCertificate makes an ECDSA P-256 key and a certificate for it,
// signed by itself, for hosts (names or IP addresses).
func selfSignedCertificate(now time.Time, hosts ...string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("making a key for the metrics certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("making a serial number for the metrics certificate: %w", err)
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "robot-operator-metrics"},
		// A little in the past, for scrapers whose clock runs behind.
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range hosts {
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("signing the metrics certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// certReloader serves the certificate and key in two files, and loads them
// again when either file changes, so that a renewed certificate (cert-manager
// updates the mounted Secret in place) is used without a restart. It looks
// at the files' modification times and sizes at each TLS handshake: two
// stat calls, cheap next to the handshake itself.
type certReloader struct {
	logger            klog.Logger
	certPath, keyPath string

	mu      sync.Mutex
	cert    *tls.Certificate
	version [2]fileVersion
}

// fileVersion tells one content of a file from the next.
type fileVersion struct {
	modTime time.Time
	size    int64
}

// GetCertificate returns the current certificate, for
// tls.Config.GetCertificate. When the files changed but do not load (a
// renewal caught half-written), it keeps serving the certificate it has, and
// tries again at the next handshake.
func (r *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	version, err := r.versions()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil && r.cert != nil && version == r.version {
		return r.cert, nil
	}
	if err == nil {
		var cert tls.Certificate
		cert, err = tls.LoadX509KeyPair(r.certPath, r.keyPath)
		if err == nil {
			if r.cert != nil {
				r.logger.Info("Loaded a new metrics certificate", "file", r.certPath)
			}
			r.cert, r.version = &cert, version
			return r.cert, nil
		}
	}
	if r.cert == nil {
		return nil, fmt.Errorf("loading the metrics certificate: %w", err)
	}
	r.logger.Error(err, "Loading the changed metrics certificate; serving the previous one", "file", r.certPath)
	return r.cert, nil
}

func (r *certReloader) versions() ([2]fileVersion, error) {
	var v [2]fileVersion
	for i, path := range []string{r.certPath, r.keyPath} {
		info, err := os.Stat(path)
		if err != nil {
			return v, err
		}
		v[i] = fileVersion{modTime: info.ModTime(), size: info.Size()}
	}
	return v, nil
}
