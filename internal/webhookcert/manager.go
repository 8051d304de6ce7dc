package webhookcert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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

// recheck is how often a replica looks at the Secret and the CRD when
// nothing has changed them. Changes come from the watches of both, within
// seconds; this is the net under them.
const recheck = time.Hour

// maxBackoff bounds the wait after a failed pass: the webhook stays down
// while the CRD lacks its caBundle, so a failure (an API server that was
// away, RBAC being fixed) is retried within minutes, not an hour.
const maxBackoff = 5 * time.Minute

// lostRaceWait is the wait after another writer changed the Secret or the
// CRD between a pass's read and its write.
const lostRaceWait = 100 * time.Millisecond

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
// certificates to their writer and keeps only the CRD.
//
// Every replica runs it, leader or not: the webhook must answer before any
// replica of a new release can lead (an upgrade beside the previous
// release, whose leader knows nothing of the webhook), and a replica must
// not depend on its own conversions to become useful. Replicas do not take
// turns. They agree instead, through optimistic concurrency:
//   - the Secret is written with the resourceVersion it was read at (an
//     Update, or a Create when it is missing), so that of two replicas
//     renewing at once one wins and the other, refused, reads the winner's;
//   - the CRD's caBundle is derived from the Secret as stored, read just
//     before, and applied with the resourceVersion the CRD was read at, so
//     that a replica that read an older Secret cannot put back an older
//     caBundle over a newer one: its apply is refused, and it reads again.
//
// The leader's write fence (internal/leader) does not guard these writes:
// they are not the leader's, and the preconditions above are what keeps a
// replica with stale data, a deposed leader included, from writing it.
type Manager struct {
	Secrets    corev1client.SecretInterface // in the Secret's namespace
	SecretName string
	CRDs       apiextensionsclient.CustomResourceDefinitionInterface
	CRDName    string
	Endpoint   Endpoint
	Now        func() time.Time
	// External: another writer (cert-manager) fills the Secret; the
	// Manager only copies its CA (ca.crt) into the CRD, keeping the
	// previous one there until it expires.
	External bool

	// lastApply is when this Manager last applied the CRD, applied the
	// conversion's client configuration that apply left, and fightDelay
	// how long it waits before applying again while another writer keeps
	// undoing its applies.
	lastApply  time.Time
	applied    string
	fightDelay time.Duration
}

// fightWindow is how soon after an apply another one counts as a fight:
// another writer (another installation pointing the CRD elsewhere) undoing
// it. The first apply after a quiet window is made at once; in a fight, the
// wait between applies doubles from firstFightDelay to maxBackoff.
const (
	fightWindow     = time.Minute
	firstFightDelay = 5 * time.Second
)

// errLostRace is what a pass returns when another writer changed the Secret
// or the CRD between its read and its write: the next pass, soon, reads
// again.
var errLostRace = errors.New("another replica or writer changed it first")

