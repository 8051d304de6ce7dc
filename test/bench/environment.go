package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
)

const (
	// operatorUser is the identity the operator runs under: its own
	// ServiceAccount from artifacts/deploy, not the admin credentials.
	operatorUser = "system:serviceaccount:robot-operator:robot-operator"
	// robotsPerNode keeps kwok's fake nodes under their 110-pod capacity.
	robotsPerNode = 100
)

// environment is what every N shares: the tools, the operator binary, and
// the versions to report.
type environment struct {
	cfg         config
	tools       map[string]string
	out         string // scratch directory
	operatorBin string
	commit      string
	goVersion   string
	memory      string
}

func newEnvironment(ctx context.Context, cfg config) (*environment, error) {
	e := &environment{cfg: cfg, out: filepath.Join(cfg.root, "_output", "bench"), goVersion: runtime.Version()}
	if err := os.MkdirAll(e.out, 0o755); err != nil {
		return nil, err
	}
	logf("building the cluster tools (cached after the first time)")
	if _, err := e.run(ctx, nil, filepath.Join(cfg.root, "hack", "tools.sh")); err != nil {
		return nil, err
	}
	envOut, err := e.run(ctx, nil, filepath.Join(cfg.root, "hack", "tools.sh"), "env")
	if err != nil {
		return nil, err
	}
	e.tools = map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(envOut)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			e.tools[k] = v
		}
	}
	if commit, err := e.run(ctx, nil, "git", "describe", "--always", "--dirty"); err == nil {
		e.commit = strings.TrimSpace(string(commit))
	}
	e.memory = totalMemory()

	logf("building the operator")
	e.operatorBin = filepath.Join(e.out, "robot-operator")
	if _, err := e.run(ctx, []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-ldflags", "-X main.version="+e.commit, "-o", e.operatorBin, "."); err != nil {
		return nil, err
	}
	return e, nil
}

// run runs a command in the repository and returns its standard output; on
// failure the error carries its standard error.
func (e *environment) run(ctx context.Context, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = e.cfg.root
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// cluster is one fresh local cluster.
type cluster struct {
	env        *environment
	kubeconfig string
	auditLog   string
	admin      *rest.Config
	kube       kubernetes.Interface
	robots     clientset.Interface
}

// newCluster replaces any earlier bench cluster by a fresh one with enough
// fake nodes for pods Robots, auditing the operator's requests.
func (e *environment) newCluster(ctx context.Context, pods int) (*cluster, error) {
	policy := filepath.Join(e.out, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["`+operatorUser+`"]
- level: None
`), 0o644); err != nil {
		return nil, err
	}
	c := &cluster{env: e, kubeconfig: filepath.Join(e.out, "kubeconfig")}
	home, _ := os.UserHomeDir()
	c.auditLog = filepath.Join(home, ".kwok", "clusters", e.cfg.cluster, "logs", "audit.log")
	vars := []string{"CLUSTER_NAME=" + e.cfg.cluster, "KUBECONFIG_OUT=" + c.kubeconfig,
		fmt.Sprintf("NODES=%d", pods/robotsPerNode+1), "AUDIT_POLICY=" + policy}
	if _, err := e.run(ctx, vars, filepath.Join(e.cfg.root, "hack", "cluster.sh"), "down"); err != nil {
		return nil, err
	}
	if _, err := e.run(ctx, vars, filepath.Join(e.cfg.root, "hack", "cluster.sh"), "up"); err != nil {
		return nil, err
	}
	admin, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return nil, err
	}
	// Each N gets a new cluster whose certificates sit at the same paths;
	// client-go caches transports by those paths, so use the contents.
	if err := rest.LoadTLSFiles(admin); err != nil {
		return nil, err
	}
	admin.CAFile, admin.CertFile, admin.KeyFile = "", "", ""
	// No client-side throttling: the floor must not be held back by it.
	admin.QPS, admin.Burst = -1, 0
	c.admin = admin
	if c.kube, err = kubernetes.NewForConfig(admin); err != nil {
		return nil, err
	}
	if c.robots, err = clientset.NewForConfig(admin); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *cluster) down(ctx context.Context) {
	vars := []string{"CLUSTER_NAME=" + c.env.cfg.cluster, "KUBECONFIG_OUT=" + c.kubeconfig}
	if _, err := c.env.run(context.WithoutCancel(ctx), vars, filepath.Join(c.env.cfg.root, "hack", "cluster.sh"), "down"); err != nil {
		logf("removing the cluster: %v", err)
	}
}

func (c *cluster) kubectl(ctx context.Context, args ...string) ([]byte, error) {
	return c.env.run(ctx, []string{"KUBECONFIG=" + c.kubeconfig}, c.env.tools["KUBECTL"], args...)
}

// waitEstablished waits until the Robot CRD is served. It asks for the
// condition itself: kubectl wait (and a jsonpath filter) fails at once,
// instead of waiting, when it finds the CRD before the API server has
// written any condition to it, which a busy machine makes likely.
func (c *cluster) waitEstablished(ctx context.Context) error {
	return waitFor(ctx, 60*time.Second, 200*time.Millisecond, "the Robot CRD to be Established", func() (bool, error) {
		out, err := c.kubectl(ctx, "get", "crd/robots.robot.dev", "-o", "json")
		if err != nil {
			return false, err
		}
		var crd struct {
			Status struct {
				Conditions []struct{ Type, Status string } `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal(out, &crd); err != nil {
			return false, err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == "Established" {
				return c.Status == "True", nil
			}
		}
		return false, nil
	})
}

// installOperatorRBAC installs the CRD and the operator's ServiceAccount and
// RBAC from artifacts/deploy, and returns a kubeconfig that authenticates as
// that ServiceAccount. The operator Deployment in those manifests gets fake
// pods from kwok, which run nothing.
func (c *cluster) installOperatorRBAC(ctx context.Context) (string, error) {
	if _, err := c.kubectl(ctx, "apply", "--server-side", "-k", filepath.Join(c.env.cfg.root, "artifacts", "deploy")); err != nil {
		return "", err
	}
	if err := c.waitEstablished(ctx); err != nil {
		return "", err
	}
	token, err := c.kubectl(ctx, "create", "token", "robot-operator", "-n", "robot-operator", "--duration=4h")
	if err != nil {
		return "", err
	}
	raw, err := clientcmd.LoadFromFile(c.kubeconfig)
	if err != nil {
		return "", err
	}
	for _, auth := range raw.AuthInfos {
		auth.ClientCertificate, auth.ClientKey = "", ""
		auth.ClientCertificateData, auth.ClientKeyData = nil, nil
		auth.Token = strings.TrimSpace(string(token))
	}
	path := filepath.Join(c.env.out, "operator.kubeconfig")
	return path, clientcmd.WriteToFile(*raw, path)
}

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func totalMemory() string {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		var kb uint64
		if _, err := fmt.Sscanf(s.Text(), "MemTotal: %d kB", &kb); err == nil {
			return fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
		}
	}
	return "unknown"
}

// waitFor polls cond every interval until it is true or timeout passes.
func waitFor(ctx context.Context, timeout, interval time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
