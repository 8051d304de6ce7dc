// Package localcluster makes the local clusters that the programs under
// test/ (bench, chaos) run robot-operator against: it builds the cluster
// tools and the operator, starts and removes a kwok cluster with
// hack/cluster.sh, and installs the operator's CRD, ServiceAccount and RBAC
// from artifacts/deploy.
package localcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
	"github.com/robot-operator/robot-operator/test/internal/task"
)

// OperatorUser is the identity the operator runs under: its own
// ServiceAccount from artifacts/deploy, not the admin credentials.
const OperatorUser = "system:serviceaccount:robot-operator:robot-operator"

// Env is what every cluster of a run shares: the repository, a scratch
// directory, the cluster tools and the operator binary.
type Env struct {
	// Root is the repository's top directory, where commands run.
	Root string
	// Out is the scratch directory.
	Out string
	// Tools maps the names `hack/tools.sh env` prints (KUBECTL, …) to
	// the paths of the tools.
	Tools map[string]string
	// OperatorBin is the operator built from Root.
	OperatorBin string
	// Commit is `git describe --always --dirty` of Root, "" if unknown.
	Commit string
	// FeatureGates are the control plane's feature gates for the clusters
	// made from now on (e.g. "CBORServingAndStorage=true"); "" for none.
	FeatureGates string
	// ServiceCIDR is the Services' cluster IP range of the clusters it
	// makes; empty: the API server's default, a /24.
	ServiceCIDR string
	// Logf logs progress.
	Logf func(format string, args ...any)
}

// NewEnv makes the scratch directory out, builds the cluster tools (cached
// after the first time) and reads their paths, then builds the operator
// into out, unless $OPERATOR_BIN names one built from Root already (make
// test builds it once for all its parts). Progress goes to logf.
func NewEnv(ctx context.Context, root, out string, logf func(format string, args ...any)) (*Env, error) {
	e := &Env{Root: root, Out: out, Logf: logf}
	if err := os.MkdirAll(e.Out, 0o755); err != nil {
		return nil, err
	}
	logf("building the cluster tools (cached after the first time)")
	if _, err := e.Run(ctx, nil, filepath.Join(root, "hack", "tools.sh"), "cluster"); err != nil {
		return nil, err
	}
	envOut, err := e.Run(ctx, nil, filepath.Join(root, "hack", "tools.sh"), "env")
	if err != nil {
		return nil, err
	}
	e.Tools = ParseToolsEnv(string(envOut))
	if commit, err := e.Run(ctx, nil, "git", "describe", "--always", "--dirty"); err == nil {
		e.Commit = strings.TrimSpace(string(commit))
	}
	if bin := os.Getenv("OPERATOR_BIN"); bin != "" {
		if e.OperatorBin, err = filepath.Abs(bin); err != nil {
			return nil, err
		}
		if _, err := os.Stat(e.OperatorBin); err != nil {
			return nil, fmt.Errorf("OPERATOR_BIN: %w", err)
		}
		logf("the operator is %s", e.OperatorBin)
		return e, nil
	}
	logf("building the operator")
	e.OperatorBin = filepath.Join(e.Out, "robot-operator")
	if _, err := e.Run(ctx, []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-ldflags", "-X main.version="+e.Commit, "-o", e.OperatorBin, "."); err != nil {
		return nil, err
	}
	return e, nil
}

// ParseToolsEnv reads the NAME=path lines of `hack/tools.sh env`.
func ParseToolsEnv(out string) map[string]string {
	tools := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			tools[k] = v
		}
	}
	return tools
}

