package webhookcert

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

const (
	namespace  = "robot-operator"
	secretName = "robot-operator-webhook-cert"
	crdName    = "robots.robot.dev"
)

// shippedSecret is the Secret as the manifests ship it: no data at all.
func shippedSecret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName},
		Type:       corev1.SecretTypeOpaque,
	}
}

// shippedCRD is the CRD as the manifests ship it: its conversion names the
// Service in the default namespace, with no caBundle.
func shippedCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: crdName},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "robot.dev",
			Conversion: &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
						Namespace: "robot-operator", Name: "robot-operator-webhook", Path: ptr.To("/convert"), Port: ptr.To[int32](443),
					}},
					ConversionReviewVersions: []string{"v1"},
				},
			},
		},
	}
}

type cluster struct {
	kube    *fake.Clientset
	crds    *apiextensionsfake.Clientset
	manager *Manager
	now     time.Time
}

func newCluster(t *testing.T, endpoint Endpoint, secret *corev1.Secret) *cluster {
	t.Helper()
	c := &cluster{now: start}
	if secret != nil {
		c.kube = fake.NewClientset(secret)
	} else {
		c.kube = fake.NewClientset()
	}
	c.crds = apiextensionsfake.NewClientset(shippedCRD())
	c.manager = &Manager{
		Secrets: c.kube.CoreV1().Secrets(namespace), SecretName: secretName,
		CRDs: c.crds.ApiextensionsV1().CustomResourceDefinitions(), CRDName: crdName,
		Endpoint: endpoint,
		Now:      func() time.Time { return c.now },
	}
	return c
}

func (c *cluster) sync(t *testing.T) time.Duration {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	wait, err := c.manager.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.kube.ClearActions()
	c.crds.ClearActions()
	return wait
}

func (c *cluster) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	secret, err := c.kube.CoreV1().Secrets(namespace).Get(context.Background(), secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

func (c *cluster) crd(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

// writes returns the actions that are not reads.
func writes(actions ...[]k8stesting.Action) []string {
	var out []string
	for _, list := range actions {
		for _, action := range list {
			if verb := action.GetVerb(); verb != "get" && verb != "list" && verb != "watch" {
				out = append(out, verb+" "+action.GetResource().Resource)
			}
		}
	}
	return out
}

var (
	inCluster      = Endpoint{ServiceNamespace: "team-ops", ServiceName: "robot-operator-webhook", ServicePort: 443, Path: "/convert"}
	inClusterHosts = []string{"robot-operator-webhook.team-ops.svc", "robot-operator-webhook.team-ops.svc.cluster.local"}
)

func TestManagerFillsTheShippedSecretAndPointsTheCRD(t *testing.T) {
	c := newCluster(t, inCluster, shippedSecret())
	_, ctx := ktesting.NewTestContext(t)
	wait, err := c.manager.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := writes(c.kube.Actions(), c.crds.Actions()); strings.Join(got, ",") != "update secrets,patch customresourcedefinitions" {
		t.Errorf("writes %v, want the Secret updated and the CRD applied", got)
	}
	if wait != recheck {
		t.Errorf("next look in %v, want %v", wait, recheck)
	}
	secret := c.secret(t)
	verify(t, secret.Data, inClusterHosts, c.now)
	config := c.crd(t).Spec.Conversion.Webhook.ClientConfig
	if !bytes.Equal(config.CABundle, secret.Data[CABundleKey]) {
		t.Errorf("the CRD's caBundle is not the Secret's ca.crt")
	}
	if s := config.Service; s == nil || s.Namespace != "team-ops" || s.Name != "robot-operator-webhook" || *s.Path != "/convert" || *s.Port != 443 {
		t.Errorf("the CRD's conversion Service is %+v, want the operator's in team-ops", s)
	}
	// And the webhook serves with it.
	var source Source
	if err := source.Update(secret.Data); err != nil {
		t.Fatal(err)
	}
	served, err := source.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(config.CABundle)
	if _, err := served.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "robot-operator-webhook.team-ops.svc", CurrentTime: c.now}); err != nil {
		t.Errorf("the API server would not trust the served certificate: %v", err)
	}
}

// TestManagerConvergedWritesNothing: a second pass, and a pass a month later,
// write nothing; only the serving certificate's renewal time makes one.
func TestManagerConvergedWritesNothing(t *testing.T) {
	c := newCluster(t, inCluster, shippedSecret())
	c.sync(t)
	first := c.secret(t).Data
	for _, later := range []time.Duration{time.Minute, ServingValidity - ServingRenewBefore - time.Hour} {
		c.now = start.Add(later)
		_, ctx := ktesting.NewTestContext(t)
		if _, err := c.manager.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if got := writes(c.kube.Actions(), c.crds.Actions()); len(got) != 0 {
			t.Errorf("%v later: writes %v, want none", later, got)
		}
	}
	c.now = start.Add(ServingValidity - ServingRenewBefore + time.Hour)
	c.sync(t)
	renewed := c.secret(t).Data
	if bytes.Equal(renewed[CertKey], first[CertKey]) || !bytes.Equal(renewed[CAKeyKey], first[CAKeyKey]) {
		t.Errorf("at the renewal time: want a new serving certificate from the same CA")
	}
	if !bytes.Equal(c.crd(t).Spec.Conversion.Webhook.ClientConfig.CABundle, renewed[CABundleKey]) {
		t.Errorf("the CRD's caBundle does not follow the Secret")
	}
}

