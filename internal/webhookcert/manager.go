package webhookcert

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"time"

	apiextensionsv1apply "k8s.io/apiextensions-apiserver/pkg/client/applyconfiguration/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"
)

// FieldManager is the field manager of the operator's writes to the CRD: the
// conversion's client configuration and its caBundle, nothing else.
const FieldManager = "robot-operator-webhook"

// recheck is how often the leader looks at the Secret and the CRD when
// nothing has changed them: often enough to put back a caBundle that
// another writer (a re-applied CRD) removed, and to renew on time.
const recheck = time.Hour

// Endpoint is where the API server reaches the webhook: a Service (in a
// cluster) or a URL (an operator run outside the cluster, on a local
// cluster).
type Endpoint struct {
	// ServiceNamespace and ServiceName name the Service in front of the
	// operator's replicas; ServicePort is its port.
	ServiceNamespace, ServiceName string
	ServicePort                   int32
	// Path is the webhook's path on the Service.
	Path string
	// URL, when set, is used instead of the Service.
	URL string
}

// Hosts returns the names the serving certificate must cover: the URL's
// host, or the Service's DNS names.
func (e Endpoint) Hosts() ([]string, error) {
	if e.URL != "" {
		u, err := url.Parse(e.URL)
		if err != nil || u.Scheme != "https" || u.Hostname() == "" {
			return nil, fmt.Errorf("the webhook's URL %q is not an https:// URL with a host", e.URL)
		}
		return []string{u.Hostname()}, nil
	}
	service := e.ServiceName + "." + e.ServiceNamespace + ".svc"
	return []string{service, service + ".cluster.local"}, nil
}

// Manager keeps the Secret's certificates good and the CRD's conversion
// pointed at the webhook with the Secret's CA. With External, it leaves the
// certificates to their writer and keeps only the CRD. Only the leader runs it, so
// two replicas never make two CAs.
type Manager struct {
	Secrets    corev1client.SecretInterface // in the Secret's namespace
	SecretName string
	CRDs       apiextensionsclient.CustomResourceDefinitionInterface
	CRDName    string
	Endpoint   Endpoint
	Now        func() time.Time
	// External: another writer (cert-manager) fills the Secret; the
	// Manager only copies its CA (ca.crt) into the CRD.
	External bool
}

// Sync makes one pass: it renews what Check says to renew, writing the
// Secret, and applies the conversion's client configuration to the CRD
// when it differs. It returns when to look again.
func (m *Manager) Sync(ctx context.Context) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	secret, err := m.Secrets.Get(ctx, m.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("the webhook's Secret %s is missing: the manifests ship it empty, and the operator may update it but not create it", m.SecretName)
	}
	if err != nil {
		return 0, fmt.Errorf("reading the webhook's Secret %s: %w", m.SecretName, err)
	}
	if m.External {
		if len(secret.Data[CABundleKey]) == 0 {
			return 0, fmt.Errorf("the webhook's Secret %s has no %s yet: it is filled by another writer (-webhook-certs=external), such as cert-manager", m.SecretName, CABundleKey)
		}
		return recheck, m.applyConversion(ctx, secret.Data[CABundleKey])
	}
	hosts, err := m.Endpoint.Hosts()
	if err != nil {
		return 0, err
	}
	plan, err := Check(secret.Data, hosts, m.Now())
	if err != nil {
		return 0, err
	}
	data := secret.Data
	if plan.Data != nil {
		updated := secret.DeepCopy()
		updated.Data = plan.Data
		if _, err := m.Secrets.Update(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return 0, fmt.Errorf("writing the webhook's renewed certificates to Secret %s (%s): %w", m.SecretName, plan.Reason, err)
		}
		logger.Info("Renewed the webhook's certificates", "secret", klog.KRef(secret.Namespace, m.SecretName), "reason", plan.Reason, "notAfter", plan.NotAfter)
		data = plan.Data
	}
	if err := m.applyConversion(ctx, data[CABundleKey]); err != nil {
		return 0, err
	}
	return min(recheck, max(time.Minute, plan.NotAfter.Add(-ServingRenewBefore).Sub(m.Now()))), nil
}

