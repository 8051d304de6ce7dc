//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	operatorNamespace = "robot-operator"
	operatorAccount   = "system:serviceaccount:" + operatorNamespace + ":robot-operator"
	// backoffNamespacePrefix is the namespace prefix of the test that makes
	// the API server refuse the operator's writes on purpose.
	backoffNamespacePrefix = "e2e-failingrobotbacksoff-"
)

// installDeployManifests applies artifacts/deploy, through deployOverlay:
// the namespace, the CRD, the ServiceAccount and its RBAC, and the
// operator's Deployment, whose pods kwok reports as running.
func installDeployManifests(ctx context.Context) error {
	dir, err := deployOverlay()
	if err != nil {
		return err
	}
	if _, stderr, err := kubectl(ctx, "", "apply", "-k", dir); err != nil {
		return fmt.Errorf("kubectl apply -k %s: %v\n%s", dir, err, stderr)
	}
	return nil
}

// deployOverlay writes, and returns the directory of, a kustomization of
// artifacts/deploy whose CRD has its conversion at webhookURL, as installCRD
// installs it: applying the shipped manifests as they are would name the
// Service beside the URL, which the API server refuses.
func deployOverlay() (string, error) {
	dir := filepath.Join(env.root, "_output", fmt.Sprintf("e2e-deploy-%d", env.webhookPort))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../artifacts/deploy
patches:
- target:
    group: apiextensions.k8s.io
    kind: CustomResourceDefinition
    name: robots.robot.dev
  patch: |-
    - op: replace
      path: /spec/conversion/webhook/clientConfig
      value: {url: %q}
`, webhookURL())
	return dir, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644)
}

// writeServiceAccountKubeconfig writes a kubeconfig for the operator's
// ServiceAccount: the admin kubeconfig's server and CA, and a token from
// `kubectl create token`.
func writeServiceAccountKubeconfig(ctx context.Context, adminKubeconfig, path string) error {
	token, stderr, err := kubectl(ctx, "", "create", "token", "robot-operator", "-n", operatorNamespace, "--duration=2h")
	if err != nil {
		return fmt.Errorf("kubectl create token: %v\n%s", err, stderr)
	}
	config, err := clientcmd.LoadFromFile(adminKubeconfig)
	if err != nil {
		return err
	}
	for name := range config.AuthInfos {
		config.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: strings.TrimSpace(token)}
	}
	return clientcmd.WriteToFile(*config, path)
}

// checkNeverForbidden fails when the API server refused the operator
// anything since start, but for the writes the backoff test has a policy
// refuse on purpose: the shipped RBAC must allow all the operator does.
func checkNeverForbidden(start time.Time) error {
	events, err := env.audit.find(auditQuery{UserAgentPrefix: "robot-operator/", After: start, Code: 403})
	if err != nil {
		return err
	}
	var refused []string
	for _, e := range events {
		switch {
		case e.ObjectRef != nil && strings.HasPrefix(e.ObjectRef.Namespace, backoffNamespacePrefix):
			continue
		case e.refusedByAdmission():
			// Allowed, then refused by admission: the dry run of a
			// changed pod template that the cluster refuses, which is
			// what the check is for.
			continue
		case e.hasCause(string(corev1.NamespaceTerminatingCause)):
			// A test's namespace going away while a Robot in it still
			// syncs: not a matter of permissions.
			continue
		}
		refused = append(refused, e.String())
	}
	if len(refused) > 0 {
		return fmt.Errorf("the API server refused the operator's ServiceAccount %d times: its RBAC is not enough:\n%s", len(refused), strings.Join(refused, "\n"))
	}
	fmt.Fprintf(os.Stderr, "e2e: the operator ran as %s and was never refused (403) outside the backoff test\n", operatorAccount)
	return nil
}

// TestDeployManifests: the shipped manifests apply with no warning, also as
// a server-side dry run, and again without changing anything; the
// operator's namespace enforces, audits and warns Pod Security
// "restricted", and the operator's pods are admitted under it and run.
func TestDeployManifests(t *testing.T) {
	parallel(t)
	dir, err := deployOverlay()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"apply", "-k", dir, "--dry-run=server"},
		{"apply", "-k", dir},
	} {
		_, stderr, err := kubectl(t.Context(), "", args...)
		if err != nil || strings.TrimSpace(stderr) != "" {
			t.Errorf("kubectl %s: error %v, stderr %q; want success and no warning", strings.Join(args, " "), err, stderr)
		}
	}

	// Applying again changes nothing: every object keeps its
	// resourceVersion. The tests start together, moments after TestMain
	// applied the manifests: until the operator's Deployment has rolled
	// out, its status moves its resourceVersion.
	waitForDeployment(t, operatorNamespace, "robot-operator", "has rolled out", deploymentSettled)
	versions := func() string {
		return mustKubectl(t, "get", "-k", dir, "-o", `jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name} {.metadata.resourceVersion}{"\n"}{end}`)
	}
	before := versions()
	if _, stderr, err := kubectl(t.Context(), "", "apply", "-k", dir); err != nil || strings.TrimSpace(stderr) != "" {
		t.Errorf("kubectl apply -k %s again: error %v, stderr %q", dir, err, stderr)
	}
	if after := versions(); after != before {
		t.Errorf("applying again changed objects (resourceVersions before and after):\n%s\n%s", before, after)
	} else {
		t.Logf("applying again kept the resourceVersions of %d objects", strings.Count(after, "\n"))
	}

	ns, err := env.kube.CoreV1().Namespaces().Get(t.Context(), operatorNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"enforce", "audit", "warn"} {
		if got := ns.Labels["pod-security.kubernetes.io/"+mode]; got != "restricted" {
			t.Errorf("namespace %s: Pod Security %s is %q, want restricted", operatorNamespace, mode, got)
		}
	}
	// Pod Security admission is on, or "no warning" above proves nothing:
	// a pod that breaks "restricted" is refused, and a Deployment whose
	// pods would is warned about.
	_, stderr, err := kubectl(t.Context(), "", "run", "psa-probe", "-n", operatorNamespace, "--image=registry.k8s.io/pause:3.10", "--restart=Never", "--dry-run=server")
	if err == nil || !strings.Contains(stderr, `violates PodSecurity "restricted`) {
		t.Errorf("a pod that breaks Pod Security restricted in %s: error %v, stderr %q; want it refused by Pod Security", operatorNamespace, err, stderr)
	}
	_, stderr, err = kubectl(t.Context(), "", "create", "deployment", "psa-probe", "-n", operatorNamespace, "--image=registry.k8s.io/pause:3.10", "--dry-run=server")
	if err != nil || !strings.Contains(stderr, `Warning: would violate PodSecurity "restricted`) {
		t.Errorf("a Deployment whose pods break Pod Security restricted in %s: error %v, stderr %q; want a warning", operatorNamespace, err, stderr)
	}
	mustKubectl(t, "-n", operatorNamespace, "rollout", "status", "deployment/robot-operator", "--timeout=90s")
	pods, err := env.kube.CoreV1().Pods(operatorNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=robot-operator"})
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for i := range pods.Items {
		if podRunningAndReady(&pods.Items[i]) {
			running++
		}
	}
	if running != 2 {
		t.Errorf("%d operator pods running and ready, want 2:\n%s", running, summarizePods(pods.Items))
	}
	events, err := env.kube.CoreV1().Events(operatorNamespace).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) > 0 {
		t.Errorf("pods were refused: %s: %s", events.Items[0].InvolvedObject.Name, events.Items[0].Message)
	}
}

