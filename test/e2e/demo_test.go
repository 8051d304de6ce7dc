//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestDemoInstallsTheCRDAgain: the README's first command, make demo, can be
// run again on the cluster it brought up. Its step that installs the Robot CRD
// and points the conversion at the operator on this host succeeds a second
// time, and leaves the conversion at that operator alone, with no Service.
func TestDemoInstallsTheCRDAgain(t *testing.T) {
	exclusive(t, "it installs the Robot CRD as make demo does")
	ns := newNamespace(t)
	t.Cleanup(func() {
		if err := installCRD(context.Background()); err != nil {
			t.Errorf("putting the CRD back: %v", err)
		}
	})
	for run := 1; run <= 2; run++ {
		cmd := exec.CommandContext(t.Context(), filepath.Join(env.root, "hack", "demo.sh"), "crd")
		cmd.Env = append(os.Environ(), "KUBECONFIG_OUT="+env.kubeconfig, "WEBHOOK_PORT="+strconv.Itoa(env.webhookPort))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %d of hack/demo.sh crd: %v\n%s", run, err, out)
		}
	}
	crd, err := crdClient(t).ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "robots.robot.dev", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	config := crd.Spec.Conversion.Webhook.ClientConfig
	if config.URL == nil || *config.URL != webhookURL() || config.Service != nil {
		t.Errorf("the CRD's conversion after two runs: url %q, service %v; want url %s and no service", ptr.Deref(config.URL, ""), config.Service, webhookURL())
	}
	waitForConversion(t, ns)
}
