package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/robot-operator/robot-operator/test/internal/localcluster"
	"github.com/robot-operator/robot-operator/test/internal/task"
)

// operator is the operator under test, running as its own process.
type operator struct {
	cmd                    *exec.Cmd
	metrics, health, pprof string
	exited                 chan error
}

// startOperator starts the operator, serving the conversion webhook at
// webhook when it is not nil.
func startOperator(ctx context.Context, e *environment, kubeconfig, logName string, webhook *localWebhook) (*operator, error) {
	o := &operator{exited: make(chan error, 1)}
	var err error
	for _, addr := range []*string{&o.metrics, &o.health, &o.pprof} {
		if *addr, err = localcluster.FreeAddr(); err != nil {
			return nil, err
		}
	}
	logFile, err := os.Create(filepath.Join(e.Out, logName))
	if err != nil {
		return nil, err
	}
	args := []string{
		"-kubeconfig", kubeconfig,
		"-workers", strconv.Itoa(e.cfg.concurrency),
		"-metrics-bind-address", o.metrics,
		"-health-probe-bind-address", o.health,
		"-pprof-bind-address", o.pprof,
		// Plain HTTP on loopback: the bench reads the operator's own
		// histograms and counters.
		"-metrics-secure=false",
		// Its memory is measured as the Go runtime runs it without a
		// limit, whatever the cgroup of the machine running the bench.
		"-memory-limit-from-cgroup=false",
	}
	if webhook != nil {
		args = append(args, webhook.operatorArgs()...)
	} else {
		// Its Robots are read and written as stored, v1beta1: it needs no
		// conversion, and the API server's for v1alpha1 fail.
		args = append(args, "-webhook-bind-address=0")
	}
	o.cmd = exec.Command(e.OperatorBin, append(args, strings.Fields(e.cfg.operatorArgs)...)...)
	if e.cfg.profile {
		// A heap profile samples one allocation in 512 KiB by default, too
		// few to tell a few kilobytes per Robot apart.
		o.cmd.Env = append(os.Environ(), "GODEBUG=memprofilerate=4096")
	}
	o.cmd.Stdout, o.cmd.Stderr = logFile, logFile
	if err := o.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { o.exited <- o.cmd.Wait(); logFile.Close() }()
	// With many Robots in place, /readyz waits for the informers' relist.
	err = task.WaitFor(ctx, max(e.cfg.timeout, time.Minute), 100*time.Millisecond, "the operator's /readyz", func() (bool, error) {
		select {
		case err := <-o.exited:
			return false, fmt.Errorf("the operator exited: %v (log: %s)", err, logFile.Name())
		default:
		}
		resp, err := http.Get("http://" + o.health + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		o.cmd.Process.Kill()
		return nil, err
	}
	return o, nil
}

// stop sends SIGTERM and waits for a clean exit.
func (o *operator) stop() error {
	if err := o.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case err := <-o.exited:
		if err != nil {
			return fmt.Errorf("the operator did not exit cleanly: %w", err)
		}
		return nil
	case <-time.After(60 * time.Second):
		o.cmd.Process.Kill()
		return errors.New("the operator did not stop within 60s of SIGTERM")
	}
}

// memory returns the operator's resident set (now and at its peak) from
// /proc, and its live heap after a forced garbage collection.
func (o *operator) memory() (rss, peakRSS, heap uint64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", o.cmd.Process.Pid))
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		var kb uint64
		if _, err := fmt.Sscanf(s.Text(), "VmRSS: %d kB", &kb); err == nil {
			rss = kb << 10
		}
		if _, err := fmt.Sscanf(s.Text(), "VmHWM: %d kB", &kb); err == nil {
			peakRSS = kb << 10
		}
	}
	// gc=1 collects garbage first, so HeapAlloc is the live heap.
	resp, err := http.Get("http://" + o.pprof + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			heap, err = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return rss, peakRSS, heap, err
		}
	}
	return 0, 0, 0, errors.New("no HeapAlloc in the heap profile")
}

// heapProfile saves the operator's heap profile, after a collection, when
// -profile is set: what holds its live heap (go tool pprof -sample_index=inuse_space).
func (o *operator) heapProfile(ctx context.Context, e *environment, name string) {
	e.recordProfile(name, "the operator's heap", func() ([]byte, error) {
		return get(ctx, "http://"+o.pprof+"/debug/pprof/heap?gc=1")
	})()
}

// profile records the operator's CPU from now until stop is called, when
// -profile is set, as profileAPIServerPhase does the API server's.
func (o *operator) profile(ctx context.Context, e *environment, name string) (stop func()) {
	return e.recordPhaseProfiles(ctx, name, "the operator", func(ctx context.Context, d time.Duration) func() ([]byte, error) {
		return func() ([]byte, error) {
			return get(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", o.pprof, int(d.Seconds())))
		}
	})
}

// get returns the body of a GET of url, which must answer 200.
func get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
