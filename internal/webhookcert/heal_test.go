package webhookcert

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
)

// TestManagerRecreatesADeletedSecret: a deleted Secret is made again, with
// a CA and a serving certificate, and the CRD trusts that CA.
func TestManagerRecreatesADeletedSecret(t *testing.T) {
	c := newCluster(t, inCluster, nil)
	_, ctx := ktesting.NewTestContext(t)
	if _, err := c.manager.Sync(ctx); err != nil {
		t.Fatalf("a deleted Secret: %v", err)
	}
	if got := writes(c.kube.Actions(), c.crds.Actions()); strings.Join(got, ",") != "create secrets,patch customresourcedefinitions" {
		t.Errorf("writes %v, want the Secret created and the CRD applied", got)
	}
	secret := c.secret(t)
	verify(t, secret.Data, inClusterHosts, c.now)
	if !bytes.Equal(c.crd(t).Spec.Conversion.Webhook.ClientConfig.CABundle, secret.Data[CABundleKey]) {
		t.Error("the CRD's caBundle is not the recreated Secret's ca.crt")
	}
}

// TestManagerCreateRaceReloads: when another replica creates the Secret
// first, this one takes what that replica wrote rather than its own.
func TestManagerCreateRaceReloads(t *testing.T) {
	c := newCluster(t, inCluster, nil)
	winner := mustCheck(t, nil, inClusterHosts, start).Data
	c.kube.PrependReactor("create", "secrets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		// The other replica's create lands just before this one's.
		other := shippedSecret()
		other.Data = winner
		if err := c.kube.Tracker().Add(other); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, secretName)
	})
	_, ctx := ktesting.NewTestContext(t)
	// The lost race is retried at once, from the Secret as stored.
	for range 2 {
		if _, err := c.manager.Sync(ctx); err == nil {
			break
		}
	}
	if got := c.secret(t).Data; !bytes.Equal(got[CAKeyKey], winner[CAKeyKey]) {
		t.Error("the Secret's CA is not the one the winner wrote")
	}
	if got := c.crd(t).Spec.Conversion.Webhook.ClientConfig.CABundle; !bytes.Equal(got, winner[CABundleKey]) {
		t.Error("the CRD's caBundle is not the winner's CA")
	}
}

// TestManagerApplyIsConditional: the CRD is applied with the
// resourceVersion it was read at, so that a replica that read the Secret
// before another replica renewed it cannot put back the older caBundle.
func TestManagerApplyIsConditional(t *testing.T) {
	c := newCluster(t, inCluster, shippedSecret())
	crd := c.crd(t)
	crd.ResourceVersion = "7"
	if err := c.crds.Tracker().Update(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"), crd, ""); err != nil {
		t.Fatal(err)
	}
	var applied []string
	c.crds.PrependReactor("patch", "customresourcedefinitions", func(action k8stesting.Action) (bool, runtime.Object, error) {
		var body struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(action.(k8stesting.PatchAction).GetPatch(), &body); err != nil {
			t.Fatal(err)
		}
		applied = append(applied, body.Metadata.ResourceVersion)
		return false, nil, nil
	})
	c.sync(t)
	if len(applied) != 1 || applied[0] != "7" {
		t.Errorf("applied with resourceVersions %q, want [\"7\"], the one read", applied)
	}
}

