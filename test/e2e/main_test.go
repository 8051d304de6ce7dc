//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
	"github.com/robot-operator/robot-operator/test/internal/localcluster"
)

// TestMain sets up what every test needs: the cluster's clients, the Robot
// CRD, and the operator, built from this tree (or $E2E_OPERATOR_BIN, built
// from it already) and running. It stops the operator when the tests are
// done. The cluster itself is started once, by `make e2e`, not here. Listing
// the tests (-test.list) needs no cluster.
func TestMain(m *testing.M) {
	flag.Parse()
	if list := flag.Lookup("test.list"); list != nil && list.Value.String() != "" {
		os.Exit(m.Run())
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if err := checkSelectedGroup(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	e, err := setUp()
	if e != nil && e.tempDir != "" {
		defer os.RemoveAll(e.tempDir)
	}
	if e != nil && e.operator != nil {
		defer func() {
			if err := e.operator.stop(); err != nil {
				fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
			}
		}()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	env = e
	started := time.Now()
	code := m.Run()
	if err := checkNeverForbidden(started); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: FAIL: %v\n", err)
		return 1
	}
	return code
}

// setUp returns the environment, with the operator running. When it fails
// after creating the temporary directory, it returns the environment too, so
// that the operator gets stopped and the directory removed.
func setUp() (*environment, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := &environment{kubeconfig: os.Getenv("KUBECONFIG")}
	if e.kubeconfig == "" {
		return nil, errors.New("KUBECONFIG is not set: point it at the kubeconfig of the cluster to test; " +
			"`make e2e` starts a local cluster for the tests and sets it (_output/e2e-kubeconfig)")
	}
	if strings.ContainsRune(e.kubeconfig, filepath.ListSeparator) {
		return nil, fmt.Errorf("KUBECONFIG=%s: give a single file; the operator's -kubeconfig takes one", e.kubeconfig)
	}
	var err error
	if e.kubeconfig, err = filepath.Abs(e.kubeconfig); err != nil {
		return nil, err
	}
	if e.root, err = repoRoot(); err != nil {
		return nil, err
	}
	if e.kubectlBin, err = findKubectl(e.root); err != nil {
		return nil, err
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading KUBECONFIG=%s: %w", e.kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	if e.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if e.robots, err = clientset.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if _, err := e.kube.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("cannot reach the cluster of KUBECONFIG=%s (is it up? hack/cluster.sh up): %w", e.kubeconfig, err)
	}
	env = e // the helpers below use it

	// The CRD's conversion goes to the shared operator, on this host.
	// Its port lies outside the kernel's ephemeral range: while a test has
	// the shared operator stopped, no process binding port 0 takes it.
	webhookAddr, err := localcluster.FreeAddr()
	if err != nil {
		return nil, err
	}
	_, port, err := net.SplitHostPort(webhookAddr)
	if err != nil {
		return nil, err
	}
	if e.webhookPort, err = strconv.Atoi(port); err != nil {
		return nil, err
	}
	if err := installCRD(ctx); err != nil {
		return nil, err
	}
	// The operator runs as its own ServiceAccount, with the RBAC of the
	// shipped manifests: every test below also proves that RBAC sufficient.
	if err := installDeployManifests(ctx); err != nil {
		return nil, err
	}
	webhookArgs := webhookFlags()
	e.audit = openAuditLog(e.kubeconfig)
	if err := checkNoOtherOperator(ctx); err != nil {
		return nil, err
	}
	if e.audit.err != nil {
		fmt.Fprintf(os.Stderr, "e2e: WARNING: the tests that count the operator's writes will fail: %v\n", e.audit.err)
	}

	if e.tempDir, err = os.MkdirTemp("", "robot-operator-e2e-"); err != nil {
		return nil, err
	}
	bin, err := operatorBinary(ctx, e)
	if err != nil {
		return e, err
	}

	// One log per cluster, so that runs against two clusters never share one.
	logPath := filepath.Join(e.root, "_output", "e2e-operator.log")
	if name := os.Getenv("CLUSTER_NAME"); name != "" && name != "robot-operator-e2e" {
		logPath = filepath.Join(e.root, "_output", "e2e-operator-"+name+".log")
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return e, err
	}
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		return e, err
	}
	operatorKubeconfig := filepath.Join(e.tempDir, "operator.kubeconfig")
	if err := writeServiceAccountKubeconfig(ctx, e.kubeconfig, operatorKubeconfig); err != nil {
		return e, err
	}
	args, err := operatorArgs(bin, operatorKubeconfig)
	if err != nil {
		return e, err
	}
	args = append(args, webhookArgs...)
	e.operator = &operator{bin: bin, args: args, logPath: logPath}
	if err := e.operator.start(); err != nil {
		return e, err
	}
	// The operator's first writes of its webhook's certificates and the
	// CRD's caBundle are done before any test starts counting writes.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := e.robots.RobotV1alpha1().Robots(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	}); err != nil {
		return e, fmt.Errorf("the operator's conversion webhook did not answer within 60s; see %s", logPath)
	}
	fmt.Fprintf(os.Stderr, "e2e: the operator is running; its log is %s\n", logPath)
	return e, nil
}

// operatorBinary returns $E2E_OPERATOR_BIN, the operator that `make e2e`
// builds once for the runs it makes side by side, or else builds the
// operator from the tree into the environment's temporary directory.
func operatorBinary(ctx context.Context, e *environment) (string, error) {
	if bin := os.Getenv("E2E_OPERATOR_BIN"); bin != "" {
		bin, err := filepath.Abs(bin)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("E2E_OPERATOR_BIN: %w", err)
		}
		fmt.Fprintf(os.Stderr, "e2e: the operator is %s\n", bin)
		return bin, nil
	}
	bin := filepath.Join(e.tempDir, "robot-operator")
	start := time.Now()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir = e.root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the operator: %v\n%s", err, out)
	}
	fmt.Fprintf(os.Stderr, "e2e: built the operator in %v\n", time.Since(start).Round(time.Millisecond))
	return bin, nil
}

