package webhookcert

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

var (
	start = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	hosts = []string{"robot-operator-webhook.robot-operator.svc", "127.0.0.1"}
)

// verify checks that data's serving certificate is trusted through data's CA
// bundle for every host at now, and returns its certificate.
func verify(t *testing.T, data map[string][]byte, hosts []string, now time.Time) *x509.Certificate {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data[CABundleKey]) {
		t.Fatalf("the CA bundle holds no certificate: %q", data[CABundleKey])
	}
	leaf, err := parseCertificate(data[CertKey])
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range hosts {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: now}); err != nil {
			t.Errorf("the serving certificate is not trusted for %s at %s: %v", host, now, err)
		}
	}
	return leaf
}

func bundleSize(data map[string][]byte) int {
	n := 0
	for rest := data[CABundleKey]; ; n++ {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return n
		}
	}
}

func mustCheck(t *testing.T, data map[string][]byte, hosts []string, now time.Time) Plan {
	t.Helper()
	plan, err := Check(data, hosts, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func TestCheckMakesThenKeeps(t *testing.T) {
	first := mustCheck(t, nil, hosts, start)
	if first.Data == nil || first.Reason != "no CA yet" {
		t.Fatalf("an empty Secret: reason %q, data %v; want a CA and certificate made because there is no CA yet", first.Reason, first.Data != nil)
	}
	leaf := verify(t, first.Data, hosts, start)
	if !first.NotAfter.Equal(leaf.NotAfter) || !leaf.NotAfter.Equal(start.Add(ServingValidity)) {
		t.Errorf("NotAfter %s, certificate's %s, want %s", first.NotAfter, leaf.NotAfter, start.Add(ServingValidity))
	}
	// The same content, a day or a month later, is good as it is.
	for _, later := range []time.Duration{24 * time.Hour, ServingValidity - ServingRenewBefore - time.Hour} {
		if again := mustCheck(t, first.Data, hosts, start.Add(later)); again.Data != nil {
			t.Errorf("%v later: replaced (%s), want kept", later, again.Reason)
		}
	}
}

func TestCheckRenews(t *testing.T) {
	first := mustCheck(t, nil, hosts, start).Data
	oldCA, err := loadCA(first)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		data       map[string][]byte
		hosts      []string
		at         time.Duration
		reason     string
		newCA      bool
		bundleSize int
	}{
		{"the serving certificate near its end", first, hosts, ServingValidity - ServingRenewBefore + time.Hour, "the serving certificate expires", false, 1},
		{"a host added", first, append([]string{"robot-operator-webhook.other.svc"}, hosts...), time.Hour, "does not cover robot-operator-webhook.other.svc", false, 1},
		{"the serving key lost", with(first, KeyKey, nil), hosts, time.Hour, "no serving certificate yet", false, 1},
		{"a serving key of another certificate", with(first, KeyKey, mustCheck(t, nil, hosts, start).Data[KeyKey]), hosts, time.Hour, "do not load", false, 1},
		{"the CA near its end", first, hosts, CAValidity - CARenewBefore + time.Hour, "the CA expires", true, 2},
		{"the CA key of another CA", with(first, CAKeyKey, mustCheck(t, nil, hosts, start).Data[CAKeyKey]), hosts, time.Hour, "does not match", true, 1},
		{"garbage", map[string][]byte{CertKey: []byte("x"), KeyKey: []byte("y"), CABundleKey: []byte("z"), CAKeyKey: []byte("w")}, hosts, 0, "the CA does not parse", true, 1},
		{"a bundle without the CA", with(first, CABundleKey, append(mustCheck(t, nil, hosts, start).Data[CABundleKey], first[CABundleKey]...)), hosts, time.Hour, "", true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := start.Add(tt.at)
			plan := mustCheck(t, tt.data, tt.hosts, now)
			if plan.Data == nil {
				t.Fatal("kept, want replaced")
			}
			if !strings.Contains(plan.Reason, tt.reason) {
				t.Errorf("reason %q, want it to say %q", plan.Reason, tt.reason)
			}
			verify(t, plan.Data, tt.hosts, now)
			ca, err := loadCA(plan.Data)
			if err != nil {
				t.Fatal(err)
			}
			if got := !ca.cert.Equal(oldCA.cert); got != tt.newCA {
				t.Errorf("new CA %v, want %v", got, tt.newCA)
			}
			if got := bundleSize(plan.Data); got != tt.bundleSize {
				t.Errorf("%d CAs in the bundle, want %d", got, tt.bundleSize)
			}
			if again := mustCheck(t, plan.Data, tt.hosts, now); again.Data != nil {
				t.Errorf("what replaced it is replaced again at once: %s", again.Reason)
			}
		})
	}
}

// TestCARenewalKeepsOldClientsWorking: the first step of a CA renewal keeps
// the serving certificate the old CA signed, which the new bundle (new CA
// first, old CA after it) still trusts; once the CRD trusts the new CA and
// RotationDelay has passed, the certificate moves to the new CA, which the
// same bundle trusts.
func TestCARenewalKeepsOldClientsWorking(t *testing.T) {
	first := mustCheck(t, nil, hosts, start).Data
	now := start.Add(CAValidity - CARenewBefore + time.Hour)
	// The last serving certificate of the old CA, made just before.
	last := mustCheck(t, with(first, CertKey, nil), hosts, now.Add(-2*time.Hour)).Data
	if ca, err := loadCA(last); err != nil || !ca.cert.Equal(mustLoadCA(t, first).cert) {
		t.Fatalf("the CA changed before its renewal time (%v)", err)
	}
	renewed := mustCheck(t, last, hosts, now).Data
	verify(t, renewed, hosts, now)
	if !bytes.Equal(renewed[CertKey], last[CertKey]) {
		t.Error("the first step of the CA renewal replaced the serving certificate")
	}
	// Not before the CRD trusts the new CA, nor before RotationDelay.
	later := now.Add(RotationDelay + time.Minute)
	if plan := mustCheck(t, renewed, hosts, later); plan.Data != nil {
		t.Errorf("the serving certificate moved to the new CA before the CRD trusted it: %s", plan.Reason)
	}
	if plan, _ := Check(renewed, hosts, now, renewed[CABundleKey]); plan.Data != nil {
		t.Errorf("the serving certificate moved to the new CA before RotationDelay: %s", plan.Reason)
	}
	moved, err := Check(renewed, hosts, later, renewed[CABundleKey])
	if err != nil || moved.Data == nil {
		t.Fatalf("the serving certificate did not move to the new CA once the CRD trusted it (%v)", err)
	}
	if leaf := verify(t, moved.Data, hosts, later); leaf.CheckSignatureFrom(mustLoadCA(t, renewed).cert) != nil {
		t.Error("the moved serving certificate is not the new CA's")
	}
	// Once the old CA has expired, it leaves the bundle at the next renewal.
	afterOld := start.Add(CAValidity + time.Hour)
	next := mustCheck(t, with(renewed, CertKey, nil), hosts, afterOld).Data
	if got := bundleSize(next); got != 1 {
		t.Errorf("%d CAs in the bundle after the old one expired, want 1", got)
	}
}

func mustLoadCA(t *testing.T, data map[string][]byte) *authority {
	t.Helper()
	ca, err := loadCA(data)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// with returns a copy of data with key set to value.
func with(data map[string][]byte, key string, value []byte) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range data {
		out[k] = v
	}
	out[key] = value
	return out
}