// Run runs a command in the repository, with env added to the
// environment, and returns its standard output; on failure the error
// carries its standard error.
func (e *Env) Run(ctx context.Context, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = e.Root
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// auditPolicy records every request of the operator, at the Metadata
// level, and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + OperatorUser + `"]
- level: None
`

// Cluster is one fresh local cluster, with admin clients.
type Cluster struct {
	Env  *Env
	Name string
	// Dir is kwokctl's directory of the cluster.
	Dir string
	// Kubeconfig holds the admin credentials.
	Kubeconfig string
	// AuditLog is the API server's audit log of the operator's requests.
	AuditLog string
	// Admin is the admin configuration, without client-side throttling.
	Admin  *rest.Config
	Kube   kubernetes.Interface
	Robots clientset.Interface
}

// NewCluster replaces any earlier cluster of that name by a fresh one with
// the given number of fake nodes, auditing every request of the operator.
func (e *Env) NewCluster(ctx context.Context, name string, nodes int) (*Cluster, error) {
	policy := filepath.Join(e.Out, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	c := &Cluster{Env: e, Name: name, Kubeconfig: filepath.Join(e.Out, "kubeconfig"), Dir: filepath.Join(home, ".kwok", "clusters", name)}
	c.AuditLog = filepath.Join(c.Dir, "logs", "audit.log")
	vars := []string{"CLUSTER_NAME=" + name, "KUBECONFIG_OUT=" + c.Kubeconfig,
		fmt.Sprintf("NODES=%d", nodes), "AUDIT_POLICY=" + policy, "KUBE_FEATURE_GATES=" + e.FeatureGates,
		"SERVICE_CIDR=" + e.ServiceCIDR}
	if _, err := e.Run(ctx, vars, filepath.Join(e.Root, "hack", "cluster.sh"), "down"); err != nil {
		return nil, err
	}
	if _, err := e.Run(ctx, vars, filepath.Join(e.Root, "hack", "cluster.sh"), "up"); err != nil {
		return nil, err
	}
	admin, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	// Each new cluster's certificates sit at the same paths; client-go
	// caches transports by those paths, so use the contents.
	if err := rest.LoadTLSFiles(admin); err != nil {
		return nil, err
	}
	admin.CAFile, admin.CertFile, admin.KeyFile = "", "", ""
	// No client-side throttling: the measurements must not be held back
	// by it.
	admin.QPS, admin.Burst = -1, 0
	// No gzip, as the operator asks none: what the tests' and the
	// benchmark's own watches cost the API server stays small, and the
	// same whether the floor or the operator writes.
	admin.DisableCompression = true
	c.Admin = admin
	if c.Kube, err = kubernetes.NewForConfig(admin); err != nil {
		return nil, err
	}
	if c.Robots, err = clientset.NewForConfig(admin); err != nil {
		return nil, err
	}
	return c, nil
}

// Down removes the cluster, even when ctx is done; a failure is logged.
func (c *Cluster) Down(ctx context.Context) {
	vars := []string{"CLUSTER_NAME=" + c.Name, "KUBECONFIG_OUT=" + c.Kubeconfig}
	if _, err := c.Env.Run(context.WithoutCancel(ctx), vars, filepath.Join(c.Env.Root, "hack", "cluster.sh"), "down"); err != nil {
		c.Env.Logf("removing the cluster: %v", err)
	}
}

// Kubectl runs kubectl as the admin and returns its standard output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	return c.Env.Run(ctx, []string{"KUBECONFIG=" + c.Kubeconfig}, c.Env.Tools["KUBECTL"], args...)
}

// WaitEstablished waits until the Robot CRD is served. It asks for the
// condition itself: kubectl wait (and a jsonpath filter) fails at once,
// instead of waiting, when it finds the CRD before the API server has
// written any condition to it, which a busy machine makes likely.
func (c *Cluster) WaitEstablished(ctx context.Context) error {
	return task.WaitFor(ctx, 60*time.Second, 200*time.Millisecond, "the Robot CRD to be Established", func() (bool, error) {
		out, err := c.Kubectl(ctx, "get", "crd/robots.robot.dev", "-o", "json")
		if err != nil {
			return false, err
		}
		return Established(out)
	})
}

// Established reports whether a CustomResourceDefinition, in JSON, has the
// condition Established True; false while it has no such condition yet.
func Established(crdJSON []byte) (bool, error) {
	var crd struct {
		Status struct {
			Conditions []struct{ Type, Status string } `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(crdJSON, &crd); err != nil {
		return false, err
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == "Established" {
			return c.Status == "True", nil
		}
	}
	return false, nil
}

