//go:build chart && install

package chart

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/robot-operator/robot-operator/test/internal/manifests"
)

// TestHelmInstallUpgradeUninstall installs the chart on a local cluster,
// runs the operator under the chart's ServiceAccount and RBAC, upgrades the
// release with other values, and uninstalls it: the upgrade rolls the
// operator and touches no Robot and no Deployment of a Robot; with
// watchNamespace the operator, run with -namespace, makes a Robot of that
// namespace Ready under the Role alone, never refused; and the
// uninstall leaves the CRD, the Robots and their Deployments, as Helm does
// with crds/. kwok's nodes run no containers, so the operator runs as a
// process beside the cluster, with a token of the chart's ServiceAccount.
//
// Run by make chart-e2e, which sets $KUBECONFIG (the cluster's admin),
// $AUDIT_LOG (its API server's audit log) and $OPERATOR_BIN.
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	helm, kubectl, bin, auditLog := manifests.Tool(t, "HELM", "chart-test"), manifests.Tool(t, "KUBECTL", "chart-test"), manifests.Tool(t, "OPERATOR_BIN", "chart-test"), manifests.Tool(t, "AUDIT_LOG", "chart-test")
	kubeconfig := manifests.Tool(t, "KUBECONFIG", "chart-test")
	manifests.Run(t, helm, "uninstall", "robot-operator", "-n", namespace, "--ignore-not-found", "--wait")
	manifests.Run(t, helm, "install", "robot-operator", chart, "-n", namespace, "--create-namespace", "--wait", "--timeout", "2m")
	manifests.Run(t, kubectl, "get", "crd/robots.robot.dev", "clusterrole/robot-operator", "clusterrole/robot-operator-metrics-reader")
	manifests.Run(t, kubectl, "-n", namespace, "get", "serviceaccount/robot-operator", "role/robot-operator-leader-election", "deployment/robot-operator")
	manifests.Run(t, kubectl, "-n", namespace, "rollout", "status", "deployment/robot-operator", "--timeout=2m")

	// The operator, as the chart's ServiceAccount with the chart's RBAC
	// and Lease.
	token := strings.TrimSpace(string(manifests.Run(t, kubectl, "create", "token", "robot-operator", "-n", namespace, "--duration=1h")))
	config, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name := range config.AuthInfos {
		config.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	}
	saKubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*config, saKubeconfig); err != nil {
		t.Fatal(err)
	}
	stop := startOperator(t, bin, saKubeconfig, "chart-e2e-operator.log")
	defer stop()

	robots := fmt.Sprintf("chart-e2e-%d", time.Now().Unix())
	manifests.Run(t, kubectl, "create", "namespace", robots)
	defer exec.Command(kubectl, "delete", "namespace", robots, "--wait=false").Run()
	var manifest strings.Builder
	for i := range 3 {
		fmt.Fprintf(&manifest, "---\napiVersion: robot.dev/v1beta1\nkind: Robot\nmetadata:\n  name: robot-%d\n  namespace: %s\nspec:\n  image: registry.k8s.io/e2e-test-images/agnhost:2.53\n  replicas: %d\n  ports: [{name: http, containerPort: 8080}]\n", i, robots, i+1)
	}
	apply := exec.Command(kubectl, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(manifest.String())
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	manifests.Run(t, kubectl, "-n", robots, "wait", "robots", "--all", "--for=condition=Ready", "--timeout=2m")

	// The webhook's Secret as the operator fills it (the key here is a
	// stand-in: the test checks where it goes, not what it is).
	const caKey = "Y2Eta2V5IHN0YW5kLWlu"
	manifests.Run(t, kubectl, "-n", namespace, "patch", "secret/robot-operator-webhook-cert", "--type=merge",
		"-p", `{"data":{"ca.key":"`+caKey+`","tls.key":"`+caKey+`"}}`)

	// The upgrade: another log format and memory limit roll the operator.
	upgradeStart := time.Now()
	manifests.Run(t, helm, "upgrade", "robot-operator", chart, "-n", namespace, "--reuse-values",
		"--set", "logFormat=text", "--set", "resources.limits.memory=300Mi", "--wait", "--timeout", "2m")
	// The release never holds the webhook's keys, and the upgrade leaves
	// them in the Secret.
	if manifest := string(manifests.Run(t, helm, "get", "manifest", "robot-operator", "-n", namespace)); strings.Contains(manifest, caKey) || strings.Contains(manifest, "ca.key") {
		t.Errorf("the release's manifest holds the webhook's CA key:\n%s", manifest)
	}
	if got := string(manifests.Run(t, kubectl, "-n", namespace, "get", "secret/robot-operator-webhook-cert", "-o", "jsonpath={.data.ca\\.key}")); got != caKey {
		t.Errorf("after the upgrade the webhook's Secret holds ca.key %q, want what the operator wrote, %q", got, caKey)
	}
	manifests.Run(t, kubectl, "-n", namespace, "rollout", "status", "deployment/robot-operator", "--timeout=2m")
	args := string(manifests.Run(t, kubectl, "-n", namespace, "get", "deployment/robot-operator", "-o", "jsonpath={.spec.template.spec.containers[0].args}"))
	if !strings.Contains(args, "-logging-format=text") {
		t.Errorf("after the upgrade the operator's args are %s, want -logging-format=text", args)
	}
	time.Sleep(5 * time.Second) // anything the upgrade set off
	upgradeEnd := time.Now()
	writes := auditWrites(t, auditLog, upgradeStart, upgradeEnd)
	var operatorRolled int
	for _, w := range writes {
		switch {
		case w.ObjectRef.Resource == "robots":
			t.Errorf("a write to a Robot during the upgrade: %s", w)
		case w.ObjectRef.Resource == "deployments" && w.ObjectRef.Namespace == robots:
			t.Errorf("a write to a Robot's Deployment during the upgrade: %s", w)
		case w.ObjectRef.Resource == "deployments" && w.ObjectRef.Namespace == namespace && w.ObjectRef.Name == "robot-operator":
			operatorRolled++
		}
	}
	if operatorRolled == 0 {
		t.Errorf("the audit log shows no write to the operator's Deployment between %s and %s: the upgrade was not seen, so the check above proves nothing", upgradeStart, upgradeEnd)
	}
	t.Logf("upgrade: %d writes in all, %d to the operator's Deployment, none to Robots or their Deployments", len(writes), operatorRolled)

	// Only the storage migration updates the CRD's status, and only an
	// operator that watches every namespace migrates.
	canUpdateCRDStatus := func() string {
		// The answer is on stdout; kubectl warns on stderr that the
		// resource has no namespace.
		out, _ := exec.Command(kubectl, "auth", "can-i", "update", "customresourcedefinitions.apiextensions.k8s.io/robots.robot.dev",
			"--subresource=status", "--as=system:serviceaccount:"+namespace+":robot-operator").Output()
		return strings.TrimSpace(string(out))
	}
	if got := canUpdateCRDStatus(); got != "yes" {
		t.Errorf("the operator watching every namespace may update the CRD's status: %q, want yes", got)
	}

	// Namespaced: watchNamespace replaces the ClusterRole with a Role in
	// the watched namespace, and the operator, run with -namespace, makes a
	// Robot there Ready with no request refused.
	stop()
	namespacedStart := time.Now()
	manifests.Run(t, helm, "upgrade", "robot-operator", chart, "-n", namespace, "--reuse-values", "--set", "watchNamespace="+robots, "--wait", "--timeout", "2m")
	if out, err := exec.Command(kubectl, "get", "clusterrole/robot-operator").CombinedOutput(); err == nil {
		t.Errorf("the ClusterRole robot-operator is still there with watchNamespace set: %s", out)
	}
	manifests.Run(t, kubectl, "-n", robots, "get", "role/robot-operator", "rolebinding/robot-operator")
	if got := canUpdateCRDStatus(); got != "no" {
		t.Errorf("the operator watching one namespace may update the CRD's status: %q, want no", got)
	}
	stop = startOperator(t, bin, saKubeconfig, "chart-e2e-operator-namespaced.log", "-namespace="+robots)
	defer stop()
	apply = exec.Command(kubectl, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(fmt.Sprintf("apiVersion: robot.dev/v1beta1\nkind: Robot\nmetadata:\n  name: watched\n  namespace: %s\nspec:\n  image: registry.k8s.io/e2e-test-images/agnhost:2.53\n  ports: [{name: http, containerPort: 8080}]\n", robots))
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	manifests.Run(t, kubectl, "-n", robots, "wait", "robot/watched", "--for=condition=Ready", "--timeout=2m")
	// The audit log records the ServiceAccount's refusals: provoke one, so
	// that finding none of the operator's proves something.
	if out, err := exec.Command(kubectl, "--kubeconfig", saKubeconfig, "-n", robots, "create", "configmap", "refused").CombinedOutput(); err == nil {
		t.Errorf("the operator's ServiceAccount may create a ConfigMap: %s", out)
	}
	time.Sleep(2 * time.Second)
	var provoked int
	for _, w := range auditWrites(t, auditLog, namespacedStart, time.Now()) {
		if w.User.Username != "system:serviceaccount:"+namespace+":robot-operator" || w.ResponseStatus.Code != 403 {
			continue
		}
		if w.ObjectRef.Resource == "configmaps" {
			provoked++
			continue
		}
		t.Errorf("the namespaced operator was refused: %s", w)
	}
	if provoked != 1 {
		t.Errorf("the audit log shows %d refusals of the ConfigMap create, want 1: the refusal check reads it wrong", provoked)
	}

	manifests.Run(t, helm, "uninstall", "robot-operator", "-n", namespace, "--wait")
	if out, err := exec.Command(kubectl, "-n", namespace, "get", "deployment/robot-operator").CombinedOutput(); err == nil {
		t.Errorf("the operator's Deployment is still there after helm uninstall: %s", out)
	}
	manifests.Run(t, kubectl, "get", "crd/robots.robot.dev")
	for i := range 3 {
		manifests.Run(t, kubectl, "-n", robots, "get", fmt.Sprintf("robot/robot-%d", i), fmt.Sprintf("deployment/robot-%d", i))
	}
}

// startOperator runs the operator with kubeconfig and args, logging into
// _output/logName, and returns what stops it (once).
func startOperator(t *testing.T, bin, kubeconfig, logName string, args ...string) func() {
	t.Helper()
	logFile, err := os.Create(filepath.Join(root, "_output", logName))
	if err != nil {
		t.Fatal(err)
	}
	operator := exec.Command(bin, append([]string{"-kubeconfig", kubeconfig, "-leader-elect", "-leader-elect-namespace", namespace,
		"-metrics-bind-address=0", "-health-probe-bind-address=0", "-webhook-bind-address=0"}, args...)...)
	operator.Stdout, operator.Stderr = logFile, logFile
	if err := operator.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			operator.Process.Signal(os.Interrupt)
			operator.Wait()
			logFile.Close()
		})
	}
}

// auditWrite is what the test reads of an audit event.
type auditWrite struct {
	Verb      string                    `json:"verb"`
	User      struct{ Username string } `json:"user"`
	ObjectRef *struct {
		Resource, Namespace, Name string
	} `json:"objectRef"`
	ResponseStatus struct{ Code int } `json:"responseStatus"`
	StageTimestamp time.Time          `json:"stageTimestamp"`
}

func (w auditWrite) String() string {
	return fmt.Sprintf("%s %s %s/%s by %s at %s", w.Verb, w.ObjectRef.Resource, w.ObjectRef.Namespace, w.ObjectRef.Name, w.User.Username, w.StageTimestamp.Format(time.RFC3339Nano))
}

// auditWrites are the writes the audit log at path records from start to
// end (the cluster's audit policy logs writes only).
func auditWrites(t *testing.T, path string, start, end time.Time) []auditWrite {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditWrite
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		var w auditWrite
		if err := json.Unmarshal(scanner.Bytes(), &w); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if w.ObjectRef != nil && !w.StageTimestamp.Before(start) && !w.StageTimestamp.After(end) {
			out = append(out, w)
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
