package webhookcert

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// The keys of the Secret. tls.crt, tls.key and ca.crt are those of a
// kubernetes.io/tls Secret as cert-manager writes it, so that the optional
// cert-manager setup fills the same Secret; ca.key is the operator's own,
// to sign the next serving certificate.
const (
	CertKey     = "tls.crt"
	KeyKey      = "tls.key"
	CABundleKey = "ca.crt"
	CAKeyKey    = "ca.key"
)

// The lifetimes. A CA is valid for a year and replaced when a third of
// that is left. The replacement is made in two steps, because the API
// server trusts only the CRD's caBundle and every replica serves whatever
// the Secret holds as soon as it changes. First the new CA joins the
// bundle, in front of the old one, while the replicas go on serving the
// old CA's certificate. Only once the CRD's caBundle holds the new CA, and
// RotationDelay has passed for every API server to take it up, is the
// serving certificate issued by the new CA. The old CA stays in the bundle
// until it expires, which covers a replica that has not reloaded yet. A
// serving certificate is valid for 90 days and replaced when 30 are left:
// a month in which a failing renewal is retried and alerted on before
// anything breaks.
const (
	CAValidity           = 365 * 24 * time.Hour
	CARenewBefore        = CAValidity / 3
	ServingValidity      = 90 * 24 * time.Hour
	ServingRenewBefore   = 30 * 24 * time.Hour
	RotationDelay        = 2 * time.Minute
	backdate             = time.Hour // for clients whose clock runs behind
	caCommonName         = "robot-operator-webhook-ca"
	servingCommonName    = "robot-operator-webhook"
	maxCAsInBundle       = 2
	certificatePEMType   = "CERTIFICATE"
	ecPrivateKeyPEMType  = "EC PRIVATE KEY"
	anyPrivateKeyPEMType = "PRIVATE KEY"
)

// Plan is what Check decides for the Secret's content.
type Plan struct {
	// Data is the Secret's next content; nil when the current one is good.
	Data map[string][]byte
	// Reason says why Data replaces the current content.
	Reason string
	// NotAfter is when the serving certificate in force (the current one,
	// or the one in Data) expires.
	NotAfter time.Time
	// SwitchAt, when set, is when the serving certificate may move to a
	// new CA that the bundle already holds, provided the CRD trusts it.
	SwitchAt time.Time
}

// Check decides whether the Secret's data holds a CA and a serving
// certificate for hosts, signed by that CA, that need no renewal at now; if
// not, it makes what replaces them. trusted is the caBundle the CRD holds
// now: a serving certificate moves to a new CA only once trusted holds it.
// It keeps a CA that is still good, and a previous CA in the bundle until
// it expires.
func Check(data map[string][]byte, hosts []string, now time.Time, trusted []byte) (Plan, error) {
	ca, caErr := loadCA(data)
	bundle := bundleOf(data[CABundleKey], now)
	leaf, servingReason := servingProblem(data, hosts, now)
	switch {
	case caErr != nil:
		next, err := newCA(now)
		if err != nil {
			return Plan{}, err
		}
		return issue(next, []*x509.Certificate{next.cert}, hosts, now, caErr.Error())
	case now.After(ca.cert.NotAfter.Add(-CARenewBefore)):
		next, err := newCA(now)
		if err != nil {
			return Plan{}, err
		}
		reason := fmt.Sprintf("the CA expires at %s", ca.cert.NotAfter.UTC().Format(time.RFC3339))
		bundle = []*x509.Certificate{next.cert}
		if now.Before(ca.cert.NotAfter) {
			// The old CA stays trusted until it expires.
			bundle = append(bundle, ca.cert)
		}
		if servingReason != "" || leaf.CheckSignatureFrom(ca.cert) != nil || !now.Before(ca.cert.NotAfter) {
			// Nothing good is served: the new CA's certificate at once.
			return issue(next, bundle, hosts, now, reason)
		}
		// The first step: the new CA joins the bundle; the serving
		// certificate stays until the CRD trusts the new CA.
		return Plan{
			Data: map[string][]byte{
				CertKey:     data[CertKey],
				KeyKey:      data[KeyKey],
				CABundleKey: encodeBundle(bundle),
				CAKeyKey:    next.keyPEM,
			},
			Reason:   reason + "; the new CA is added to the bundle first",
			NotAfter: leaf.NotAfter,
			SwitchAt: switchAt(next.cert),
		}, nil
	case servingReason != "":
		return issue(ca, withCA(bundle, ca), hosts, now, servingReason)
	case leaf.CheckSignatureFrom(ca.cert) != nil:
		if !slices.ContainsFunc(bundle, func(c *x509.Certificate) bool { return leaf.CheckSignatureFrom(c) == nil }) {
			return issue(ca, withCA(bundle, ca), hosts, now, "the serving certificate is not signed by the CA")
		}
		// The second step: the serving certificate is still the previous
		// CA's, which the bundle holds.
		at := switchAt(ca.cert)
		if !inBundle(bundleOf(trusted, now), ca.cert) || now.Before(at) {
			return Plan{NotAfter: leaf.NotAfter, SwitchAt: at}, nil
		}
		return issue(ca, withCA(bundle, ca), hosts, now, "the CRD trusts the new CA: the serving certificate moves to it")
	case !inBundle(bundle, ca.cert):
		return issue(ca, withCA(bundle, ca), hosts, now, "the CA bundle does not hold the CA")
	}
	return Plan{NotAfter: leaf.NotAfter}, nil
}

