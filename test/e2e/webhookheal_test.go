//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// webhookSecret is the Secret that holds the webhook's certificates.
const webhookSecret = "robot-operator-webhook-cert"

// healTimeout is how soon the operator must put back what another writer
// took from the webhook: seconds, not the hourly recheck.
const healTimeout = 20 * time.Second

// TestWebhookHeals: a CRD replaced without its caBundle (kubectl replace,
// a GitOps tool that replaces) and a deleted webhook Secret are both put
// right within seconds, and conversions answer again.
func TestWebhookHeals(t *testing.T) {
	exclusive(t, "replaces the Robot CRD and deletes the webhook's Secret")
	ctx := t.Context()
	t.Cleanup(func() {
		// Whatever happened, the next tests get a Secret and a CRD.
		ctx := context.Background()
		_, err := env.kube.CoreV1().Secrets(operatorNamespace).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: webhookSecret},
			Type:       corev1.SecretTypeOpaque,
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("creating the webhook's Secret again: %v", err)
		}
		if err := installCRD(ctx); err != nil {
			t.Errorf("installing the CRD again: %v", err)
		}
	})
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "kept", 1))
	waitForConversion(t, ns)

	// The CRD's manifest, replaced as it is shipped: no caBundle.
	crd, err := localCRD()
	if err != nil {
		t.Fatal(err)
	}
	// kubectl replace reads the CRD's resourceVersion first: another
	// writer in between (the migration's storedVersions) makes it try again.
	var replaced time.Time
	eventually(t, healTimeout, "kubectl replace of the CRD", func(ctx context.Context) (bool, string, error) {
		replaced = time.Now()
		_, stderr, err := kubectl(ctx, crd, "replace", "-f", "-")
		return err == nil, stderr, nil
	})
	waitForHealed(t, ns, replaced, "the CRD was replaced without its caBundle")

	// The Secret deleted: it comes back, with certificates the CRD trusts.
	deleted := time.Now()
	if err := env.kube.CoreV1().Secrets(operatorNamespace).Delete(ctx, webhookSecret, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the webhook's Secret: %v", err)
	}
	eventually(t, healTimeout, "the webhook's Secret is back, with a certificate", func(ctx context.Context) (bool, string, error) {
		secret, err := env.kube.CoreV1().Secrets(operatorNamespace).Get(ctx, webhookSecret, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return len(secret.Data["tls.crt"]) > 0, fmt.Sprintf("keys %d", len(secret.Data)), nil
	})
	waitForHealed(t, ns, deleted, "the webhook's Secret was deleted")
}

// waitForHealed waits, for healTimeout from since, until the CRD holds a
// caBundle and Robots are listed as v1alpha1 through the webhook.
func waitForHealed(t *testing.T, ns string, since time.Time, what string) {
	t.Helper()
	eventually(t, healTimeout-time.Since(since), "conversions answer again after "+what, func(ctx context.Context) (bool, string, error) {
		out, _, err := kubectl(ctx, "", "get", "crd", "robots.robot.dev", "-o", "json")
		if err != nil {
			return false, err.Error(), nil
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := json.Unmarshal([]byte(out), &crd); err != nil {
			return false, "", err
		}
		if c := crd.Spec.Conversion; c == nil || c.Webhook == nil || c.Webhook.ClientConfig == nil || len(c.Webhook.ClientConfig.CABundle) == 0 {
			return false, "the CRD has no caBundle", nil
		}
		if _, err := env.robots.RobotV1alpha1().Robots(ns).List(ctx, metav1.ListOptions{}); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
	t.Logf("healed %v after %s", time.Since(since).Round(100*time.Millisecond), what)
}

// TestReadinessWaitsForTheWebhookCertificate: a replica that serves the
// webhook but has no certificate to serve it with is not ready, though its
// caches have synced.
func TestReadinessWaitsForTheWebhookCertificate(t *testing.T) {
	exclusive(t, "pauses the shared operator and runs a replica of its own, which serves the webhook")
	pauseSharedOperator(t)
	// Another writer (-webhook-certs=external) is to fill the Secret, and
	// never does. The shared operator fills it again when it restarts.
	emptyWebhookSecret(t)
	args := append(slices.Clone(env.operator.args), "-webhook-certs=external")
	o := extraOperator(t, "no-certificate", args)
	off := launch(t, o)
	mustLog(t, o, off, `"Started workers"`, operatorStartTimeout)
	health := "http://" + mustServingAddress(t, o, off, "health probes")
	// Its caches have synced (workers run only then); give the probe a
	// moment and ask several times.
	for range 5 {
		code, body, err := httpGet(health + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		if code != 503 || !strings.Contains(body, "certificate") {
			t.Fatalf("/readyz with no serving certificate: %d %q, want 503 saying there is no certificate", code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
