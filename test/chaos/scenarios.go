package main

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	"github.com/robot-operator/robot-operator/test/internal/localcluster"
	"github.com/robot-operator/robot-operator/test/internal/task"
)

// scenario is one fault. fault runs it while the workload creates and
// changes Robots, and returns the operator it leaves running.
type scenario struct {
	id    int
	name  string
	fault func(ctx context.Context, s *scenarioRun) error
}

func scenarioByID(id int) *scenario {
	for i := range scenarios {
		if scenarios[i].id == id {
			return &scenarios[i]
		}
	}
	return nil
}

var scenarios = []scenario{
	{1, "kill -9 the operator", killOperator},
	{2, "kill -9 the leader of two replicas", killLeader},
	{3, "kube-apiserver down 20 s", func(ctx context.Context, s *scenarioRun) error { return outage(ctx, s, "kube-apiserver") }},
	{4, "etcd down 20 s", func(ctx context.Context, s *scenarioRun) error { return outage(ctx, s, "etcd") }},
	{5, "watches expire (410 Gone)", watchExpiry},
	{6, "partition the leader from the API server", partitionLeader},
	{7, "another writer fights", fightOperator},
	{8, "churn: Robots come and go", churnRobots},
	{hostileScenario, "hostile input: random Robots at the schema's edges", hostileRobots},
	{10, "kill -9 every replica serving the conversion webhook", killWebhook},
}

// convergeTimeout is how long n Robots may take to converge once a fault
// ends: 10 minutes, and more for thousands (scenario 9), whose pods alone
// keep a 2-core machine busy for minutes.
func convergeTimeout(n int) time.Duration {
	return max(10*time.Minute, time.Duration(n)*600*time.Millisecond)
}

// hostileScenario is the scenario whose Robots are random shapes
// (hostile.go): -hostile of them, not -n.
const hostileScenario = 9

// scenarioRun is one scenario under way.
type scenarioRun struct {
	env        *environment
	c          *cluster
	w          *workload
	kubeconfig string
	log        *os.File
	rng        *rand.Rand
	op         *operator // the operator running now
	// replicas are the leader-elected replicas of scenarios 2 and 6, when
	// op is nil.
	replicas []*replica
	// auditChecks are the scenario's checks that read the whole audit log,
	// through convergence and the idle time after.
	auditChecks []func(audit []auditEvent) check
	// cleanups run when the scenario ends, after the operators have.
	cleanups []func()
	// faultStart and faultEnd bound the fault.
	faultStart, faultEnd time.Time
	// outageRate is the operator's requests per second while a component
	// was down, from its own metrics; negative when there was no outage.
	outageRate float64
	checks     []check
	notes      []string
	// done is closed when the scenario ends.
	done chan struct{}
	// want is how many Robots exist once the fault ends: N unless the
	// scenario deletes some.
	want int
	// deleted names the Robots the scenario deleted (their Deployments go
	// with them), and deletedGenerations sums their generations.
	deleted            map[string]bool
	deletedGenerations int64
	// mustRunThrough asks for the "operator ran" check without an
	// outage: the operator started before the fault must still run.
	mustRunThrough bool
	// opArgs are added to the operator's command line.
	opArgs []string
	// finish, when set, runs once the Robots have converged and the idle
	// time is over, before the operator stops, and adds the scenario's own
	// checks of what happened after the fault.
	finish func(ctx context.Context, audit []auditEvent, convergedAt, idleEnd time.Time) error
}

// supervise restarts, every second until done is closed, the components
// that have exited.
func supervise(ctx context.Context, all map[string]*component, done <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-done:
			return
		case <-ctx.Done():
			return
		}
		for _, name := range components {
			if p := all[name]; !p.running() {
				logf("%s had exited; restarting it", name)
				if err := p.restart(); err != nil {
					logf("%v", err)
				}
			}
		}
	}
}

// result is what the table shows of one scenario.
type result struct {
	s                   *scenario
	n                   int
	converge            time.Duration
	during, after, idle int
	generations         int64
	perGeneration       float64
	outageRate          float64
	checks              []check
	notes               []string
	wall                time.Duration
}

func (r *result) passed() bool {
	for _, c := range r.checks {
		if !c.ok {
			return false
		}
	}
	return true
}