// TestServiceAccountMayDoNoMore: what the API server says the operator's
// ServiceAccount may do, beyond what any authenticated user may, matches the
// committed list, so a wider grant shows up in review.
func TestServiceAccountMayDoNoMore(t *testing.T) {
	parallel(t)
	golden := filepath.Join(env.root, "artifacts", "deploy", "testdata", "can-i.golden")
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	// What the operator's bindings grant: less what a ServiceAccount with
	// none may do, which changes from one Kubernetes version to the next.
	squeeze := func(list string) []string {
		var lines []string
		for _, line := range strings.Split(strings.TrimRight(list, "\n"), "\n") {
			lines = append(lines, strings.Join(strings.Fields(line), " "))
		}
		return lines
	}
	all := squeeze(mustKubectl(t, "auth", "can-i", "--list", "--as="+operatorAccount, "-n", operatorNamespace))
	baseline := squeeze(mustKubectl(t, "auth", "can-i", "--list", "--as=system:serviceaccount:"+operatorNamespace+":no-bindings", "-n", operatorNamespace))
	lines := all[:1]
	for _, line := range all[1:] {
		if !slices.Contains(baseline[1:], line) {
			lines = append(lines, line)
		}
	}
	got := strings.Join(lines, "\n") + "\n"
	if got != string(want) {
		t.Errorf("kubectl auth can-i --list for %s differs from %s (run make rbac-golden if the change is meant):\n--- want\n%s\n--- got\n%s",
			operatorAccount, golden, want, got)
	}
}

// TestRobotWritesStayInItsNamespace: a Robot in one namespace never makes the
// operator write in another.
func TestRobotWritesStayInItsNamespace(t *testing.T) {
	parallel(t)
	// A name no other test gives anything, so that what the operator writes
	// for this Robot can be told from what it writes for the Robots of the
	// tests running beside this one, in their own namespaces.
	const robot = "writes-stay-local"
	start := time.Now()
	ns := newNamespace(t)
	other := newNamespace(t)
	createRobot(t, newRobot(ns, robot, 1))
	waitForRobotReady(t, ns, robot)
	if _, err := env.kube.CoreV1().ConfigMaps(other).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bystander"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	writes, err := env.audit.find(auditQuery{UserAgentPrefix: "robot-operator/", After: start})
	if err != nil {
		t.Fatal(err)
	}
	inNamespace := 0
	for _, w := range writes {
		ref := w.ObjectRef
		switch {
		case ref != nil && ref.Resource == "customresourcedefinitions" && ref.Name == "robots.robot.dev":
			// The conversion webhook's caBundle, which the leader keeps
			// on the CRD: not a write for any Robot.
		case ref == nil || ref.Namespace == "":
			t.Errorf("the operator wrote outside any namespace: %s", w.String())
		case ref.Namespace == ns:
			inNamespace++
		// Its Deployment and Service are named after the Robot, its
		// events after the Robot and a suffix.
		case ref.Namespace == other || ref.Name == robot || strings.HasPrefix(ref.Name, robot+"."):
			t.Errorf("the operator wrote outside namespace %s: %s", ns, w.String())
		}
	}
	if inNamespace == 0 {
		t.Fatalf("no write by the operator in namespace %s in the audit log: the check above proves nothing", ns)
	}
	t.Logf("the operator wrote %d times in %s, never about Robot %s elsewhere", inNamespace, ns, robot)
}