// Sync makes one pass: it renews what Check says to renew, writing the
// Secret (or making it again when it is missing), and applies the
// conversion's client configuration to the CRD when it differs. It returns
// when to look again.
func (m *Manager) Sync(ctx context.Context) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	now := m.Now()
	secret, err := m.Secrets.Get(ctx, m.SecretName, metav1.GetOptions{})
	missing := apierrors.IsNotFound(err)
	if err != nil && !missing {
		return 0, fmt.Errorf("reading the webhook's Secret %s: %w", m.SecretName, err)
	}
	if missing && m.External {
		return 0, fmt.Errorf("the webhook's Secret %s is missing: it is made by another writer (-webhook-certs=external), such as cert-manager", m.SecretName)
	}
	crd, err := m.CRDs.Get(ctx, m.CRDName, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("reading CRD %s: %w", m.CRDName, err)
	}
	trusted := caBundleOf(crd)
	if m.External {
		if len(secret.Data[CABundleKey]) == 0 {
			return 0, fmt.Errorf("the webhook's Secret %s has no %s yet: it is filled by another writer (-webhook-certs=external), such as cert-manager", m.SecretName, CABundleKey)
		}
		bundle := MergeBundle(secret.Data[CABundleKey], trusted, now)
		if len(bundle) == 0 {
			return 0, fmt.Errorf("the %s of the webhook's Secret %s holds no certificate that parses and has not expired", CABundleKey, m.SecretName)
		}
		if wait, err := m.applyConversion(ctx, crd, bundle); err != nil || wait > 0 {
			return wait, err
		}
		return recheck, nil
	}
	hosts, err := m.Endpoint.Hosts()
	if err != nil {
		return 0, err
	}
	var data map[string][]byte
	if !missing {
		data = secret.Data
	}
	plan, err := Check(data, hosts, now, trusted)
	if err != nil {
		return 0, err
	}
	switch {
	case missing:
		// Deleted: made again, with a new CA. Replicas serve what they
		// have until it comes.
		created, err := m.Secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: m.SecretName},
			Type:       corev1.SecretTypeOpaque,
			Data:       plan.Data,
		}, metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			if apierrors.IsAlreadyExists(err) {
				return 0, fmt.Errorf("making the webhook's Secret %s again: %w", m.SecretName, errLostRace)
			}
			return 0, fmt.Errorf("making the webhook's Secret %s again: %w", m.SecretName, err)
		}
		logger.Info("Made the webhook's Secret again", "secret", klog.KRef(created.Namespace, m.SecretName), "notAfter", plan.NotAfter)
		data = plan.Data
	case plan.Data != nil:
		updated := secret.DeepCopy()
		updated.Data = plan.Data
		if _, err := m.Secrets.Update(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			if apierrors.IsConflict(err) {
				return 0, fmt.Errorf("writing the webhook's renewed certificates to Secret %s: %w", m.SecretName, errLostRace)
			}
			return 0, fmt.Errorf("writing the webhook's renewed certificates to Secret %s (%s): %w", m.SecretName, plan.Reason, err)
		}
		logger.Info("Renewed the webhook's certificates", "secret", klog.KRef(secret.Namespace, m.SecretName), "reason", plan.Reason, "notAfter", plan.NotAfter)
		data = plan.Data
	}
	if wait, err := m.applyConversion(ctx, crd, data[CABundleKey]); err != nil || wait > 0 {
		return wait, err
	}
	wait := min(recheck, max(time.Minute, plan.NotAfter.Add(-ServingRenewBefore).Sub(now)))
	if !plan.SwitchAt.IsZero() {
		wait = min(wait, max(time.Second, plan.SwitchAt.Sub(now)))
	}
	return wait, nil
}

// caBundleOf returns the caBundle of crd's conversion, nil when none.
func caBundleOf(crd *apiextensionsv1.CustomResourceDefinition) []byte {
	if c := crd.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil {
		return c.Webhook.ClientConfig.CABundle
	}
	return nil
}

