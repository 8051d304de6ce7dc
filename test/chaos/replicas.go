package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robot-operator/robot-operator/test/internal/task"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// Leader election of the replicas of scenarios 2 and 6: the Lease of
// artifacts/deploy's RBAC, with timings short enough that a hand-over takes
// seconds. A leader that has not renewed for the renew deadline stops
// writing and exits; a follower takes the Lease over once it has gone
// unrenewed for the lease duration.
const (
	leaseNamespace     = "robot-operator"
	leaseName          = "robot-operator"
	leaseDuration      = 8 * time.Second
	leaseRenewDeadline = 5 * time.Second
	leaseRetryPeriod   = time.Second
)

func leaderElectionFlags() []string {
	return []string{"-leader-elect", "-leader-elect-namespace=" + leaseNamespace, "-leader-elect-id=" + leaseName,
		"-leader-elect-lease-duration=" + leaseDuration.String(),
		"-leader-elect-renew-deadline=" + leaseRenewDeadline.String(),
		"-leader-elect-retry-period=" + leaseRetryPeriod.String()}
}

// replica is one of two leader-elected operator processes, kept running as
// a Deployment's pod would be: when it exits it is started again, at once
// when the suite killed it, after a back-off otherwise (as a kubelet's).
// Every start is a new identity.
type replica struct {
	name       string
	env        *environment
	kubeconfig string
	log        io.Writer
	// extra are added to the command line of each of its processes.
	extra []string

	mu       sync.Mutex
	op       *operator
	killing  bool // the suite killed op and restarts it at once
	stopping bool // the scenario is over: do not restart
	exits    []replicaExit
	stopped  chan struct{} // closed when the supervisor has returned
}

// replicaExit is one exit of a replica's process.
type replicaExit struct {
	identity string
	at       time.Time
	err      error
	killed   bool
}

// startReplica starts a replica, with extra flags, and the supervisor that
// restarts it.
func (s *scenarioRun) startReplica(ctx context.Context, name, kubeconfig string, extra ...string) (*replica, error) {
	r := &replica{name: name, env: s.env, kubeconfig: kubeconfig, log: s.log, extra: extra, stopped: make(chan struct{})}
	op, err := r.env.startOperatorAs(name, kubeconfig, r.log, r.flags()...)
	if err != nil {
		return nil, err
	}
	r.op = op
	s.replicas = append(s.replicas, r)
	go r.supervise(ctx)
	return r, nil
}

// flags are the replica's flags: leader election, and its extra ones.
func (r *replica) flags() []string {
	return append(leaderElectionFlags(), r.extra...)
}

func (r *replica) current() *operator {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.op
}

