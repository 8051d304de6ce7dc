package webhookcert

import (
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Source holds the certificate the webhook serves with, for
// tls.Config.GetCertificate. Every replica keeps one, updated from the
// Secret whenever the Secret changes, so a renewed certificate is served at
// the next handshake, with no restart.
type Source struct {
	cert atomic.Pointer[tls.Certificate]
}

// errNoCertificate is what a handshake gets before the Secret holds a
// certificate: the API server retries, and the message says why.
var errNoCertificate = errors.New("the webhook has no serving certificate yet: the operator writes one into its Secret")

// Update takes the serving certificate and key from a Secret's data. When
// they do not load (a Secret the manifests ship empty, a half-written one),
// it keeps serving what it has and says why.
func (s *Source) Update(data map[string][]byte) error {
	if len(data[CertKey]) == 0 || len(data[KeyKey]) == 0 {
		return errNoCertificate
	}
	cert, err := tls.X509KeyPair(data[CertKey], data[KeyKey])
	if err != nil {
		return fmt.Errorf("the webhook's certificate and key do not load, so it keeps the ones it has: %w", err)
	}
	s.cert.Store(&cert)
	return nil
}

// GetCertificate returns the certificate to serve with.
func (s *Source) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if cert := s.cert.Load(); cert != nil {
		return cert, nil
	}
	return nil, errNoCertificate
}

// Ready returns nil when the webhook has a serving certificate that has not
// expired, and says why not otherwise: a replica without one cannot answer
// a conversion, and must not be among the webhook's endpoints.
func (s *Source) Ready() error {
	cert := s.cert.Load()
	if cert == nil {
		return errNoCertificate
	}
	if cert.Leaf != nil && time.Now().After(cert.Leaf.NotAfter) {
		return fmt.Errorf("the webhook's serving certificate expired at %s, and its Secret holds no newer one", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// TLSConfig returns the webhook server's TLS configuration. Its one client
// is the API server, which speaks TLS 1.3, so nothing older is offered, and
// TLS 1.3's suites are all AEAD.
func (s *Source) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, GetCertificate: s.GetCertificate}
}