// applyConversion points the CRD's conversion at the webhook, with caBundle,
// unless it already does. The apply is conditional on the resourceVersion
// crd was read at. While another writer keeps undoing its applies, it
// applies only after a growing delay, and returns how long is left.
func (m *Manager) applyConversion(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, caBundle []byte) (time.Duration, error) {
	want := m.clientConfig(caBundle)
	if c := crd.Spec.Conversion; c != nil && c.Strategy == "Webhook" && c.Webhook != nil && c.Webhook.ClientConfig != nil {
		current := c.Webhook.ClientConfig
		// An apply adds to what other writers own and cannot take away a
		// Service the manifests name: the CRD must be installed for the
		// way the operator is reached.
		if want.URL != nil && current.Service != nil {
			return 0, fmt.Errorf("CRD %s's conversion webhook names Service %s/%s, but the operator is reached at %s (-webhook-url): install the CRD with that url in spec.conversion.webhook.clientConfig", m.CRDName, current.Service.Namespace, current.Service.Name, *want.URL)
		}
		if want.Service != nil && current.URL != nil {
			return 0, fmt.Errorf("CRD %s's conversion webhook names URL %s, but the operator is reached through Service %s/%s: install the CRD with that Service in spec.conversion.webhook.clientConfig", m.CRDName, *current.URL, *want.Service.Namespace, *want.Service.Name)
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
			return 0, nil
		}
	}
	now := m.Now()
	if wait := m.fightWait(now, clientConfigOf(crd)); wait > 0 {
		klog.FromContext(ctx).Info("The CRD's conversion keeps changing after the operator set it: is another installation pointing it elsewhere? Waiting before setting it again", "crd", m.CRDName, "in", wait)
		return wait, nil
	}
	apply := apiextensionsv1apply.CustomResourceDefinition(m.CRDName).
		WithResourceVersion(crd.ResourceVersion).
		WithSpec(apiextensionsv1apply.CustomResourceDefinitionSpec().
			WithConversion(apiextensionsv1apply.CustomResourceConversion().
				WithStrategy("Webhook").
				WithWebhook(apiextensionsv1apply.WebhookConversion().
					WithClientConfig(want).
					WithConversionReviewVersions("v1"))))
	// Force: the CRD's manifest names a default Service, which the
	// operator, knowing where it runs, overrides.
	applied, err := m.CRDs.Apply(ctx, apply, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		if apierrors.IsConflict(err) {
			return 0, fmt.Errorf("pointing CRD %s's conversion at the webhook: %w", m.CRDName, errLostRace)
		}
		return 0, fmt.Errorf("pointing CRD %s's conversion at the webhook: %w", m.CRDName, err)
	}
	m.lastApply, m.applied = now, clientConfigOf(applied)
	klog.FromContext(ctx).Info("Pointed the CRD's conversion at the webhook", "crd", m.CRDName, "resourceVersion", crd.ResourceVersion)
	return 0, nil
}

// clientConfigOf returns crd's conversion client configuration as a string,
// to compare.
func clientConfigOf(crd *apiextensionsv1.CustomResourceDefinition) string {
	if c := crd.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil {
		return c.Webhook.ClientConfig.String()
	}
	return ""
}

// fightWait returns how long to wait before applying the CRD, whose
// conversion client configuration is current, at now. It is 0 when the
// CRD holds what this Manager's last apply left (what changed is the
// Secret) or after a quiet fightWindow. Otherwise another writer undid the
// last apply soon after it, and it is what is left of a delay that doubles
// with each apply made in such a fight.
func (m *Manager) fightWait(now time.Time, current string) time.Duration {
	if m.lastApply.IsZero() || current == m.applied || now.Sub(m.lastApply) >= fightWindow+m.fightDelay {
		m.fightDelay = 0
		return 0
	}
	if m.fightDelay == 0 {
		m.fightDelay = firstFightDelay
	}
	if wait := m.lastApply.Add(m.fightDelay).Sub(now); wait > 0 {
		return wait
	}
	// This apply is made; the next one in the fight waits longer.
	m.fightDelay = min(2*m.fightDelay, maxBackoff)
	return 0
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

// Run syncs until ctx ends: now, when kick says the Secret or the CRD
// changed, and when Sync says to look again. After a lost race it looks
// again at once; after another failure, with backoff from a second to
// maxBackoff.
func (m *Manager) Run(ctx context.Context, kick <-chan struct{}) {
	logger := klog.FromContext(ctx)
	backoff := time.Second
	for {
		wait, err := m.Sync(ctx)
		switch {
		case errors.Is(err, errLostRace):
			logger.V(2).Info("Keeping the webhook's certificates: looking again", "reason", err.Error())
			wait = lostRaceWait
		case err != nil:
			logger.Error(err, "Keeping the webhook's certificates failed; retrying", "in", backoff)
			wait = backoff
			backoff = min(2*backoff, maxBackoff)
		default:
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
