//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
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

// TestDemoAppliesTheExamplesAgain: make demo's steps that apply
// artifacts/examples/, make the Gateway site names once the Robot says it
// does not exist, accept site's route as a Gateway controller would and
// replace hello through v1alpha1 succeed a second time on the Robots the
// first made: site is Ready, and hello keeps both its ports.
func TestDemoAppliesTheExamplesAgain(t *testing.T) {
	exclusive(t, "it installs the Gateway API's CRDs, as make demo does")
	t.Cleanup(func() {
		removeRoutesCRD(t)
		removeGatewaysCRD(t)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 90*time.Second)
		defer cancel()
		if _, stderr, err := kubectl(ctx, "", "delete", "crd", "gatewayclasses.gateway.networking.k8s.io", "--ignore-not-found", "--wait=true", "--timeout=60s"); err != nil {
			t.Errorf("deleting the GatewayClass CRD: %v\n%s", err, stderr)
		}
	})
	for _, crd := range []string{"gatewayclasses", "gateways", "httproutes"} {
		mustKubectl(t, "apply", "--server-side", "-f", strings.Replace(routesCRDFile(t), "httproutes.yaml", crd+".yaml", 1))
	}
	waitForEstablished(t, gatewaysCRD)
	ns := newNamespace(t)
	waitForConversion(t, ns)
	// The examples name no namespace: the kubeconfig's context gives ns.
	config, err := clientcmd.LoadFromFile(env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	config.Contexts[config.CurrentContext].Namespace = ns
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*config, kubeconfig); err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		cmd := exec.CommandContext(t.Context(), filepath.Join(env.root, "hack", "demo.sh"), "examples")
		cmd.Env = append(os.Environ(), "KUBECONFIG_OUT="+kubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run %d of hack/demo.sh examples: %v\n%s", run, err, out)
		}
		// The first run meets site without its Gateway, and makes it.
		if made := strings.Contains(string(out), "Making the Gateway public"); made != (run == 1) {
			t.Errorf("run %d of hack/demo.sh examples made the Gateway: %v, want %v\n%s", run, made, run == 1, out)
		}
	}
	if ready := readyCondition(getRobot(t, ns, "site")); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("site after two runs: %v, want Ready", ready)
	}
	hello := getRobot(t, ns, "hello")
	if len(hello.Spec.Ports) != 2 {
		t.Errorf("hello's ports after two runs: %v, want http and echo", hello.Spec.Ports)
	}
}