func (r *replica) supervise(ctx context.Context) {
	defer close(r.stopped)
	backoff := time.Second
	for {
		op := r.current()
		select {
		case <-op.gone:
		case <-ctx.Done():
			return
		}
		r.mu.Lock()
		killed, stopping := r.killing, r.stopping
		r.killing = false
		r.exits = append(r.exits, replicaExit{identity: op.identity(), at: op.exitedAt, err: op.exitErr, killed: killed})
		r.mu.Unlock()
		if stopping {
			return
		}
		if !killed {
			logf("replica %s (%s) exited: %v; restarting it in %s", r.name, op.identity(), op.exitErr, backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			// A process that lived long enough starts the back-off afresh.
			if op.exitedAt.Sub(op.startedAt) > 10*time.Second {
				backoff = time.Second
			} else {
				backoff = min(2*backoff, 10*time.Second)
			}
		}
		next, err := r.env.startOperatorAs(r.name, r.kubeconfig, r.log, r.flags()...)
		if err != nil {
			logf("restarting replica %s: %v", r.name, err)
			return
		}
		r.mu.Lock()
		if r.stopping {
			r.mu.Unlock()
			next.kill()
			return
		}
		r.op = next
		r.mu.Unlock()
	}
}

// killAndRestart kills the replica with SIGKILL; its supervisor starts it
// again at once.
func (r *replica) killAndRestart() string {
	r.mu.Lock()
	op := r.op
	r.killing = true
	r.mu.Unlock()
	id := op.identity()
	op.kill()
	return id
}

// stop ends the replica with SIGTERM (a leader releases the Lease).
func (r *replica) stop() error {
	r.mu.Lock()
	r.stopping = true
	op := r.op
	r.mu.Unlock()
	select {
	case <-op.gone:
		return nil
	default:
	}
	return op.stop()
}

// kill ends the replica with SIGKILL, if stop has not.
func (r *replica) kill() {
	r.mu.Lock()
	r.stopping = true
	op := r.op
	r.mu.Unlock()
	select {
	case <-op.gone:
	default:
		op.kill()
	}
}

// exitsSince returns the replica's exits from t on.
func (r *replica) exitsSince(t time.Time) []replicaExit {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []replicaExit
	for _, e := range r.exits {
		if !e.at.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

// holder returns the Lease's holder identity, "" when none.
func (s *scenarioRun) holder(ctx context.Context) string {
	lease, err := s.c.Kube.CoordinationV1().Leases(leaseNamespace).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// waitLeader waits until one of the replicas holds the Lease and runs its
// workers (its leader gauge is 1), other than the process of identity not,
// and returns it.
func (s *scenarioRun) waitLeader(ctx context.Context, timeout time.Duration, not string) (*replica, *operator, error) {
	var leader *replica
	var leaderOp *operator
	err := task.WaitFor(ctx, timeout, 100*time.Millisecond, "a leader", func() (bool, error) {
		holder := s.holder(ctx)
		if holder == "" || holder == not {
			return false, nil
		}
		for _, r := range s.replicas {
			op := r.current()
			if op.identity() != holder {
				continue
			}
			if leading, err := op.leading(); err == nil && leading {
				leader, leaderOp = r, op
				return true, nil
			}
		}
		return false, nil
	})
	return leader, leaderOp, err
}

// waitFollower waits until the replica's process answers its metrics, has
// an identity and does not lead.
func waitFollower(ctx context.Context, r *replica, timeout time.Duration) (*operator, error) {
	var follower *operator
	err := task.WaitFor(ctx, timeout, 200*time.Millisecond, "replica "+r.name+" to follow", func() (bool, error) {
		op := r.current()
		if op.identity() == "" {
			return false, nil
		}
		leading, err := op.leading()
		if err != nil || leading {
			return false, nil
		}
		follower = op
		return true, nil
	})
	return follower, err
}

// killedLeaders is how many times scenario 2 kills the leader.
const killedLeaders = 10

// killLeader (scenario 2) runs two replicas with leader election and kills
// the leader with SIGKILL 10 times, at a random moment 0-3 s after it
// started leading, while the Robots are created and changed. The killed
// replica starts again at once and follows; the other takes the Lease over
// once it expires. The audit log must show the replicas' writes one after
// the other, never interleaved past a hand-over.
func killLeader(ctx context.Context, s *scenarioRun) error {
	for _, name := range []string{"a", "b"} {
		if _, err := s.startReplica(ctx, name, s.kubeconfig); err != nil {
			return err
		}
	}
	if _, _, err := s.waitLeader(ctx, 2*time.Minute, ""); err != nil {
		return err
	}
	s.faultStart = time.Now()
	stop := s.churn(ctx, 200*time.Millisecond)
	var handOvers []float64
	killed := ""
	var killedAt time.Time
	for i := range killedLeaders {
		leader, _, err := s.waitLeader(ctx, 2*time.Minute, killed)
		if err != nil {
			return fmt.Errorf("after %d kills: %w", i, err)
		}
		if killed != "" {
			handOvers = append(handOvers, time.Since(killedAt).Seconds())
		}
		select {
		case <-time.After(time.Duration(s.rng.Int63n(int64(3 * time.Second)))):
		case <-ctx.Done():
			return ctx.Err()
		}
		killedAt = time.Now()
		killed = leader.killAndRestart()
		logf("killed the leader, replica %s (%s), %d times; %d Robots created", leader.name, killed, i+1, s.w.created.Load())
	}
	if _, _, err := s.waitLeader(ctx, 2*time.Minute, killed); err != nil {
		return err
	}
	handOvers = append(handOvers, time.Since(killedAt).Seconds())
	s.faultEnd = time.Now()
	if err := stop(); err != nil {
		return err
	}
	sort.Float64s(handOvers)
	s.notes = append(s.notes, fmt.Sprintf("%d kills of the leader in %.0f s; a new leader ran its workers %.1f-%.1f s after each kill (median %.1f; lease duration %s)",
		killedLeaders, s.faultEnd.Sub(s.faultStart).Seconds(), handOvers[0], handOvers[len(handOvers)-1], handOvers[len(handOvers)/2], leaseDuration))
	s.auditChecks = append(s.auditChecks, func(audit []auditEvent) check {
		// Run at the end: a leader that lost its Lease while the Robots
		// converged shows too.
		s.notes = append(s.notes, s.unexpectedExits(func(*replica) time.Time { return s.faultStart })...)
		c, seen, _ := checkOneWriter(audit)
		// Every kill of a leader makes a new one, who takes the Lease:
		// fewer hand-overs than kills means the audit log missed writers.
		if seen < killedLeaders {
			c.ok = false
			c.detail += fmt.Sprintf("; only %d hand-overs for %d kills of the leader", seen, killedLeaders)
		}
		return c
	})
	return nil
}

// unexpectedExits describes the exits of the replicas that the suite did
// not cause, each replica's from since(replica) on. A replica that exits
// by itself has lost its Lease, or failed to start.
func (s *scenarioRun) unexpectedExits(since func(*replica) time.Time) []string {
	var notes []string
	for _, r := range s.replicas {
		for _, e := range r.exitsSince(since(r)) {
			if !e.killed {
				notes = append(notes, fmt.Sprintf("replica %s (%s) exited by itself at %s: %v", r.name, e.identity, e.at.Format("15:04:05"), e.err))
			}
		}
	}
	return notes
}

// partition is how long scenario 6 cuts the leader off.
const partition = 30 * time.Second

// partitionLeader (scenario 6) runs two replicas with leader election, each
// reaching the API server through a TCP proxy of its own. Once a third of
// the Robots are created, the leader's proxy closes its connections and
// refuses new ones for 30 s. The leader must stop writing before its Lease
// can be taken over (the renew deadline is shorter than the lease duration);
// the other replica takes over; when the partition heals, the old leader
// follows, having exited and been started again, or not.
func partitionLeader(ctx context.Context, s *scenarioRun) error {
	proxies := map[string]*tcpProxy{}
	replicas := map[string]*replica{}
	for _, name := range []string{"a", "b"} {
		p, kubeconfig, err := s.proxiedKubeconfig(name)
		if err != nil {
			return err
		}
		proxies[name] = p
		s.cleanups = append(s.cleanups, p.close)
		r, err := s.startReplica(ctx, name, kubeconfig)
		if err != nil {
			return err
		}
		replicas[name] = r
		if name == "a" {
			// a leads: it is the one cut off.
			if _, _, err := s.waitLeader(ctx, 2*time.Minute, ""); err != nil {
				return err
			}
		}
	}
	a, b := replicas["a"], replicas["b"]
	if _, err := waitFollower(ctx, b, 2*time.Minute); err != nil {
		return err
	}
	stop := s.churn(ctx, 200*time.Millisecond)
	if err := task.WaitFor(ctx, 5*time.Minute, 50*time.Millisecond, "a third of the Robots", func() (bool, error) {
		return s.w.created.Load() >= int64(s.w.n/3), nil
	}); err != nil {
		return err
	}
	old := a.current()
	oldID := old.identity()
	if s.holder(ctx) != oldID {
		return fmt.Errorf("replica a (%s) no longer holds the Lease before the partition", oldID)
	}
	s.faultStart = time.Now()
	proxies["a"].cut()
	logf("cut replica a (%s), the leader, off the API server with %d Robots created", oldID, s.w.created.Load())

	// When did the old leader stop? It exits (watchLease) or, failing
	// that, stops its workers (its leader gauge): its metrics are local,
	// and answer through the partition.
	stoppedc := make(chan time.Time, 1)
	go func() {
		for {
			select {
			case <-old.gone:
				stoppedc <- old.exitedAt
				return
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return
			}
			if leading, err := old.leading(); err == nil && !leading {
				stoppedc <- time.Now()
				return
			}
		}
	}()
	_, newOp, err := s.waitLeader(ctx, 2*time.Minute, oldID)
	if err != nil {
		return err
	}
	tookOver := time.Now()
	logf("replica b (%s) leads %.1f s after the cut", newOp.identity(), tookOver.Sub(s.faultStart).Seconds())
	select {
	case <-time.After(time.Until(s.faultStart.Add(partition))):
	case <-ctx.Done():
		return ctx.Err()
	}
	var stoppedAt time.Time
	select {
	case stoppedAt = <-stoppedc:
	default:
	}
	if err := proxies["a"].heal(); err != nil {
		return err
	}
	s.faultEnd = time.Now()
	logf("healed the partition after %.1f s", s.faultEnd.Sub(s.faultStart).Seconds())
	follower, err := waitFollower(ctx, a, 2*time.Minute)
	if err != nil {
		return err
	}
	rejoined := time.Now()
	if err := stop(); err != nil {
		return err
	}

	exits := a.exitsSince(s.faultStart)
	rejoin := ""
	if follower == old {
		rejoin = fmt.Sprintf("the old leader did not exit and follows again after the partition (%s)", oldID)
	} else {
		status := "?"
		for _, e := range exits {
			if e.identity == oldID {
				status = fmt.Sprint(e.err)
			}
		}
		// Started again while cut off, a replica exits at once: it
		// cannot reach the API server.
		rejoin = fmt.Sprintf("the old leader exited (%s) %.1f s after the cut; started again (%d more exits while cut off), it follows as %s",
			status, stoppedAt.Sub(s.faultStart).Seconds(), len(exits)-1, follower.identity())
	}
	s.notes = append(s.notes, fmt.Sprintf("cut off %.1f s; the other replica led %.1f s after the cut", s.faultEnd.Sub(s.faultStart).Seconds(), tookOver.Sub(s.faultStart).Seconds()), rejoin)
	newID := newOp.identity()
	s.auditChecks = append(s.auditChecks, func(audit []auditEvent) check {
		// The cut-off replica's exits are expected until it follows again.
		s.notes = append(s.notes, s.unexpectedExits(func(r *replica) time.Time {
			if r == a {
				return rejoined
			}
			return s.faultStart
		})...)
		c, _, _ := checkOneWriter(audit)
		return c
	}, func(audit []auditEvent) check {
		return checkStoppedInTime(audit, oldID, newID, stoppedAt)
	})
	return nil
}

// checkStoppedInTime: the old leader stopped (exited, or stopped its
// workers) before its Lease could be taken over, a lease duration after its
// last renewal the API server received; and the new leader's first write
// came after both.
func checkStoppedInTime(audit []auditEvent, oldID, newID string, stoppedAt time.Time) check {
	var lastRenewal, newFirst time.Time
	for i := range audit {
		e := &audit[i]
		if !effectiveWrite(e) {
			continue
		}
		switch id := writerOf(e); {
		case id == oldID && e.ObjectRef.Resource == "leases" && e.RequestReceived.After(lastRenewal):
			lastRenewal = e.RequestReceived
		case id == newID && (newFirst.IsZero() || e.RequestReceived.Before(newFirst)):
			newFirst = e.RequestReceived
		}
	}
	if lastRenewal.IsZero() || newFirst.IsZero() {
		return checkf("stopped in time", false, "no Lease write of the old leader (%v) or no write of the new one (%v) in the audit log", lastRenewal, newFirst)
	}
	if stoppedAt.IsZero() {
		return checkf("stopped in time", false, "the old leader still ran its workers when the partition healed; its last renewal was at %s",
			lastRenewal.Format("15:04:05.000"))
	}
	expiry := lastRenewal.Add(leaseDuration)
	ok := stoppedAt.Before(expiry) && newFirst.After(stoppedAt)
	return checkf("stopped in time", ok, "the old leader's last renewal %s, it stopped %.1f s later (the Lease could be taken after %s), the new leader's first write %.1f s later",
		lastRenewal.Format("15:04:05.000"), stoppedAt.Sub(lastRenewal).Seconds(), leaseDuration, newFirst.Sub(lastRenewal).Seconds())
}

// proxiedKubeconfig starts a proxy to the API server for the named replica
// and returns it with a kubeconfig, the operator's, that goes through it.
func (s *scenarioRun) proxiedKubeconfig(name string) (*tcpProxy, string, error) {
	raw, err := clientcmd.LoadFromFile(s.kubeconfig)
	if err != nil {
		return nil, "", err
	}
	var p *tcpProxy
	for _, cl := range raw.Clusters {
		u, err := url.Parse(cl.Server)
		if err != nil {
			return nil, "", err
		}
		if p == nil {
			if p, err = startProxy(u.Host); err != nil {
				return nil, "", err
			}
		}
		// The API server's certificate names its own address.
		if cl.TLSServerName == "" {
			cl.TLSServerName = u.Hostname()
		}
		u.Host = p.addr
		cl.Server = u.String()
	}
	if p == nil {
		return nil, "", errors.New("the operator's kubeconfig names no cluster")
	}
	path := filepath.Join(s.env.Out, "operator-"+name+".kubeconfig")
	if err := clientcmd.WriteToFile(*raw, path); err != nil {
		p.close()
		return nil, "", err
	}
	return p, path, nil
}

// tcpProxy forwards TCP connections to the first of its targets that
// accepts one. cut closes every connection and refuses new ones (nothing
// listens) until heal.
type tcpProxy struct {
	targets []string
	addr    string
	// next rotates the target tried first, so that each takes turns.
	next atomic.Uint32

	mu       sync.Mutex
	listener net.Listener // nil while cut
	conns    map[net.Conn]struct{}
}

func startProxy(targets ...string) (*tcpProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &tcpProxy{targets: targets, addr: l.Addr().String(), listener: l, conns: map[net.Conn]struct{}{}}
	go p.serve(l)
	return p, nil
}

func (p *tcpProxy) serve(l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		go p.forward(conn)
	}
}

// track adds conns to those cut cuts, or closes them if cut already.
func (p *tcpProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listener == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *tcpProxy) forward(client net.Conn) {
	var server net.Conn
	err := errors.New("no target")
	first := int(p.next.Add(1))
	for i := range p.targets {
		// A target whose process is gone refuses at once.
		target := p.targets[(first+i)%len(p.targets)]
		if server, err = net.DialTimeout("tcp", target, 5*time.Second); err == nil {
			break
		}
	}
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client, server) {
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// cut closes every connection through the proxy and stops listening.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listener != nil {
		p.listener.Close()
		p.listener = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// heal listens again, on the same address.
func (p *tcpProxy) heal() error {
	var l net.Listener
	err := task.WaitFor(context.Background(), 10*time.Second, 100*time.Millisecond, "the proxy's port", func() (bool, error) {
		var err error
		l, err = net.Listen("tcp", p.addr)
		return err == nil, nil
	})
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.listener = l
	p.mu.Unlock()
	go p.serve(l)
	return nil
}

func (p *tcpProxy) close() { p.cut() }