// TestManagerPutsBackTheCABundle: a re-applied CRD manifest that drops the
// caBundle, or another writer that points it elsewhere, is put back.
func TestManagerPutsBackTheCABundle(t *testing.T) {
	c := newCluster(t, inCluster, shippedSecret())
	c.sync(t)
	want := c.crd(t).Spec.Conversion.Webhook.ClientConfig.CABundle
	if _, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().Update(context.Background(), shippedCRD(), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A minute after the operator set it: at once (sooner, another
	// writer undoing the operator's apply may be a fight, and waits a
	// little: TestManagersThatDisagreeBackOff).
	c.now = c.now.Add(fightWindow)
	c.sync(t)
	if got := c.crd(t).Spec.Conversion.Webhook.ClientConfig.CABundle; !bytes.Equal(got, want) {
		t.Errorf("the caBundle was not put back")
	}
}

func TestManagerURLEndpoint(t *testing.T) {
	c := newCluster(t, Endpoint{URL: "https://127.0.0.1:9443/convert"}, shippedSecret())
	local := shippedCRD()
	local.Spec.Conversion.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9443/convert")}
	if _, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().Update(context.Background(), local, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.sync(t)
	verify(t, c.secret(t).Data, []string{"127.0.0.1"}, c.now)
	config := c.crd(t).Spec.Conversion.Webhook.ClientConfig
	if config.URL == nil || *config.URL != "https://127.0.0.1:9443/convert" || config.Service != nil {
		t.Errorf("the CRD's client config is url %v, service %+v; want the URL alone", config.URL, config.Service)
	}
}

// TestManagerExternal: with cert-manager filling the Secret, the Manager
// writes no certificate, and copies the Secret's CA into the CRD.
func TestManagerExternal(t *testing.T) {
	filled := shippedSecret()
	filled.Data = mustCheck(t, nil, inClusterHosts, start).Data
	delete(filled.Data, CAKeyKey)
	c := newCluster(t, inCluster, filled)
	c.manager.External = true
	_, ctx := ktesting.NewTestContext(t)
	if _, err := c.manager.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := writes(c.kube.Actions(), c.crds.Actions()); strings.Join(got, ",") != "patch customresourcedefinitions" {
		t.Errorf("writes %v, want only the CRD applied", got)
	}
	if got := c.crd(t).Spec.Conversion.Webhook.ClientConfig.CABundle; !bytes.Equal(got, filled.Data[CABundleKey]) {
		t.Error("the CRD's caBundle is not the Secret's ca.crt")
	}

	empty := newCluster(t, inCluster, shippedSecret())
	empty.manager.External = true
	if _, err := empty.manager.Sync(ctx); err == nil || !strings.Contains(err.Error(), "cert-manager") {
		t.Errorf("an empty Secret with External: error %v, want one that says another writer fills it", err)
	}
	if got := writes(empty.kube.Actions()); len(got) != 0 {
		t.Errorf("writes %v to the Secret with External, want none", got)
	}
}

func TestManagerSaysWhatIsWrong(t *testing.T) {
	tests := []struct {
		name     string
		endpoint Endpoint
		secret   *corev1.Secret
		want     string
	}{
		{"a URL that is not https", Endpoint{URL: "http://127.0.0.1:9443/convert"}, shippedSecret(), "not an https:// URL"},
		{"a URL, and a CRD that names a Service", Endpoint{URL: "https://127.0.0.1:9443/convert"}, shippedSecret(), "install the CRD with that url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, tt.endpoint, tt.secret)
			_, ctx := ktesting.NewTestContext(t)
			if _, err := c.manager.Sync(ctx); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one that says %q", err, tt.want)
			}
		})
	}
}

func TestSourceKeepsWhatItHas(t *testing.T) {
	var source Source
	if _, err := source.GetCertificate(nil); err == nil {
		t.Fatal("a certificate before any Update")
	}
	if err := source.Update(shippedSecret().Data); err == nil || !strings.Contains(err.Error(), "no serving certificate yet") {
		t.Errorf("Update of the shipped, empty Secret: %v, want that there is no certificate yet", err)
	}
	good := mustCheck(t, nil, hosts, start).Data
	if err := source.Update(good); err != nil {
		t.Fatal(err)
	}
	before, _ := source.GetCertificate(nil)
	if err := source.Update(with(good, KeyKey, mustCheck(t, nil, hosts, start).Data[KeyKey])); err == nil {
		t.Error("a key of another certificate was taken")
	}
	if after, _ := source.GetCertificate(nil); after != before {
		t.Error("a failed Update replaced the certificate")
	}
}