// TestManagerRotatesTheCAInTwoSteps: when the CA is renewed, the new CA is
// first added to the bundle (the Secret's and the CRD's) while the old
// serving certificate is still served; the serving certificate of the new
// CA comes only once the CRD trusts that CA. At every write, what the
// replicas serve is trusted by the CRD's caBundle as it is at that moment.
func TestManagerRotatesTheCAInTwoSteps(t *testing.T) {
	c := newCluster(t, inCluster, shippedSecret())
	c.sync(t)
	// The serving certificate was renewed 10 days before the CA's renewal
	// time, from the first CA.
	c.now = start.Add(CAValidity - CARenewBefore - 10*24*time.Hour)
	secret := c.secret(t)
	secret.Data = with(secret.Data, CertKey, nil)
	if _, err := c.kube.CoreV1().Secrets(namespace).Update(context.Background(), secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.sync(t)
	oldCA := mustLoadCA(t, c.secret(t).Data).cert

	// Every write is checked: what is served after it must be trusted by
	// the caBundle the API server holds after it.
	servedAfter := func(secretData map[string][]byte, caBundle []byte, at string) {
		t.Helper()
		leaf, err := parseCertificate(secretData[CertKey])
		if err != nil {
			t.Fatalf("%s: %v", at, err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(caBundle)
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: inClusterHosts[0], CurrentTime: c.now}); err != nil {
			t.Errorf("%s: the served certificate is not trusted by the CRD's caBundle: %v", at, err)
		}
	}
	var order []string
	c.kube.PrependReactor("update", "secrets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		order = append(order, "secret")
		updated := action.(k8stesting.UpdateAction).GetObject().(*corev1.Secret)
		servedAfter(updated.Data, c.crd(t).Spec.Conversion.Webhook.ClientConfig.CABundle, "the Secret's update")
		return false, nil, nil
	})
	c.crds.PrependReactor("patch", "customresourcedefinitions", func(action k8stesting.Action) (bool, runtime.Object, error) {
		order = append(order, "crd")
		var body apiextensionsv1.CustomResourceDefinition
		if err := json.Unmarshal(action.(k8stesting.PatchAction).GetPatch(), &body); err != nil {
			t.Fatal(err)
		}
		servedAfter(c.secret(t).Data, body.Spec.Conversion.Webhook.ClientConfig.CABundle, "the CRD's apply")
		return false, nil, nil
	})

	// Past the CA's renewal time, pass after pass, until the serving
	// certificate is the new CA's.
	c.now = start.Add(CAValidity - CARenewBefore + time.Hour)
	var newCA *x509.Certificate
	for i := 0; i < 10; i++ {
		_, ctx := ktesting.NewTestContext(t)
		wait, err := c.manager.Sync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		data := c.secret(t).Data
		ca := mustLoadCA(t, data).cert
		leaf, _ := parseCertificate(data[CertKey])
		if !ca.Equal(oldCA) && leaf.CheckSignatureFrom(ca) == nil {
			newCA = ca
			break
		}
		c.now = c.now.Add(min(wait, 10*time.Minute))
	}
	if newCA == nil {
		t.Fatalf("the serving certificate never came from a new CA; writes in order: %v", order)
	}
	if len(order) < 3 || order[0] != "secret" || order[1] != "crd" {
		t.Errorf("writes in order %v, want the Secret (new CA added), the CRD (new CA trusted), then the Secret (serving certificate)", order)
	}
	bundle := bundleOf(c.crd(t).Spec.Conversion.Webhook.ClientConfig.CABundle, c.now)
	if !inBundle(bundle, newCA) || !inBundle(bundle, oldCA) {
		t.Errorf("the CRD's caBundle holds %d CAs; want the new and the old (still valid) one", len(bundle))
	}
}

// TestManagerExternalKeepsThePreviousCA: with cert-manager renewing a
// self-signed certificate, the CRD goes on trusting the previous ca.crt
// until it expires, so that replicas still serving the previous
// certificate are not cut off.
func TestManagerExternalKeepsThePreviousCA(t *testing.T) {
	first := shippedSecret()
	first.Data = mustCheck(t, nil, inClusterHosts, start).Data
	delete(first.Data, CAKeyKey)
	c := newCluster(t, inCluster, first)
	c.manager.External = true
	c.sync(t)

	renewed := c.secret(t)
	renewed.Data = mustCheck(t, nil, inClusterHosts, start.Add(time.Hour)).Data
	delete(renewed.Data, CAKeyKey)
	if _, err := c.kube.CoreV1().Secrets(namespace).Update(context.Background(), renewed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.now = start.Add(time.Hour)
	c.sync(t)
	bundle := bundleOf(c.crd(t).Spec.Conversion.Webhook.ClientConfig.CABundle, c.now)
	for name, data := range map[string]map[string][]byte{"previous": first.Data, "renewed": renewed.Data} {
		if ca, err := parseCertificate(data[CABundleKey]); err != nil || !inBundle(bundle, ca) {
			t.Errorf("the CRD's caBundle does not hold the %s ca.crt (%v)", name, err)
		}
	}
	// Once the previous one has expired, it goes.
	c.now = start.Add(CAValidity + time.Minute)
	c.sync(t)
	if got := len(bundleOf(c.crd(t).Spec.Conversion.Webhook.ClientConfig.CABundle, start)); got != 1 {
		t.Errorf("after the previous CA expired the caBundle holds %d certificates, want 1", got)
	}
}

// TestManagersThatDisagreeBackOff: two installations that point the one
// CRD at two different Services (two chart releases in two namespaces)
// each put back their own as soon as the CRD changes; they must not fight
// at the speed of the CRD watch, but back off.
func TestManagersThatDisagreeBackOff(t *testing.T) {
	a := newCluster(t, inCluster, shippedSecret())
	other := inCluster
	other.ServiceNamespace = "team-other"
	b := newCluster(t, other, shippedSecret())
	// One CRD for both.
	b.manager.CRDs = a.manager.CRDs
	now := start
	a.manager.Now = func() time.Time { return now }
	b.manager.Now = func() time.Time { return now }
	_, ctx := ktesting.NewTestContext(t)
	applies := 0
	a.crds.PrependReactor("patch", "customresourcedefinitions", func(k8stesting.Action) (bool, runtime.Object, error) {
		applies++
		return false, nil, nil
	})
	// Each pass is what the CRD watch sets off when the other wrote: ten
	// minutes of it, a pass a second for each.
	for range 600 {
		_, _ = a.manager.Sync(ctx)
		_, _ = b.manager.Sync(ctx)
		now = now.Add(time.Second)
	}
	if applies > 30 {
		t.Errorf("two installations that disagree applied the CRD %d times in 10 minutes, want them to back off (at most 30)", applies)
	}
	t.Logf("%d applies in 10 minutes", applies)
}