// applyConversion points the CRD's conversion at the webhook, with caBundle,
// unless it already does.
func (m *Manager) applyConversion(ctx context.Context, caBundle []byte) error {
	crd, err := m.CRDs.Get(ctx, m.CRDName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading CRD %s: %w", m.CRDName, err)
	}
	want := m.clientConfig(caBundle)
	if c := crd.Spec.Conversion; c != nil && c.Strategy == "Webhook" && c.Webhook != nil && c.Webhook.ClientConfig != nil {
		current := c.Webhook.ClientConfig
		// An apply adds to what other writers own and cannot take away a
		// Service the manifests name: the CRD must be installed for the
		// way the operator is reached.
		if want.URL != nil && current.Service != nil {
			return fmt.Errorf("CRD %s's conversion webhook names Service %s/%s, but the operator is reached at %s (-webhook-url): install the CRD with that url in spec.conversion.webhook.clientConfig", m.CRDName, current.Service.Namespace, current.Service.Name, *want.URL)
		}
		if want.Service != nil && current.URL != nil {
			return fmt.Errorf("CRD %s's conversion webhook names URL %s, but the operator is reached through Service %s/%s: install the CRD with that Service in spec.conversion.webhook.clientConfig", m.CRDName, *current.URL, *want.Service.Namespace, *want.Service.Name)
		}
		same := bytes.Equal(current.CABundle, caBundle)
		if want.URL != nil {
			same = same && current.URL != nil && *current.URL == *want.URL && current.Service == nil
		} else {
			s := current.Service
			same = same && current.URL == nil && s != nil && s.Namespace == *want.Service.Namespace && s.Name == *want.Service.Name &&
				s.Path != nil && *s.Path == *want.Service.Path && s.Port != nil && *s.Port == *want.Service.Port
		}
		if same {
			return nil
		}
	}
	apply := apiextensionsv1apply.CustomResourceDefinition(m.CRDName).
		WithSpec(apiextensionsv1apply.CustomResourceDefinitionSpec().
			WithConversion(apiextensionsv1apply.CustomResourceConversion().
				WithStrategy("Webhook").
				WithWebhook(apiextensionsv1apply.WebhookConversion().
					WithClientConfig(want).
					WithConversionReviewVersions("v1"))))
	// Force: the CRD's manifest names a default Service, which the
	// operator, knowing where it runs, overrides.
	if _, err := m.CRDs.Apply(ctx, apply, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("pointing CRD %s's conversion at the webhook: %w", m.CRDName, err)
	}
	klog.FromContext(ctx).Info("Pointed the CRD's conversion at the webhook", "crd", m.CRDName)
	return nil
}

// clientConfig is the conversion's client configuration for the endpoint.
func (m *Manager) clientConfig(caBundle []byte) *apiextensionsv1apply.WebhookClientConfigApplyConfiguration {
	config := apiextensionsv1apply.WebhookClientConfig().WithCABundle(caBundle...)
	if m.Endpoint.URL != "" {
		return config.WithURL(m.Endpoint.URL)
	}
	return config.WithService(apiextensionsv1apply.ServiceReference().
		WithNamespace(m.Endpoint.ServiceNamespace).
		WithName(m.Endpoint.ServiceName).
		WithPath(m.Endpoint.Path).
		WithPort(m.Endpoint.ServicePort))
}

// Run syncs until ctx ends: now, when kick says the Secret changed, and
// when Sync says to look again; after a failure, with backoff from a
// second to recheck.
func (m *Manager) Run(ctx context.Context, kick <-chan struct{}) {
	logger := klog.FromContext(ctx)
	backoff := time.Second
	for {
		wait, err := m.Sync(ctx)
		if err != nil {
			logger.Error(err, "Keeping the webhook's certificates failed; retrying", "in", backoff)
			wait = backoff
			backoff = min(2*backoff, recheck)
		} else {
			backoff = time.Second
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-kick:
			timer.Stop()
		case <-timer.C:
		}
	}
}