// switchAt is when the serving certificate may move to ca, a CA made
// (back-dated) RotationDelay before.
func switchAt(ca *x509.Certificate) time.Time {
	return ca.NotBefore.Add(backdate + RotationDelay)
}

// withCA returns bundle with ca first.
func withCA(bundle []*x509.Certificate, ca *authority) []*x509.Certificate {
	out := []*x509.Certificate{ca.cert}
	for _, c := range bundle {
		if !c.Equal(ca.cert) {
			out = append(out, c)
		}
	}
	return out
}

// issue returns the plan that serves a new certificate for hosts signed by
// ca, with bundle (ca first) as the CA bundle.
func issue(ca *authority, bundle []*x509.Certificate, hosts []string, now time.Time, reason string) (Plan, error) {
	certPEM, keyPEM, leaf, err := newServing(ca, hosts, now)
	if err != nil {
		return Plan{}, err
	}
	return Plan{
		Data: map[string][]byte{
			CertKey:     certPEM,
			KeyKey:      keyPEM,
			CABundleKey: encodeBundle(bundle),
			CAKeyKey:    ca.keyPEM,
		},
		Reason:   reason,
		NotAfter: leaf.NotAfter,
	}, nil
}

// encodeBundle returns the first maxCAsInBundle certificates of bundle as
// PEM.
func encodeBundle(bundle []*x509.Certificate) []byte {
	var out []byte
	for _, c := range bundle[:min(len(bundle), maxCAsInBundle)] {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: certificatePEMType, Bytes: c.Raw})...)
	}
	return out
}

// servingProblem says what is wrong with the serving certificate in data,
// whoever signed it: empty when it loads with its key, covers hosts and
// needs no renewal at now. It returns the certificate when it parses.
func servingProblem(data map[string][]byte, hosts []string, now time.Time) (*x509.Certificate, string) {
	if len(data[CertKey]) == 0 || len(data[KeyKey]) == 0 {
		return nil, "no serving certificate yet"
	}
	if _, err := tls.X509KeyPair(data[CertKey], data[KeyKey]); err != nil {
		return nil, fmt.Sprintf("the serving certificate and key do not load: %v", err)
	}
	leaf, err := parseCertificate(data[CertKey])
	if err != nil {
		return nil, fmt.Sprintf("the serving certificate does not parse: %v", err)
	}
	if now.After(leaf.NotAfter.Add(-ServingRenewBefore)) {
		return leaf, fmt.Sprintf("the serving certificate expires at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	for _, host := range hosts {
		if err := leaf.VerifyHostname(host); err != nil {
			return leaf, fmt.Sprintf("the serving certificate does not cover %s", host)
		}
	}
	return leaf, ""
}

// MergeBundle returns the CA bundle for the CRD when another writer
// (cert-manager) keeps the Secret: the Secret's ca.crt first, then the
// certificates of previous, the bundle the CRD holds now, that have the
// same subject as one of the Secret's and have not expired at now. So a
// renewal that replaces ca.crt outright does not cut off the replicas that
// still serve the previous certificate.
func MergeBundle(secretCA, previous []byte, now time.Time) []byte {
	current := bundleOf(secretCA, now)
	merged := slices.Clone(current)
	for _, c := range bundleOf(previous, now) {
		sameSubject := slices.ContainsFunc(current, func(s *x509.Certificate) bool { return bytes.Equal(s.RawSubject, c.RawSubject) })
		if sameSubject && !inBundle(merged, c) && len(merged) < len(current)+maxCAsInBundle {
			merged = append(merged, c)
		}
	}
	var out []byte
	for _, c := range merged {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: certificatePEMType, Bytes: c.Raw})...)
	}
	return out
}

