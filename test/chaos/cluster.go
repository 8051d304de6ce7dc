package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/robot-operator/robot-operator/test/internal/localcluster"
	"github.com/robot-operator/robot-operator/test/internal/task"
)

// robotsPerNode keeps kwok's fake nodes under their 110-pod capacity with
// up to three replicas per Robot.
const robotsPerNode = 30

// environment is what every scenario shares: the tools and the operator
// binary.
type environment struct {
	*localcluster.Env
	cfg config
}

func newEnvironment(ctx context.Context, cfg config) (*environment, error) {
	shared, err := localcluster.NewEnv(ctx, cfg.root, filepath.Join(cfg.root, "_output", "chaos"), logf)
	if err != nil {
		return nil, err
	}
	return &environment{Env: shared, cfg: cfg}, nil
}

// cluster is one fresh local cluster.
type cluster struct {
	*localcluster.Cluster
	env *environment
}

// newCluster replaces any earlier chaos cluster by a fresh one with enough
// fake nodes for n Robots, auditing every request of the operator.
func (e *environment) newCluster(ctx context.Context, n int) (*cluster, error) {
	c, err := e.NewCluster(ctx, e.cfg.cluster, n/robotsPerNode+1)
	if err != nil {
		return nil, err
	}
	return &cluster{Cluster: c, env: e}, nil
}

// component is a process of the cluster that kwokctl started
// (kube-apiserver, etcd), found by its pid file.
type component struct {
	name    string
	pidFile string
	args    []string
	dir     string
	logPath string
}

func (c *cluster) component(name string) (*component, error) {
	pidFile := filepath.Join(c.Dir, "pids", name+".pid")
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		return nil, err
	}
	pid := strings.TrimSpace(string(raw))
	cmdline, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
	if err != nil {
		return nil, fmt.Errorf("%s (pid %s): %w", name, pid, err)
	}
	dir, err := os.Readlink(filepath.Join("/proc", pid, "cwd"))
	if err != nil {
		return nil, err
	}
	return &component{name: name, pidFile: pidFile, args: strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"),
		dir: dir, logPath: filepath.Join(c.Dir, "logs", name+".log")}, nil
}

// components are the processes of the cluster that a machine's supervisor
// (kubelet, systemd) would restart when they exit.
var components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// pid returns the component's process id, from its pid file.
func (p *component) pid() (int, error) {
	raw, err := os.ReadFile(p.pidFile)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(raw)))
}

// running reports whether the component's process is there.
func (p *component) running() bool {
	pid, err := p.pid()
	return err == nil && syscall.Kill(pid, 0) == nil
}

// portFlag finds the ports a component listens on in its command line.
var portFlag = regexp.MustCompile(`^--(?:secure-port=|listen-client-urls=http://127\.0\.0\.1:|listen-peer-urls=http://127\.0\.0\.1:)(\d+)$`)

// listening reports whether the component runs and accepts connections on
// every port its command line names.
func (p *component) listening() bool {
	if !p.running() {
		return false
	}
	for _, arg := range p.args {
		if m := portFlag.FindStringSubmatch(arg); m != nil {
			conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", m[1]), time.Second)
			if err != nil {
				return false
			}
			conn.Close()
		}
	}
	return true
}

// kill sends SIGKILL to the component and waits until it is gone.
func (p *component) kill() error {
	pid, err := p.pid()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing %s (pid %d): %w", p.name, pid, err)
	}
	for range 100 {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s (pid %d) is still there after SIGKILL", p.name, pid)
}