// InstallOperatorRBAC installs the CRD and the operator's ServiceAccount
// and RBAC from artifacts/deploy, waits for the CRD to be Established, and
// returns a kubeconfig, in the scratch directory, that authenticates as
// that ServiceAccount. The operator Deployment in those manifests gets
// fake pods from kwok, which run nothing.
func (c *Cluster) InstallOperatorRBAC(ctx context.Context) (string, error) {
	if _, err := c.Kubectl(ctx, "apply", "--server-side", "-k", filepath.Join(c.Env.Root, "artifacts", "deploy")); err != nil {
		return "", err
	}
	if err := c.WaitEstablished(ctx); err != nil {
		return "", err
	}
	token, err := c.Kubectl(ctx, "create", "token", "robot-operator", "-n", "robot-operator", "--duration=4h")
	if err != nil {
		return "", err
	}
	raw, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		return "", err
	}
	for _, auth := range raw.AuthInfos {
		auth.ClientCertificate, auth.ClientKey = "", ""
		auth.ClientCertificateData, auth.ClientKeyData = nil, nil
		auth.Token = strings.TrimSpace(string(token))
	}
	path := filepath.Join(c.Env.Out, "operator.kubeconfig")
	return path, clientcmd.WriteToFile(*raw, path)
}

// LockPorts takes the lock that hack/cluster.sh holds while kwokctl makes a
// cluster, and returns what releases it. kwokctl gives a new cluster the
// first free ports below 32768, wherever they were free before: a program
// that stops a component of its cluster (and frees its ports) holds the
// lock until the component is back, so that no cluster made meanwhile, by a
// program running beside it, takes them.
func LockPorts() (unlock func(), err error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(home, ".kwok", ".robot-operator-ports.lock")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// FreeAddr returns a loopback address with a port nobody listens on, for a
// process started later. The port lies below the kernel's ephemeral range,
// so that nothing binding port 0, and no outgoing connection, is given it
// in the meantime (nor after its process stops and before another takes
// it up again); kwokctl takes the ports just below 32768, and this range
// stays clear of them. Where the range cannot be read, any free port.
func FreeAddr() (string, error) {
	low, _, err := ephemeralPorts()
	if err == nil && low > freePortWindow+freePortGap {
		for range 100 {
			port := low - freePortGap - 1 - rand.IntN(freePortWindow)
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				continue // taken
			}
			addr := l.Addr().String()
			l.Close()
			return addr, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

const (
	// freePortGap is how far below the ephemeral range FreeAddr stays:
	// kwokctl gives each cluster the first free ports below 32768.
	freePortGap = 1024
	// freePortWindow is how many ports FreeAddr picks from, at random.
	freePortWindow = 12000
)

// ephemeralPorts returns the kernel's range of ports for binds to port 0
// and outgoing connections.
func ephemeralPorts() (low, high int, err error) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, err
	}
	if _, err := fmt.Sscan(string(data), &low, &high); err != nil {
		return 0, 0, fmt.Errorf("reading the ephemeral port range %q: %w", data, err)
	}
	return low, high, nil
}

// RepoRoot finds the repository's top directory from the working
// directory up: the one with hack/cluster.sh.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "cluster.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("run it from inside the robot-operator repository")
		}
		dir = parent
	}
}

// Logger returns a logf that writes to standard error, each line stamped
// with the time and prefixed with program.
func Logger(program string) func(format string, args ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s %s: %s\n", time.Now().Format("15:04:05"), program, fmt.Sprintf(format, args...))
	}
}