// authority is a CA: its certificate, its key, and the key as PEM.
type authority struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	keyPEM []byte
}

// loadCA reads the CA of data: the first certificate of the bundle, with
// ca.key its key.
func loadCA(data map[string][]byte) (*authority, error) {
	if len(data[CAKeyKey]) == 0 || len(data[CABundleKey]) == 0 {
		return nil, errors.New("no CA yet")
	}
	cert, err := parseCertificate(data[CABundleKey])
	if err != nil {
		return nil, fmt.Errorf("the CA does not parse: %v", err)
	}
	block, _ := pem.Decode(data[CAKeyKey])
	if block == nil || block.Type != ecPrivateKeyPEMType {
		return nil, errors.New("the CA key is not an EC private key in PEM")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the CA key does not parse: %v", err)
	}
	if !cert.IsCA || !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("the CA key does not match the CA certificate")
	}
	return &authority{cert: cert, key: key, keyPEM: data[CAKeyKey]}, nil
}

// newCA makes a CA valid from now for CAValidity.
func newCA(now time.Time) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("making the CA's key: %w", err)
	}
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: caCommonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := sign(template, template, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("signing the CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, keyPEM: pem.EncodeToMemory(&pem.Block{Type: ecPrivateKeyPEMType, Bytes: keyDER})}, nil
}

// newServing makes a serving certificate for hosts (names or IP
// addresses), signed by ca, valid from now for ServingValidity.
func newServing(ca *authority, hosts []string, now time.Time) (certPEM, keyPEM []byte, leaf *x509.Certificate, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("making the serving key: %w", err)
	}
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: servingCommonName},
		NotBefore:   now.Add(-backdate),
		NotAfter:    now.Add(ServingValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, host := range hosts {
		if ip := net.ParseIP(host); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else if host != "" {
			template.DNSNames = append(template.DNSNames, host)
		}
	}
	der, err := sign(template, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("signing the serving certificate: %w", err)
	}
	leaf, err = x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: certificatePEMType, Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: anyPrivateKeyPEMType, Bytes: keyDER}), leaf, nil
}

// sign signs template with a random 128-bit serial number.
func sign(template, parent *x509.Certificate, pub *ecdsa.PublicKey, priv *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	template.SerialNumber = serial
	return x509.CreateCertificate(rand.Reader, template, parent, pub, priv)
}

// parseCertificate parses the first certificate of a PEM bundle.
func parseCertificate(bundle []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(bundle)
	if block == nil || block.Type != certificatePEMType {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// bundleOf parses a PEM bundle, leaving out what does not parse and what
// has expired at now.
func bundleOf(bundle []byte, now time.Time) []*x509.Certificate {
	var certs []*x509.Certificate
	for rest := bytes.TrimSpace(bundle); len(rest) > 0; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil && now.Before(cert.NotAfter) {
			certs = append(certs, cert)
		}
	}
	return certs
}

func inBundle(bundle []*x509.Certificate, cert *x509.Certificate) bool {
	return slices.ContainsFunc(bundle, cert.Equal)
}