// restart starts the component again with the same command line, in its own
// session so that it outlives this program as kwokctl's did, and records its
// pid where kwokctl looks for it.
func (p *component) restart() error {
	out, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("restarting %s: %w", p.name, err)
	}
	go cmd.Wait()
	return os.WriteFile(p.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

// waitReady waits until the API server answers /readyz.
func (c *cluster) waitReady(ctx context.Context, timeout time.Duration) error {
	return task.WaitFor(ctx, timeout, 200*time.Millisecond, "the API server's /readyz", func() (bool, error) {
		_, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	})
}

// operator is the operator under test, running as its own process.
type operator struct {
	cmd     *exec.Cmd
	metrics string
	pprof   string // address of its Go profiles
	exited  chan error
	// gone is closed when the process has exited, at exitedAt, with
	// exitErr; exited gets the same error once, for kill and stop.
	gone      chan struct{}
	startedAt time.Time
	exitedAt  time.Time
	exitErr   error
	// id is the identity the operator logged ("Waiting to become the
	// leader"), with leader election only; it names the replica in its
	// User-Agent, and so in the audit log.
	idMu sync.Mutex
	id   string
}

// identity returns the identity the operator logged, "" until it has.
func (o *operator) identity() string {
	o.idMu.Lock()
	defer o.idMu.Unlock()
	return o.id
}

// startOperator starts the operator without waiting for it: scenario 1
// kills it at random moments, before it is ready too.
// extra are added to its command line.
func (e *environment) startOperator(kubeconfig string, log *os.File, extra ...string) (*operator, error) {
	return e.startOperatorAs("", kubeconfig, log, extra...)
}

// identityRE finds the identity in the operator's log line "Waiting to
// become the leader".
var identityRE = regexp.MustCompile(`"Waiting to become the leader".* identity="([^"]+)"`)

// startOperatorAs starts the operator with extra flags; a replica of a
// leader-elected pair has a name, which prefixes each line of its log, and
// its identity is read from that log.
func (e *environment) startOperatorAs(name, kubeconfig string, log io.Writer, extra ...string) (*operator, error) {
	o := &operator{exited: make(chan error, 1), gone: make(chan struct{}), startedAt: time.Now()}
	wait := func(after func()) {
		err := o.cmd.Wait()
		if after != nil {
			after()
		}
		o.exitedAt, o.exitErr = time.Now(), err
		close(o.gone)
		o.exited <- err
	}
	var err error
	if o.metrics, err = localcluster.FreeAddr(); err != nil {
		return nil, err
	}
	if o.pprof, err = localcluster.FreeAddr(); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "=== chaos: %s starting the operator %s\n", time.Now().UTC().Format(time.RFC3339Nano), name)
	args := append([]string{"-kubeconfig", kubeconfig, "-v=2", "-workers=8",
		"-metrics-bind-address", o.metrics, "-metrics-secure=false", "-health-probe-bind-address=127.0.0.1:0",
		// Its Robots are read and written as stored, v1beta1: no conversion.
		"-webhook-bind-address=0",
		"-pprof-bind-address", o.pprof}, extra...)
	o.cmd = exec.Command(e.OperatorBin, args...)
	if name == "" {
		o.cmd.Stdout, o.cmd.Stderr = log, log
		if err := o.cmd.Start(); err != nil {
			return nil, err
		}
		go wait(nil)
		return o, nil
	}
	pr, pw := io.Pipe()
	o.cmd.Stdout, o.cmd.Stderr = pw, pw
	if err := o.cmd.Start(); err != nil {
		return nil, err
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		s := bufio.NewScanner(pr)
		s.Buffer(make([]byte, 64<<10), 4<<20)
		for s.Scan() {
			line := s.Text()
			if m := identityRE.FindStringSubmatch(line); m != nil {
				o.idMu.Lock()
				o.id = m[1]
				o.idMu.Unlock()
			}
			fmt.Fprintf(log, "[%s] %s\n", name, line)
		}
		io.Copy(io.Discard, pr)
	}()
	// The log is complete (its identity read) before anyone hears of the
	// exit.
	go wait(func() {
		pw.Close()
		<-scanned
	})
	return o, nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (o *operator) kill() {
	o.cmd.Process.Kill()
	<-o.exited
}

// stop sends SIGTERM and waits for a clean exit.
func (o *operator) stop() error {
	if err := o.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case err := <-o.exited:
		return err
	case <-time.After(60 * time.Second):
		o.cmd.Process.Kill()
		return errors.New("the operator did not stop within 60s of SIGTERM")
	}
}

// pause stops the operator with SIGSTOP: its connections stay open, it
// reads nothing and writes nothing until resume.
func (o *operator) pause() error { return o.cmd.Process.Signal(syscall.SIGSTOP) }

// resume continues a paused operator with SIGCONT.
func (o *operator) resume() error { return o.cmd.Process.Signal(syscall.SIGCONT) }

// metricsText returns the operator's metrics in the text format.
func (o *operator) metricsText() (string, error) {
	resp, err := http.Get("http://" + o.metrics + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return "", err
	}
	return body.String(), nil
}

// tracked returns the sizes of the operator's per-object maps, from its
// robot_operator_tracked_objects gauge.
func (o *operator) tracked() (map[string]int, error) {
	text, err := o.metricsText()
	if err != nil {
		return nil, err
	}
	sizes := map[string]int{}
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, `robot_operator_tracked_objects{map="`)
		if !ok {
			continue
		}
		name, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			return nil, fmt.Errorf("unexpected line %q", line)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, err
		}
		sizes[name] = int(v)
	}
	if len(sizes) == 0 {
		return nil, errors.New("the operator reports no robot_operator_tracked_objects")
	}
	return sizes, nil
}

// liveHeap returns the bytes of live heap objects right after a garbage
// collection, which the heap profile forces (gc=1) and whose text form
// ends with the runtime's MemStats.
func (o *operator) liveHeap() (uint64, error) {
	resp, err := http.Get("http://" + o.pprof + "/debug/pprof/heap?debug=1&gc=1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return 0, err
	}
	for _, line := range strings.Split(body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("no HeapAlloc in the operator's heap profile")
}

// requests returns the operator's client requests so far, from its
// rest_client_requests_total: failed ones (no answer from the API server)
// included, which the audit log cannot see.
func (o *operator) requests() (float64, error) {
	return o.metric("rest_client_requests_total{")
}

// leading reports whether the operator runs its workers, from its
// robot_operator_leader gauge.
func (o *operator) leading() (bool, error) {
	v, err := o.metric("robot_operator_leader ")
	return v == 1, err
}

// metric returns the sum of the operator's samples whose line starts with
// prefix.
func (o *operator) metric(prefix string) (float64, error) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + o.metrics + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return 0, err
	}
	var total float64
	for _, line := range strings.Split(body.String(), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}