// findKubectl returns $KUBECTL, or else the kubectl of the cluster's
// version that hack/tools.sh builds.
func findKubectl(root string) (string, error) {
	if path := os.Getenv("KUBECTL"); path != "" {
		return path, nil
	}
	out, err := exec.Command(filepath.Join(root, "hack", "tools.sh"), "env").Output()
	if err != nil {
		return "", fmt.Errorf("hack/tools.sh env: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, ok := strings.CutPrefix(sc.Text(), "KUBECTL="); ok {
			if _, err := os.Stat(path); err != nil {
				return "", fmt.Errorf("no kubectl at %s (run hack/tools.sh, or set KUBECTL): %w", path, err)
			}
			return path, nil
		}
	}
	return "", errors.New("hack/tools.sh env printed no KUBECTL= line; set KUBECTL")
}

// installCRD applies the Robot CRD, its conversion at webhookURL, and
// waits until the API server serves it.
func installCRD(ctx context.Context) error {
	crd, err := localCRD()
	if err != nil {
		return err
	}
	if _, stderr, err := kubectl(ctx, crd, "apply", "-f", "-"); err != nil {
		return fmt.Errorf("installing the CRD (kubectl apply -f artifacts/crd/, its conversion at %s): %v\n%s", webhookURL(), err, stderr)
	}
	// kubectl 1.35 (unlike 1.37) fails at once, rather than waiting, while the
	// new CRD has no conditions yet: ask again until the deadline.
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, stderr, err := kubectl(ctx, "", "wait", "--for=condition=Established", "--timeout=10s", "crd/robots.robot.dev")
		switch {
		case err == nil:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("waiting for the Robot CRD to be Established: %v\n%s", err, stderr)
		}
		time.Sleep(time.Second)
	}
}

// webhookURL is where the API server reaches the shared operator's
// conversion webhook: on this host, since no pod backs the Service that the
// shipped CRD names.
func webhookURL() string {
	return fmt.Sprintf("https://127.0.0.1:%d/convert", env.webhookPort)
}

// webhookFlags make the operator serve the webhook at webhookURL, with the
// Secret of the deploy manifests.
func webhookFlags() []string {
	return []string{"-webhook-bind-address=127.0.0.1:" + strconv.Itoa(env.webhookPort), "-webhook-url=" + webhookURL(), "-webhook-namespace=" + operatorNamespace}
}

// shippedClientConfig is the conversion's client configuration in the
// shipped CRD.
const shippedClientConfig = `      clientConfig:
        service:
          name: robot-operator-webhook
          namespace: robot-operator
          path: /convert
          port: 443
`

// localCRD returns the shipped CRD with its conversion at webhookURL, as a
// cluster whose operator runs outside it needs it (hack/local-webhook.sh
// does the same for make demo).
func localCRD() (string, error) {
	data, err := os.ReadFile(filepath.Join(env.root, "artifacts", "crd", "robot.dev_robots.yaml"))
	if err != nil {
		return "", err
	}
	if !strings.Contains(string(data), shippedClientConfig) {
		return "", fmt.Errorf("artifacts/crd/robot.dev_robots.yaml has no conversion client configuration like:\n%s", shippedClientConfig)
	}
	return strings.Replace(string(data), shippedClientConfig, "      clientConfig:\n        url: "+webhookURL()+"\n", 1), nil
}

// checkNoOtherOperator fails when some robot-operator other than the one
// under test already manages Robots on the cluster: its writes and events
// would mix with those of the operator under test. It creates a Robot before
// the operator under test runs and checks that no Deployment appears for it.
// The namespace it creates also tells whether the audit log is this
// cluster's.
func checkNoOtherOperator(ctx context.Context) error {
	ns := "e2e-preflight-" + utilrand.String(6)
	if _, err := env.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	defer func() {
		if err := deleteNamespace(ns, 2*time.Minute); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: deleting namespace %s: %v\n", ns, err)
		}
	}()
	env.audit.verify(ns)

	if _, err := env.robots.RobotV1beta1().Robots(ns).Create(ctx, newRobot(ns, "probe", 1), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Robot %s/probe: %w", ns, err)
	}
	err := wait.PollUntilContextTimeout(ctx, pollInterval, 3*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := env.kube.AppsV1().Deployments(ns).Get(ctx, "probe", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return nil // no Deployment: nobody else manages Robots here
	}
	who := "another robot-operator"
	if events, err := env.audit.find(auditQuery{Resource: "deployments", Namespace: ns, Name: "probe"}); err == nil && len(events) > 0 {
		who = fmt.Sprintf("a client with user agent %q", events[0].UserAgent)
	}
	status := ""
	if robot, err := env.robots.RobotV1beta1().Robots(ns).Get(ctx, "probe", metav1.GetOptions{}); err == nil {
		status = " (" + summarizeRobot(robot) + ")"
	}
	return fmt.Errorf("%s already manages Robots on this cluster: it created a Deployment for Robot %s/probe%s before the operator under test started. "+
		"Its writes and events would mix with those under test: stop it, or run the tests on a cluster of their own "+
		"(`make e2e` uses one, robot-operator-e2e, that nothing else should use)", who, ns, status)
}