func runScenario(ctx context.Context, env *environment, sc *scenario) (*result, error) {
	n, sized := env.cfg.n, env.cfg.n
	if sc.id == hostileScenario {
		// Fake nodes for as many pods as the random Robots may ask for,
		// counted in Robots of up to 3 replicas.
		n = env.cfg.hostile
		sized = (hostilePods(n) + 2) / 3
	}
	c, err := env.newCluster(ctx, sized)
	if err != nil {
		return nil, err
	}
	defer c.Down(ctx)
	kubeconfig, err := c.InstallOperatorRBAC(ctx)
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(env.Out, fmt.Sprintf("operator-%d.log", sc.id)))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	s := &scenarioRun{env: env, c: c, kubeconfig: kubeconfig, log: log, outageRate: -1, done: make(chan struct{}), want: n, deleted: map[string]bool{},
		rng: rand.New(rand.NewSource(env.cfg.seed + int64(sc.id))),
		w:   newWorkload(c, n, env.cfg.seed+int64(sc.id))}
	if err := s.w.createNamespace(ctx); err != nil {
		return nil, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	uids, err := watchUIDs(watchCtx, c)
	if err != nil {
		return nil, err
	}
	defer close(s.done)
	defer func() {
		if s.op != nil {
			s.op.kill()
		}
		for _, rp := range s.replicas {
			rp.kill()
		}
		for _, f := range s.cleanups {
			f()
		}
	}()

	start := time.Now()
	if err := sc.fault(ctx, s); err != nil {
		return nil, err
	}
	logf("scenario %d: the fault ended; waiting for every Robot to converge", sc.id)
	convergedAt, waitErr := waitConverged(ctx, c, s.want, convergeTimeout(s.want))
	if waitErr != nil {
		convergedAt = time.Now()
	}
	logf("scenario %d: converged %.1f s after the fault; counting writes for %s", sc.id, convergedAt.Sub(s.faultEnd).Seconds(), env.cfg.idle)
	select {
	case <-time.After(env.cfg.idle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	idleEnd := time.Now()
	stillRunning := s.op != nil
	if s.op != nil {
		select {
		case err := <-s.op.exited:
			stillRunning = false
			s.checks = append(s.checks, checkf("operator ran", false, "the operator exited: %v", err))
		default:
			// Through an outage the operator must keep running, never be
			// restarted: say so when it did.
			if s.outageRate >= 0 || s.mustRunThrough {
				s.checks = append(s.checks, checkf("operator ran", true, "the operator ran through the fault, never restarted"))
			}
		}
	}

	audit, err := readAudit(c.AuditLog)
	if err != nil {
		return nil, err
	}
	robots, err := c.Robots.RobotV1beta1().Robots(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	if s.finish != nil && stillRunning {
		if err := s.finish(ctx, audit, convergedAt, idleEnd); err != nil {
			return nil, err
		}
	}
	r := &result{s: sc, n: n, converge: convergedAt.Sub(s.faultEnd), outageRate: s.outageRate,
		during: writesIn(audit, s.faultStart, s.faultEnd, nil),
		after:  writesIn(audit, s.faultEnd, convergedAt, nil),
		idle:   writesIn(audit, convergedAt, idleEnd, nil)}
	r.generations = s.deletedGenerations
	for _, robot := range robots.Items {
		r.generations += robot.Generation
	}
	total := writesIn(audit, start, convergedAt, nil)
	perGeneration := float64(total) / float64(max(r.generations, 1))
	r.perGeneration = perGeneration
	hot := checkf("no hot loop", true, "%.2f writes per Robot generation (bound %d), %d writes in %s once converged",
		perGeneration, maxWritesPerGeneration, r.idle, env.cfg.idle)
	if perGeneration > maxWritesPerGeneration || r.idle > 0 {
		hot.ok = false
	}
	if s.outageRate >= 0 {
		hot.detail += fmt.Sprintf(", %.1f requests/s while down (bound %.0f)", s.outageRate, maxOutageRequestRate)
		if s.outageRate > maxOutageRequestRate {
			hot.ok = false
		}
	}
	r.checks = append([]check{
		checkConverged(ctx, c, s.want, waitErr),
		checkDeployments(ctx, c, uids, audit, s.deleted),
		checkEvents(ctx, c),
		hot,
	}, s.checks...)
	for _, c := range s.auditChecks {
		r.checks = append(r.checks, c(audit))
	}
	r.notes = s.notes
	for _, rp := range s.replicas {
		if err := rp.stop(); err != nil {
			logf("stopping replica %s: %v", rp.name, err)
		}
	}
	if stillRunning {
		if err := s.op.stop(); err != nil {
			logf("stopping the operator: %v", err)
		}
	}
	s.op = nil
	for _, c := range r.checks {
		logf("scenario %d: %s: %v: %s", sc.id, c.name, c.ok, c.detail)
	}
	return r, nil
}

// startOperator starts the operator and waits until its metrics answer.
func (s *scenarioRun) startOperator(ctx context.Context) error {
	op, err := s.env.startOperator(s.kubeconfig, s.log, s.opArgs...)
	if err != nil {
		return err
	}
	s.op = op
	return task.WaitFor(ctx, time.Minute, 100*time.Millisecond, "the operator's metrics", func() (bool, error) {
		select {
		case err := <-op.exited:
			return false, fmt.Errorf("the operator exited: %v", err)
		default:
		}
		_, err := op.requests()
		return err == nil, nil
	})
}

// churn starts the workload: the Robots are created, and one changed every
// interval until the returned stop is called, which waits for the creates.
func (s *scenarioRun) churn(ctx context.Context, interval time.Duration) (stop func() error) {
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- s.w.churn(ctx, interval, done) }()
	return func() error {
		close(done)
		return <-errc
	}
}

// killOperator (scenario 1) kills the operator with SIGKILL at a random
// moment 0-2 s after each start, and starts it again at once, while the
// Robots are created and changed.
func killOperator(ctx context.Context, s *scenarioRun) error {
	s.faultStart = time.Now()
	stop := s.churn(ctx, 200*time.Millisecond)
	for i := range s.env.cfg.kills {
		op, err := s.env.startOperator(s.kubeconfig, s.log)
		if err != nil {
			return err
		}
		select {
		case <-time.After(time.Duration(s.rng.Int63n(int64(2 * time.Second)))):
		case <-ctx.Done():
			op.kill()
			return ctx.Err()
		}
		op.kill()
		if (i+1)%10 == 0 {
			logf("killed the operator %d times; %d Robots created", i+1, s.w.created.Load())
		}
	}
	s.faultEnd = time.Now()
	if err := s.startOperator(ctx); err != nil {
		return err
	}
	s.notes = append(s.notes, fmt.Sprintf("%d kills in %.0f s", s.env.cfg.kills, s.faultEnd.Sub(s.faultStart).Seconds()))
	return stop()
}

// outageDown is how long scenarios 3 and 4 keep a component down.
const outageDown = 20 * time.Second

// outage (scenarios 3 and 4) kills a component of the cluster with SIGKILL
// once a third of the Robots are created, and starts it again with the same
// command line 20 s later. The operator keeps running throughout.
func outage(ctx context.Context, s *scenarioRun, name string) error {
	if err := s.startOperator(ctx); err != nil {
		return err
	}
	// The controller manager and the scheduler exit when they cannot renew
	// their leases, as in any cluster, where the kubelet or systemd starts
	// them again: so does this supervisor, from their command lines taken
	// now.
	all := map[string]*component{}
	for _, other := range components {
		p, err := s.c.component(other)
		if err != nil {
			return err
		}
		all[other] = p
	}
	component := all[name]
	stop := s.churn(ctx, 100*time.Millisecond)
	if err := task.WaitFor(ctx, 5*time.Minute, 50*time.Millisecond, "a third of the Robots", func() (bool, error) {
		return s.w.created.Load() >= int64(s.w.n/3), nil
	}); err != nil {
		return err
	}
	before, err := s.op.requests()
	if err != nil {
		return err
	}
	// While the component is down, its ports are free, and kwokctl would
	// give them to a cluster made meanwhile (make test runs other parts
	// beside this one): none is made until every component is back.
	unlock, err := localcluster.LockPorts()
	if err != nil {
		return err
	}
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	s.faultStart = time.Now()
	if err := component.kill(); err != nil {
		return err
	}
	logf("killed %s with %d Robots created", name, s.w.created.Load())
	select {
	case <-time.After(outageDown):
	case <-ctx.Done():
		return ctx.Err()
	}
	after, err := s.op.requests()
	if err != nil {
		return fmt.Errorf("the operator's metrics while %s was down: %w", name, err)
	}
	s.outageRate = (after - before) / time.Since(s.faultStart).Seconds()
	if err := component.restart(); err != nil {
		return err
	}
	restarted := time.Now()
	if err := s.c.waitReady(ctx, 2*time.Minute); err != nil {
		return err
	}
	go supervise(ctx, all, s.done)
	// The controller manager and the scheduler may still be down: the
	// supervisor starts them within a second, and they listen soon after.
	locked = false
	go func() {
		defer unlock()
		_ = task.WaitFor(ctx, time.Minute, 100*time.Millisecond, "every component of the cluster to listen", func() (bool, error) {
			return !slices.ContainsFunc(components, func(name string) bool { return !all[name].listening() }), nil
		})
	}()
	s.faultEnd = time.Now()
	logf("%s is back after %.1f s", name, s.faultEnd.Sub(s.faultStart).Seconds())
	s.notes = append(s.notes, fmt.Sprintf("down %.1f s", s.faultEnd.Sub(s.faultStart).Seconds()))
	s.finish = func(_ context.Context, audit []auditEvent, _, _ time.Time) error {
		back, detail := informersBack(audit, s.faultStart, restarted, s.faultEnd)
		s.checks = append(s.checks, checkf("informers back", back <= maxInformersBack,
			"the operator listed or watched every kind it had before the fault again %.1f s after the API server answered (bound %.0f s; negative: before the suite saw /readyz answer): %s",
			back.Seconds(), maxInformersBack.Seconds(), detail))
		return nil
	}
	return stop()
}

// informersBack returns when, relative to answered (the API server
// answering again), the last of the operator's informers had listed or
// watched its resource with success after restarted (the failed component
// started again), and each resource's time. The resources are those the
// operator had listed or watched before faultStart. One whose informer
// asked nothing from faultStart on kept its watch through the fault (an
// API server that stayed up, serving its watch cache while etcd was down)
// and counts as back at once; one that asked and never succeeded again
// counts as an hour.
func informersBack(audit []auditEvent, faultStart, restarted, answered time.Time) (time.Duration, string) {
	var resources []string
	first := map[string]time.Time{}
	asked := map[string]bool{}
	for i := range audit {
		e := &audit[i]
		if e.Verb != "list" && e.Verb != "watch" {
			continue
		}
		resource := e.ObjectRef.Resource
		if !e.RequestReceived.Before(faultStart) {
			asked[resource] = true
		}
		if e.ResponseStatus.Code != 200 {
			continue
		}
		switch {
		case e.RequestReceived.Before(faultStart):
			if !slices.Contains(resources, resource) {
				resources = append(resources, resource)
			}
		case !e.RequestReceived.Before(restarted):
			if _, seen := first[resource]; !seen {
				first[resource] = e.RequestReceived
			}
		}
	}
	slices.Sort(resources)
	last := time.Duration(math.MinInt64)
	var parts []string
	for _, resource := range resources {
		at, ok := first[resource]
		took := time.Hour
		switch {
		case !asked[resource]:
			took = 0
			parts = append(parts, resource+" kept its watch")
		case ok:
			took = at.Sub(answered)
			parts = append(parts, fmt.Sprintf("%s %.1f s", resource, took.Seconds()))
		default:
			parts = append(parts, resource+" never")
		}
		last = max(last, took)
	}
	if len(resources) == 0 {
		return time.Hour, "no list or watch of the operator's before the fault"
	}
	return last, strings.Join(parts, ", ")
}

// foughtRobots is how many Robots' Deployments the other writer of
// scenario 7 fights over.
const foughtRobots = 5

// fightOperator (scenario 7) sets spec.replicas of a few Robots'
// Deployments every second, as another writer would, while the other
// Robots are created and changed. Those Robots must say DeploymentContested
// during the fight and the operator must back off its reverts.
func fightOperator(ctx context.Context, s *scenarioRun) error {
	s.w.skip = foughtRobots
	if err := s.startOperator(ctx); err != nil {
		return err
	}
	stop := s.churn(ctx, 200*time.Millisecond)
	var fought []string
	for i := range foughtRobots {
		fought = append(fought, robotName(i))
	}
	if err := task.WaitFor(ctx, 5*time.Minute, 200*time.Millisecond, "the fought Robots' Deployments", func() (bool, error) {
		for _, name := range fought {
			if _, err := s.c.Kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	contested := map[string]bool{}
	s.faultStart = time.Now()
	tick := time.NewTicker(time.Second)
	for time.Since(s.faultStart) < s.env.cfg.fight {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		for _, name := range fought {
			if _, err := s.c.Kube.AppsV1().Deployments(namespace).Patch(ctx, name, types.MergePatchType,
				[]byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{FieldManager: "chaos-fighter"}); err != nil {
				return fmt.Errorf("the other writer: %w", err)
			}
			robot, err := s.c.Robots.RobotV1beta1().Robots(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, c := range robot.Status.Conditions {
				if c.Reason == robotv1beta1.ReasonDeploymentContested {
					contested[name] = true
				}
			}
		}
	}
	tick.Stop()
	s.faultEnd = time.Now()
	if err := stop(); err != nil {
		return err
	}

	var missing []string
	for _, name := range fought {
		if !contested[name] {
			missing = append(missing, name)
		}
	}
	s.checks = append(s.checks, checkf("contested", len(missing) == 0, "%d of %d fought Robots said DeploymentContested during the fight; not: %v",
		len(fought)-len(missing), len(fought), missing))
	// The operator's reverts of the fought Deployments, per minute of the
	// fight: backing off, a fight costs a few writes in its first minute and
	// about one a minute after (internal/drift).
	audit, err := readAudit(s.c.AuditLog)
	if err != nil {
		return err
	}
	minutes := s.faultEnd.Sub(s.faultStart).Minutes()
	bound := 6 + 2*int(math.Ceil(math.Max(0, minutes-1)))
	var perDeployment []string
	over := false
	for _, name := range fought {
		n := writesIn(audit, s.faultStart, s.faultEnd, func(e *auditEvent) bool {
			return e.ObjectRef.Resource == "deployments" && e.ObjectRef.Subresource == "" && e.ObjectRef.Name == name
		})
		perDeployment = append(perDeployment, fmt.Sprintf("%d", n))
		if n > bound {
			over = true
		}
	}
	s.checks = append(s.checks, checkf("backs off", !over, "operator writes to each fought Deployment during the %.1f min fight: %s (bound %d)",
		minutes, strings.Join(perDeployment, ", "), bound))
	s.notes = append(s.notes, fmt.Sprintf("reverts per fought Deployment in %.1f min: %s", minutes, strings.Join(perDeployment, ", ")))
	return nil
}

// renderTable renders the results as a markdown table.
func renderTable(cfg config, results []*result) string {
	var b strings.Builder
	hostile := ""
	if slices.Contains(cfg.scenarios, hostileScenario) {
		hostile = fmt.Sprintf(" (scenario %d: %d)", hostileScenario, cfg.hostile)
	}
	fmt.Fprintf(&b, "N = %d Robots per scenario%s, seed %d\n\n", cfg.n, hostile, cfg.seed)
	b.WriteString("| scenario | converged after the fault | operator writes during the fault | after, until converged | once converged (30 s) | writes per generation | requests/s while down | converged | deployments | events | no hot loop | scenario's own | notes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		mark := func(name string) string {
			for _, c := range r.checks {
				if c.name == name {
					if c.ok {
						return "pass"
					}
					return "**FAIL**"
				}
			}
			return "-"
		}
		var own []string
		for _, c := range r.checks[4:] {
			own = append(own, c.name+": "+mark(c.name))
		}
		rate := "-"
		if r.outageRate >= 0 {
			rate = fmt.Sprintf("%.1f", r.outageRate)
		}
		fmt.Fprintf(&b, "| %d %s | %.1f s | %d | %d | %d | %.2f | %s | %s | %s | %s | %s | %s | %s |\n",
			r.s.id, r.s.name, r.converge.Seconds(), r.during, r.after, r.idle,
			r.perGeneration, rate,
			mark("converged"), mark("deployments"), mark("events"), mark("no hot loop"),
			strings.Join(own, "<br>"), strings.Join(r.notes, "; "))
	}
	return b.String()
}
