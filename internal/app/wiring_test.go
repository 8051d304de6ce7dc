package app

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	robotfake "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/fake"
)

// TestOneCRDClient: the webhook's upkeep and the storage migration read and
// write the CRD through the one client newClients builds.
func TestOneCRDClient(t *testing.T) {
	crds := apiextensionsfake.NewClientset()
	c := &clients{kube: kubefake.NewClientset(), robots: robotfake.NewClientset(), crds: crds}
	registry := prometheus.NewRegistry()
	webhook, err := newWebhook(WebhookOptions{Addr: ":9443", Namespace: "robots", Secret: "cert", Service: "webhook", Certs: WebhookCertsSelf}, c, registry)
	if err != nil {
		t.Fatal(err)
	}
	migrator, err := newMigrator(Options{Namespace: metav1.NamespaceAll}, c, record.NewFakeRecorder(1), registry)
	if err != nil {
		t.Fatal(err)
	}
	if webhook.upkeep == nil || migrator == nil {
		t.Fatalf("upkeep %v, migrator %v: want both for a webhook that listens and an operator of every namespace", webhook.upkeep, migrator)
	}
	_, _ = webhook.upkeep.Manager.CRDs.Get(t.Context(), robotsCRD, metav1.GetOptions{})
	_, _ = migrator.CRDs.Get(t.Context(), robotsCRD, metav1.GetOptions{})
	if got := len(crds.Actions()); got != 2 {
		t.Errorf("the CRD client saw %d requests, want the webhook's and the migration's: %v", got, crds.Actions())
	}
}

// TestWiringOff: no upkeep without a webhook address, no migration for an
// operator of one namespace, which cannot see every Robot.
func TestWiringOff(t *testing.T) {
	c := &clients{kube: kubefake.NewClientset(), robots: robotfake.NewClientset(), crds: apiextensionsfake.NewClientset()}
	for _, addr := range []string{"", "0"} {
		webhook, err := newWebhook(WebhookOptions{Addr: addr}, c, prometheus.NewRegistry())
		if err != nil || webhook.upkeep != nil || webhook.handler != nil || webhook.ready != nil {
			t.Errorf("-webhook-bind-address=%q: %+v, %v; want no webhook", addr, webhook, err)
		}
	}
	migrator, err := newMigrator(Options{Namespace: "robots"}, c, record.NewFakeRecorder(1), prometheus.NewRegistry())
	if err != nil || migrator != nil {
		t.Errorf("-namespace=robots: migrator %v, %v; want none", migrator, err)
	}
}
