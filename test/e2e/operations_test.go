//go:build e2e

package e2e

// The production-operations features: leader election, metrics, health
// probes and pprof, graceful shutdown, JSON logs. The tests that need
// operators of their own stop the shared one first, so that only the
// processes under test write, and start it again when they end.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

const (
	// killTakeoverLimit bounds the time from a leader's SIGKILL to a Robot
	// created right then being Ready: the lease duration (15 s) and a few
	// seconds more.
	killTakeoverLimit = 20 * time.Second
	// termTakeoverLimit bounds the time from a leader's SIGTERM to its
	// follower holding the Lease: the leader releases it, and the follower
	// takes it at its next try.
	termTakeoverLimit = 5 * time.Second
)

// TestLeaderElection: of two replicas with -leader-elect, exactly one leads
// and writes; when it is killed the other takes over after the lease
// duration, when it is stopped with SIGTERM the next one takes over at once,
// and no object is ever written by two replicas at the same time.
func TestLeaderElection(t *testing.T) {
	exclusive(t, "it pauses the shared operator and runs replicas of its own that compete for the leader election Lease")
	requireAuditLog(t)
	begin := time.Now()
	pauseSharedOperator(t)
	leaseID := newLease(t)
	// A 1 s retry period, not the default 2 s: client-go jitters retries by
	// up to 120 %, so with 2 s a follower may notice a dead leader up to
	// 15 + 4.4 + 4.4 s after its last renewal, past the 20 s this test
	// holds the takeover to; with 1 s, at most 15 + 2.2 + 2.2 s.
	args := sharedArgs(append(leaderElectArgs(leaseID), "-leader-elect-retry-period=1s")...)
	names := map[string]string{}

	// A and B start together; one of them wins.
	leader, follower := electOne(t, leaseID, startReplica(t, "A", "leader-a", args, names), startReplica(t, "B", "leader-b", args, names))
	first := leader

	// The follower keeps its caches warm: ready, yet not working.
	followerHealth := "http://" + mustServingAddress(t, follower.o, follower.off, "health probes")
	waitForStatus(t, followerHealth+"/readyz", 200)
	mustGetStatus(t, followerHealth+"/healthz", 200)

	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "one", 1))
	waitForRobotReady(t, ns, "one")
	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, Namespace: ns, After: begin})
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) == 0 {
		t.Errorf("the audit log has no write by the operator in %s, though Robot one is Ready", ns)
	}
	for _, w := range writes {
		if id := userAgentIdentity(w.UserAgent); id != leader.id {
			t.Errorf("write by %s, not by the leader %s: %s", nameOf(names, id), leader.name, &w)
		}
	}
	if containsLog(follower.o, follower.off, `"Started workers"`) {
		t.Errorf("the follower %s started workers while %s led", follower.name, leader.name)
	}

	// a. The leader is killed outright: the follower takes over once the
	// Lease has expired.
	killed := kill(t, leader.o)
	t.Logf("sent SIGKILL to the leader %s", leader.name)
	createRobot(t, newRobot(ns, "two", 1))
	took := measureTakeover(t, leaseID, follower.id, ns, "two", killed)
	t.Logf("takeover: kill -9 of the leader -> Lease held by the follower: %v (its acquireTime: %v after the kill)", took.lease, took.acquired)
	t.Logf("takeover: kill -9 of the leader -> Robot created at the kill Ready: %v", took.ready)
	if took.ready > killTakeoverLimit {
		t.Errorf("after the leader was killed, the Robot created then took %v to be Ready, want at most %v (the Lease changed hands after %v; "+
			"with the default -leader-elect-* flags client-go allows up to 15 s + 2 x 4.4 s, as a follower retries every 2 s to 4.4 s)",
			took.ready, killTakeoverLimit, took.lease)
	}
	mustLog(t, follower.o, follower.off, `"Became the leader"`, 10*time.Second)
	leader, second := follower, follower
	// The new leader writes the first Robot's Deployment too.
	patchRobot(t, ns, "one", `{"spec":{"replicas":2}}`)
	waitForRobotReady(t, ns, "one")

	// b. A fresh follower, C; the leader is stopped with SIGTERM: it hands
	// the Lease over at once.
	c := startReplica(t, "C", "leader-c", args, names)
	mustFollow(t, c, leader.id)
	waitForStatus(t, "http://"+mustServingAddress(t, c.o, c.off, "health probes")+"/readyz", 200)

	termed := terminate(t, leader.o)
	t.Logf("sent SIGTERM to the leader %s", leader.name)
	createRobot(t, newRobot(ns, "three", 1))
	took = measureTakeover(t, leaseID, c.id, ns, "three", termed)
	exited := waitExitedCleanly(t, leader.o, 40*time.Second)
	t.Logf("takeover: SIGTERM to the leader -> Lease held by C: %v (its acquireTime: %v after the SIGTERM); the old leader exited 0 after %v",
		took.lease, took.acquired, exited.Sub(termed).Round(time.Millisecond))
	t.Logf("takeover: SIGTERM to the leader -> Robot created at the SIGTERM Ready: %v", took.ready)
	if took.lease > termTakeoverLimit {
		t.Errorf("after SIGTERM to the leader, C held the Lease only after %v, want at most %v", took.lease, termTakeoverLimit)
	}
	mustLogInOrder(t, leader.o, leader.off, `"Shutting down`, `"Workers stopped"`, `"Released the leader election Lease"`, `"Stopped"`)
	mustLog(t, c.o, c.off, `"Started workers"`, 10*time.Second)
	patchRobot(t, ns, "one", `{"spec":{"replicas":3}}`)
	waitForRobotReady(t, ns, "one")
	terminate(t, c.o)
	waitExitedCleanly(t, c.o, 40*time.Second)

	// c. No object was ever written by two replicas at once, and each
	// leader's last write came before the next one's first.
	checkWritersTakeTurns(t, ns, begin, names, []string{first.id, second.id, c.id})
}

// TestLeaderPausedPastItsLease: a leader frozen (SIGSTOP, as a stalled VM or
// a stuck node would freeze it) for longer than the lease duration has been
// replaced when it resumes: it must write nothing more, and exit with
// status 1.
func TestLeaderPausedPastItsLease(t *testing.T) {
	exclusive(t, "it pauses the shared operator and runs replicas of its own that compete for the leader election Lease")
	requireAuditLog(t)
	pauseSharedOperator(t)
	leaseID := newLease(t)
	args := sharedArgs(leaderElectArgs(leaseID)...)
	names := map[string]string{}
	leader, follower := electOne(t, leaseID, startReplica(t, "A", "paused-a", args, names), startReplica(t, "B", "paused-b", args, names))
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "one", 1))
	waitForRobotReady(t, ns, "one")

	stopped := time.Now()
	if err := leader.o.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if leader.o.running() {
			_ = leader.o.cmd.Process.Signal(syscall.SIGCONT)
		}
	})
	t.Logf("sent SIGSTOP to the leader %s", leader.name)
	patchRobot(t, ns, "one", `{"spec":{"replicas":2}}`)
	eventually(t, 60*time.Second, follower.name+" holds the Lease", func(ctx context.Context) (bool, string, error) {
		holder, err := leaseHolder(ctx, leaseID)
		return holder == follower.id, "holder " + nameOf(names, holder), err
	})
	waitForRobotReady(t, ns, "one")

	resumed := time.Now()
	if err := leader.o.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("sent SIGCONT to %s, %v after SIGSTOP", leader.name, resumed.Sub(stopped).Round(time.Millisecond))
	// A change right away: only the leader, B, may act on it.
	patchRobot(t, ns, "one", `{"spec":{"replicas":3}}`)
	waitForRobotReady(t, ns, "one")
	select {
	case <-leader.o.exited:
	case <-time.After(40 * time.Second):
		t.Fatalf("%s still runs 40 s after it resumed, though %s holds the Lease", leader.name, follower.name)
	}
	exited := time.Now()
	t.Logf("%s exited (%v) %v after it resumed", leader.name, leader.o.waitErr, exited.Sub(resumed).Round(time.Millisecond))
	if leader.o.waitErr == nil || !strings.Contains(leader.o.waitErr.Error(), "exit status 1") {
		t.Errorf("%s, replaced while it was frozen, exited with %v, want exit status 1", leader.name, leader.o.waitErr)
	}
	if !containsLog(leader.o, leader.off, `"Lost the leader election Lease`) {
		t.Errorf("%s did not log that it lost the Lease", leader.name)
	}

	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, Namespace: ns, After: stopped})
	if err != nil {
		t.Fatal(err)
	}
	var late []string
	for _, w := range writes {
		if userAgentIdentity(w.UserAgent) == leader.id {
			late = append(late, fmt.Sprintf("%v after it resumed: %s", w.RequestReceivedTimestamp.Sub(resumed).Round(time.Millisecond), &w))
		}
	}
	if len(late) > 0 {
		t.Errorf("%s wrote %d times after %s had taken the Lease over, while it ran on for %v after it resumed (its renew deadline) before exiting; "+
			"only the holder of the Lease may write:\n%s", leader.name, len(late), follower.name, exited.Sub(resumed).Round(time.Millisecond), strings.Join(late, "\n"))
	}
	terminate(t, follower.o)
	waitExitedCleanly(t, follower.o, 40*time.Second)
}

// replica is an operator process with -leader-elect.
type replica struct {
	name string // for people: A, B, C
	o    *operator
	off  int64  // where its log begins
	id   string // its identity, in the Lease and in its user agent
}

// startReplica starts an operator with args, which include -leader-elect,
// logging to _output/e2e-operator-LOG.log, and records its name in names,
// by identity.
func startReplica(t *testing.T, name, log string, args []string, names map[string]string) *replica {
	t.Helper()
	r := &replica{name: name, o: extraOperator(t, log, args)}
	r.off = launch(t, r.o)
	r.id = mustIdentity(t, r.o, r.off)
	names[r.id] = name
	t.Logf("%s is %s", name, r.id)
	return r
}

// electOne waits for one of x and y to hold the Lease, checks that it leads
// and the other follows, and returns the leader and the follower.
func electOne(t *testing.T, leaseID string, x, y *replica) (leader, follower *replica) {
	t.Helper()
	var holder string
	eventually(t, operatorStartTimeout, fmt.Sprintf("%s or %s holds the Lease", x.name, y.name), func(ctx context.Context) (bool, string, error) {
		var err error
		holder, err = leaseHolder(ctx, leaseID)
		return holder != "", "holder " + strconv.Quote(holder), err
	})
	switch holder {
	case x.id:
		leader, follower = x, y
	case y.id:
		leader, follower = y, x
	default:
		t.Fatalf("the Lease is held by %q, neither %s (%s) nor %s (%s)", holder, x.name, x.id, y.name, y.id)
	}
	t.Logf("%s leads, %s follows", leader.name, follower.name)
	mustLog(t, leader.o, leader.off, `"Became the leader"`, operatorStartTimeout)
	mustLog(t, leader.o, leader.off, `"Started workers"`, operatorStartTimeout)
	mustFollow(t, follower, leader.id)
	return leader, follower
}

// mustFollow waits for r to log that it follows leader, and checks that it
// does not lead.
func mustFollow(t *testing.T, r *replica, leader string) {
	t.Helper()
	needle := fmt.Sprintf(`"Following the leader" leader=%q`, leader)
	mustLog(t, r.o, r.off, needle, operatorStartTimeout)
	for _, s := range []string{`"Became the leader"`, `"Started workers"`} {
		if containsLog(r.o, r.off, s) {
			t.Errorf("%s, a follower, logged %s", r.name, s)
		}
	}
}

func containsLog(o *operator, offset int64, needle string) bool {
	return strings.Contains(logSince(o, offset), needle)
}

// mustLogInOrder fails the test unless the operator's log, from offset on,
// contains each needle, in this order.
func mustLogInOrder(t *testing.T, o *operator, offset int64, needles ...string) {
	t.Helper()
	log, at := logSince(o, offset), 0
	for _, needle := range needles {
		i := strings.Index(log[at:], needle)
		if i < 0 {
			t.Errorf("operator %s did not log %s after %s", o.logPath, needle, strings.Join(needles[:slices.Index(needles, needle)], ", "))
			return
		}
		at += i + len(needle)
	}
}

func nameOf(names map[string]string, id string) string {
	if name, ok := names[id]; ok {
		return name
	}
	return strconv.Quote(id)
}

// waitForStatus waits until GET url answers want.
func waitForStatus(t *testing.T, url string, want int) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("GET %s answers %d", url, want), func(context.Context) (bool, string, error) {
		code, body, err := httpGet(url)
		return code == want, fmt.Sprintf("%d %q", code, truncate(body, 100)), err
	})
}

// takeover is how long after a leader was stopped its successor took over.
type takeover struct {
	lease    time.Duration // until the test saw the successor hold the Lease
	acquired time.Duration // until the Lease's acquireTime
	ready    time.Duration // until a Robot created then was Ready
}

// measureTakeover polls, from since on, until the Lease is held by want and
// the Robot is Ready, and says when each happened.
func measureTakeover(t *testing.T, leaseID, want, ns, robot string, since time.Time) takeover {
	t.Helper()
	const timeout = 60 * time.Second
	var took takeover
	var lastHolder, lastRobot string
	for took.lease == 0 || took.ready == 0 {
		if time.Since(since) > timeout {
			t.Fatalf("%v after the leader was stopped: the Lease is held by %q (want %q); Robot %s/%s: %s", timeout, lastHolder, want, ns, robot, lastRobot)
		}
		if took.lease == 0 {
			lease, err := env.kube.CoordinationV1().Leases(leaseNamespace).Get(t.Context(), leaseID, metav1.GetOptions{})
			switch {
			case err != nil:
				lastHolder = "error: " + err.Error()
			case ptr.Deref(lease.Spec.HolderIdentity, "") == want:
				took.lease = time.Since(since)
				if lease.Spec.AcquireTime != nil {
					took.acquired = lease.Spec.AcquireTime.Sub(since).Round(time.Millisecond)
				}
			default:
				lastHolder = ptr.Deref(lease.Spec.HolderIdentity, "")
			}
		}
		if took.ready == 0 {
			r, err := env.robots.RobotV1beta1().Robots(ns).Get(t.Context(), robot, metav1.GetOptions{})
			switch {
			case err != nil:
				lastRobot = "error: " + err.Error()
			case robotConverged(r):
				took.ready = time.Since(since)
			default:
				lastRobot = summarizeRobot(r)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	took.lease, took.ready = took.lease.Round(time.Millisecond), took.ready.Round(time.Millisecond)
	return took
}

// checkWritersTakeTurns reads from the audit log the operator's writes in
// ns since begin, and fails the test if writes by two identities to one
// object interleave in time, or if a leader of leaders (in the order they
// led) wrote anything after the next one's first write. It prints each
// Deployment's writers.
func checkWritersTakeTurns(t *testing.T, ns string, begin time.Time, names map[string]string, leaders []string) {
	t.Helper()
	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, Namespace: ns, After: begin})
	if err != nil {
		t.Fatal(err)
	}
	type span struct {
		first, last time.Time
		n           int
	}
	byObject := map[string][]auditEvent{}
	byWriter := map[string]*span{}
	for _, w := range writes {
		id := userAgentIdentity(w.UserAgent)
		if _, ok := names[id]; !ok {
			t.Errorf("write by an operator that is not one of the test's: %s", &w)
		}
		key := "?"
		if ref := w.ObjectRef; ref != nil {
			key = ref.Resource
			if ref.Subresource != "" {
				key += "/" + ref.Subresource
			}
			key += " " + ref.Namespace + "/" + ref.Name
		}
		byObject[key] = append(byObject[key], w)
		at := w.RequestReceivedTimestamp
		if s := byWriter[id]; s == nil {
			byWriter[id] = &span{at, at, 1}
		} else {
			s.last, s.n = at, s.n+1
		}
	}

	timeline := func(events []auditEvent) string {
		var b strings.Builder
		for _, e := range events {
			fmt.Fprintf(&b, "\n    %s %s %s -> %d", e.RequestReceivedTimestamp.UTC().Format("15:04:05.000000"), nameOf(names, userAgentIdentity(e.UserAgent)), e.Verb, e.code())
		}
		return b.String()
	}
	for _, key := range slices.Sorted(maps.Keys(byObject)) {
		events := byObject[key]
		spans := map[string]*span{}
		for _, e := range events {
			id, at := userAgentIdentity(e.UserAgent), e.RequestReceivedTimestamp
			if s := spans[id]; s == nil {
				spans[id] = &span{at, at, 1}
			} else {
				s.last, s.n = at, s.n+1
			}
		}
		ids := slices.Sorted(maps.Keys(spans))
		var summary []string
		for _, id := range ids {
			s := spans[id]
			summary = append(summary, fmt.Sprintf("%s x%d [%s .. %s]", nameOf(names, id), s.n, s.first.UTC().Format("15:04:05.000"), s.last.UTC().Format("15:04:05.000")))
		}
		for i, x := range ids {
			for _, y := range ids[i+1:] {
				if sx, sy := spans[x], spans[y]; !sx.first.After(sy.last) && !sy.first.After(sx.last) {
					t.Errorf("%s: the writes of %s and %s interleave; its writers in time:%s", key, nameOf(names, x), nameOf(names, y), timeline(events))
				}
			}
		}
		if strings.HasPrefix(key, "deployments ") {
			t.Logf("writers of %s: %s", key, strings.Join(summary, ", "))
		}
	}
	if d := "deployments " + ns + "/one"; len(byObject[d]) > 0 {
		for _, id := range leaders {
			if !slices.ContainsFunc(byObject[d], func(e auditEvent) bool { return userAgentIdentity(e.UserAgent) == id }) {
				t.Errorf("%s was not written by %s, each leader in turn should have: its writers:%s", d, nameOf(names, id), timeline(byObject[d]))
			}
		}
	} else {
		t.Errorf("the audit log has no write of Deployment %s/one", ns)
	}

	for i := 0; i+1 < len(leaders); i++ {
		before, after := byWriter[leaders[i]], byWriter[leaders[i+1]]
		if before == nil || after == nil {
			t.Errorf("no write in %s by leader %s or by its successor %s", ns, nameOf(names, leaders[i]), nameOf(names, leaders[i+1]))
			continue
		}
		t.Logf("leader %s wrote %d times in %s, the last at %s; its successor %s first wrote at %s (%v later)",
			nameOf(names, leaders[i]), before.n, ns, before.last.UTC().Format("15:04:05.000000"), nameOf(names, leaders[i+1]),
			after.first.UTC().Format("15:04:05.000000"), after.first.Sub(before.last).Round(time.Millisecond))
		if !before.last.Before(after.first) {
			t.Errorf("leader %s wrote at %s, after its successor %s first wrote, at %s", nameOf(names, leaders[i]),
				before.last.UTC().Format("15:04:05.000000"), nameOf(names, leaders[i+1]), after.first.UTC().Format("15:04:05.000000"))
		}
	}
}

// TestMetrics: the shared operator's /metrics has the operator's, the
// workqueue's, the REST client's and the process's series, and they move as
// a Robot is created and scaled.
func TestMetrics(t *testing.T) {
	parallel(t)
	address := servingAddress(env.operator, 0, "metrics")
	if address == "" {
		t.Fatalf("the shared operator did not log where it serves metrics; see %s", env.operator.logPath)
	}
	url := "http://" + address + "/metrics"
	before := scrape(t, url)
	t.Logf("before: %s", before.brief())

	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "web", 1))
	waitForRobotReady(t, ns, "web")
	var created metrics
	eventually(t, 15*time.Second, "the metrics count the new Robot's syncs and its time to Ready", func(context.Context) (bool, string, error) {
		var err error
		if created, err = scrapeErr(url); err != nil {
			return false, "", err
		}
		done := created.sum("robot_operator_syncs_total", `result="success"`) > before.sum("robot_operator_syncs_total", `result="success"`) &&
			created.sum("robot_operator_time_to_ready_seconds_count") >= before.sum("robot_operator_time_to_ready_seconds_count")+1 &&
			created.sum("robot_operator_robots", `ready="True"`) >= 1 &&
			created.sum("workqueue_adds_total", `name="robot"`) > before.sum("workqueue_adds_total", `name="robot"`)
		return done, created.brief(), nil
	})

	patchRobot(t, ns, "web", `{"spec":{"replicas":2}}`)
	waitForRobotReady(t, ns, "web")
	var scaled metrics
	eventually(t, 15*time.Second, "the metrics count the scaled Robot's time to Ready", func(context.Context) (bool, string, error) {
		var err error
		if scaled, err = scrapeErr(url); err != nil {
			return false, "", err
		}
		return scaled.sum("robot_operator_time_to_ready_seconds_count") >= created.sum("robot_operator_time_to_ready_seconds_count")+1, scaled.brief(), nil
	})

	for _, series := range []struct {
		name   string
		labels []string
	}{
		{"robot_operator_build_info", []string{`goversion="` + runtime.Version() + `"`}},
		{"robot_operator_syncs_total", []string{`result="success"`}},
		{"robot_operator_sync_duration_seconds_count", nil},
		{"robot_operator_sync_duration_seconds_bucket", nil},
		{"robot_operator_robots", []string{`ready="True"`}},
		{"robot_operator_robots", []string{`ready="False"`}},
		{"robot_operator_robots", []string{`ready="Unknown"`}},
		{"robot_operator_time_to_ready_seconds_count", nil},
		{"robot_operator_time_to_ready_seconds_sum", nil},
		{"workqueue_adds_total", []string{`name="robot"`}},
		{"workqueue_depth", []string{`name="robot"`}},
		{"workqueue_queue_duration_seconds_count", []string{`name="robot"`}},
		{"workqueue_work_duration_seconds_count", []string{`name="robot"`}},
		{"workqueue_unfinished_work_seconds", []string{`name="robot"`}},
		{"workqueue_longest_running_processor_seconds", []string{`name="robot"`}},
		{"workqueue_retries_total", []string{`name="robot"`}},
		{"rest_client_request_duration_seconds_count", nil},
		{"rest_client_rate_limiter_duration_seconds_count", nil},
		{"go_goroutines", nil},
		{"process_resident_memory_bytes", nil},
	} {
		if !scaled.has(series.name, series.labels...) {
			t.Errorf("/metrics has no series %s%v", series.name, series.labels)
		}
	}
	if !scaled.has("rest_client_requests_total", `code="200"`) && !scaled.has("rest_client_requests_total", `code="201"`) {
		t.Errorf("/metrics has no series rest_client_requests_total with code 200 or 201: %v", scaled.lines("rest_client_requests_total"))
	}
	if got := scaled.sum("robot_operator_syncs_total", `result="success"`) - before.sum("robot_operator_syncs_total", `result="success"`); got < 2 {
		t.Errorf("robot_operator_syncs_total{result=\"success\"} grew by %v over a create and a scale, want at least 2", got)
	}
	if got := scaled.sum("go_goroutines"); got <= 0 {
		t.Errorf("go_goroutines = %v", got)
	}
	if got := scaled.sum("process_resident_memory_bytes"); got <= 0 {
		t.Errorf("process_resident_memory_bytes = %v", got)
	}
	t.Logf("after the create and the scale: %s", scaled.brief())
	var sample []string
	for _, s := range scaled {
		if strings.HasPrefix(s.name, "robot_operator_") && !strings.HasSuffix(s.name, "_bucket") {
			sample = append(sample, s.line)
		}
	}
	t.Logf("a sample of /metrics:\n%s\n%s", strings.Join(sample, "\n"), strings.Join(scaled.lines("workqueue_adds_total", "rest_client_requests_total"), "\n"))
}

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels string // as written, without the braces
	value  float64
	line   string
}

type metrics []sample

var labelPair = regexp.MustCompile(`[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"`)

// scrape GETs url and parses the Prometheus text format it answers.
func scrape(t *testing.T, url string) metrics {
	t.Helper()
	m, err := scrapeErr(url)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func scrapeErr(url string) (metrics, error) {
	code, body, err := httpGet(url)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if code != 200 {
		return nil, fmt.Errorf("GET %s: %d %q", url, code, truncate(body, 200))
	}
	var m metrics
	for line := range strings.Lines(body) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := sample{line: line}
		rest := line
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			end := strings.LastIndex(line, "}")
			if end < i {
				return nil, fmt.Errorf("GET %s: unreadable line %q", url, line)
			}
			s.name, s.labels, rest = line[:i], line[i+1:end], line[end+1:]
		} else if i >= 0 {
			s.name, rest = line[:i], line[i:]
		}
		fields := strings.Fields(rest)
		if s.name == "" || len(fields) == 0 {
			return nil, fmt.Errorf("GET %s: unreadable line %q", url, line)
		}
		if s.value, err = strconv.ParseFloat(fields[0], 64); err != nil {
			return nil, fmt.Errorf("GET %s: unreadable value in %q: %w", url, line, err)
		}
		m = append(m, s)
	}
	return m, nil
}

// matching returns the samples of the series name that carry every label
// pair given (as `key="value"`).
func (m metrics) matching(name string, labels ...string) []sample {
	var found []sample
	for _, s := range m {
		if s.name != name {
			continue
		}
		pairs := labelPair.FindAllString(s.labels, -1)
		if !slices.ContainsFunc(labels, func(l string) bool { return !slices.Contains(pairs, l) }) {
			found = append(found, s)
		}
	}
	return found
}

func (m metrics) has(name string, labels ...string) bool { return len(m.matching(name, labels...)) > 0 }

// sum adds the values of the samples that matching returns.
func (m metrics) sum(name string, labels ...string) float64 {
	var total float64
	for _, s := range m.matching(name, labels...) {
		total += s.value
	}
	return total
}

// lines returns the lines of the series named.
func (m metrics) lines(names ...string) []string {
	var lines []string
	for _, s := range m {
		if slices.Contains(names, s.name) {
			lines = append(lines, s.line)
		}
	}
	return lines
}

// brief describes the figures the tests watch.
func (m metrics) brief() string {
	return fmt.Sprintf("syncs success %v, error %v; time_to_ready count %v; robots ready=True %v; workqueue adds %v, retries %v",
		m.sum("robot_operator_syncs_total", `result="success"`), m.sum("robot_operator_syncs_total", `result="error"`),
		m.sum("robot_operator_time_to_ready_seconds_count"), m.sum("robot_operator_robots", `ready="True"`),
		m.sum("workqueue_adds_total", `name="robot"`), m.sum("workqueue_retries_total", `name="robot"`))
}

// TestHealthProbes: /readyz answers 503 until the informer caches have
// synced and 200 from then on, /healthz 200; a follower is ready too, without
// working; pprof is served only where -pprof-bind-address says.
func TestHealthProbes(t *testing.T) {
	exclusive(t, "it pauses the shared operator and runs replicas of its own that compete for the leader election Lease")
	pauseSharedOperator(t)
	leaseID := newLease(t)

	// The leader reaches the API server through a slow link, so that its
	// caches take a while to sync after its health server listens.
	const delay = 300 * time.Millisecond
	slow := extraOperator(t, "health", slowAPIServerArgs(t, sharedArgs(leaderElectArgs(leaseID)...), delay))
	off := launch(t, slow)
	health := "http://" + mustServingAddress(t, slow, off, "health probes")
	type probe struct {
		sent, received time.Time
		code           int
		body           string
		err            error
	}
	var probes []probe
	var firstOK time.Time
	deadline := time.Now().Add(operatorStartTimeout)
	for firstOK.IsZero() || time.Since(firstOK) < 500*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz did not answer 200 within %v of the health server listening; last: %+v", operatorStartTimeout, probes[max(len(probes)-1, 0):])
		}
		p := probe{sent: time.Now()}
		p.code, p.body, p.err = httpGet(health + "/readyz")
		p.received = time.Now()
		if p.code == 200 && firstOK.IsZero() {
			firstOK = p.received
		}
		probes = append(probes, p)
		time.Sleep(5 * time.Millisecond)
	}
	var unready, refused int
	seenOK := false
	for _, p := range probes {
		switch {
		case p.code == 200:
			seenOK = true
		case seenOK:
			t.Errorf("/readyz answered %d %q (%v) at %s, after it had answered 200", p.code, p.body, p.err, p.sent.Format("15:04:05.000000"))
		case p.err != nil:
			refused++
		case p.code == 503:
			unready++
			if !strings.Contains(p.body, "caches have not synced") {
				t.Errorf("/readyz answered 503 with %q; want it to say the caches have not synced", p.body)
			}
		default:
			t.Errorf("/readyz answered %d %q before the caches synced, want 503", p.code, p.body)
		}
	}
	t.Logf("/readyz: %d times 503 over %v, %d errors, then 200 (%d probes in all)", unready,
		firstOK.Sub(probes[0].sent).Round(time.Millisecond), refused, len(probes))
	if unready == 0 {
		t.Errorf("/readyz never answered 503, though the API server answers %v late: it does not wait for the caches", delay)
	}

	// 200 only once both informers had listed everything.
	mustLog(t, slow, off, `"Started workers"`, operatorStartTimeout)
	log := logSince(slow, off)
	for _, kind := range []string{"*v1beta1.Robot", "*v1.Deployment"} {
		populated, ok := klogTime(log, fmt.Sprintf(`"Caches populated" type=%q`, kind))
		if !ok {
			t.Errorf("operator %s did not log that its %s cache was populated", slow.logPath, kind)
			continue
		}
		// A little slack: the cache counts as synced just before the line
		// is logged.
		if firstOK.Before(populated.Add(-20 * time.Millisecond)) {
			t.Errorf("/readyz answered 200 at %s, before the %s cache was populated, at %s", firstOK.Format("15:04:05.000000"), kind, populated.Format("15:04:05.000000"))
		}
		t.Logf("the %s cache was populated at %s, /readyz first answered 200 at %s", kind, populated.Format("15:04:05.000000"), firstOK.Format("15:04:05.000000"))
	}
	mustGetStatus(t, health+"/healthz", 200)

	// pprof is off unless asked for.
	if servingAddress(slow, off, "pprof") != "" {
		t.Errorf("operator %s serves pprof without -pprof-bind-address", slow.logPath)
	}
	checkNoPprof(t, "http://"+mustServingAddress(t, slow, off, "metrics"), health)

	// A follower, with pprof on.
	follower := extraOperator(t, "health-follower", sharedArgs(append(leaderElectArgs(leaseID), "-pprof-bind-address=127.0.0.1:0")...))
	offF := launch(t, follower)
	mustFollow(t, &replica{name: "the follower", o: follower, off: offF}, mustIdentity(t, slow, off))
	followerHealth := "http://" + mustServingAddress(t, follower, offF, "health probes")
	waitForStatus(t, followerHealth+"/readyz", 200)
	mustGetStatus(t, followerHealth+"/healthz", 200)
	pprof := "http://" + mustServingAddress(t, follower, offF, "pprof")
	if body := mustGetStatus(t, pprof+"/debug/pprof/", 200); !strings.Contains(body, "goroutine") {
		t.Errorf("GET %s/debug/pprof/: %q, want the index of the profiles", pprof, truncate(body, 200))
	}
	if body := mustGetStatus(t, pprof+"/debug/pprof/cmdline", 200); !strings.Contains(body, "-pprof-bind-address") {
		t.Errorf("GET %s/debug/pprof/cmdline: %q, want the operator's command line", pprof, truncate(body, 200))
	}
	mustGetStatus(t, pprof+"/debug/pprof/goroutine?debug=1", 200)
	checkNoPprof(t, "http://"+mustServingAddress(t, follower, offF, "metrics"), followerHealth)

	terminate(t, follower)
	waitExitedCleanly(t, follower, 40*time.Second)
	for _, s := range []string{`"Became the leader"`, `"Started workers"`} {
		if containsLog(follower, offF, s) {
			t.Errorf("the follower logged %s while the other operator led", s)
		}
	}
	terminate(t, slow)
	waitExitedCleanly(t, slow, 40*time.Second)
}

// checkNoPprof fails the test unless the servers at bases (the metrics and
// health servers) answer /debug/pprof/ with 404.
func checkNoPprof(t *testing.T, bases ...string) {
	t.Helper()
	for _, base := range bases {
		url := base + "/debug/pprof/"
		code, body, err := httpGet(url)
		switch {
		case err != nil:
			t.Errorf("GET %s: %v", url, err)
		case strings.Contains(body, "Types of profiles available") || strings.Contains(body, "/debug/pprof/goroutine"):
			t.Errorf("GET %s: %d with pprof's index: pprof is served outside -pprof-bind-address", url, code)
		case code != 404:
			t.Errorf("GET %s: %d, want 404 (it is not pprof, but %q: this server answers every path, not only its own)", url, code, truncate(body, 80))
		}
	}
}

var klogHeader = regexp.MustCompile(`^[IWEF](\d{4} \d{2}:\d{2}:\d{2}\.\d{6}) `)

// klogTime returns the time of the first line of log, in klog's text
// format, that contains needle.
func klogTime(log, needle string) (time.Time, bool) {
	for line := range strings.Lines(log) {
		if !strings.Contains(line, needle) {
			continue
		}
		m := klogHeader.FindStringSubmatch(line)
		if m == nil {
			return time.Time{}, false
		}
		at, err := time.ParseInLocation("0102 15:04:05.000000", m[1], time.Local)
		if err != nil {
			return time.Time{}, false
		}
		return at.AddDate(time.Now().Year(), 0, 0), true
	}
	return time.Time{}, false
}

// TestShutdownFinishesSyncsInFlight: an operator stopped with SIGTERM while
// it creates Deployments for a burst of new Robots exits 0 and leaves nothing
// half done, and a successor completes every Robot.
func TestShutdownFinishesSyncsInFlight(t *testing.T) {
	exclusive(t, "it pauses the shared operator, runs one of its own with the leader election Lease, and starts the shared one again")
	requireAuditLog(t)
	pauseSharedOperator(t)
	leaseID := newLease(t)
	o := extraOperator(t, "shutdown", sharedArgs(leaderElectArgs(leaseID)...))
	if err := o.start(); err != nil {
		t.Fatal(err)
	}
	id := mustIdentity(t, o, 0)
	ns := newNamespace(t)

	const n = 30
	errs := make([]error, n)
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range n {
		wg.Go(func() {
			_, errs[i] = env.robots.RobotV1beta1().Robots(ns).Create(context.Background(), newRobot(ns, fmt.Sprintf("robot-%02d", i), 1), metav1.CreateOptions{})
		})
	}
	time.Sleep(time.Until(begin.Add(200 * time.Millisecond)))
	termed := terminate(t, o)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("creating Robot robot-%02d: %v", i, err)
		}
	}
	exited := waitExitedCleanly(t, o, 40*time.Second)
	t.Logf("SIGTERM %v after the creates began; the operator exited 0 %v after it", termed.Sub(begin).Round(time.Millisecond), exited.Sub(termed).Round(time.Millisecond))
	mustLogInOrder(t, o, 0, `"Started workers"`, `"Shutting down`, `"Workers stopped"`, `"Released the leader election Lease"`, `"Stopped"`)
	log := logSince(o, 0)
	shutdownAt := strings.Index(log, `"Shutting down`)
	if shutdownAt < 0 {
		t.Fatalf("operator %s did not log \"Shutting down\"", o.logPath)
	}
	createdBefore := strings.Count(log[:shutdownAt], `"Created Deployment"`)
	createdAfter := strings.Count(log[shutdownAt:], `"Created Deployment"`)
	t.Logf("the operator created %d Deployments before it logged \"Shutting down\" and %d after", createdBefore, createdAfter)
	if failed := strings.Count(log, `"Syncing Robot failed`); failed > 0 {
		t.Errorf("the operator logged %d failed syncs; want none: a shutdown within the timeout cancels nothing", failed)
	}

	// The Lease was released, last of all the operator's writes.
	if holder, err := leaseHolder(t.Context(), leaseID); err != nil || holder != "" {
		t.Errorf("after the operator exited the Lease is held by %q (%v), want it released", holder, err)
	}
	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: begin.Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	var release *auditEvent
	for i, w := range writes {
		if userAgentIdentity(w.UserAgent) == id && w.ObjectRef != nil && w.ObjectRef.Resource == "leases" && w.ObjectRef.Name == leaseID {
			release = &writes[i]
		}
	}
	if release == nil {
		t.Fatalf("the audit log has no write of Lease %s by the operator", leaseID)
	}
	for _, w := range writes {
		if userAgentIdentity(w.UserAgent) == id && w.RequestReceivedTimestamp.After(release.RequestReceivedTimestamp) {
			t.Errorf("write by the operator after it released the Lease (%s): %s", release.RequestReceivedTimestamp.UTC().Format("15:04:05.000000"), &w)
		}
	}

	// Nothing half written.
	robots, err := env.robots.RobotV1beta1().Robots(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	withDeployment, withStatus := 0, 0
	for i := range robots.Items {
		robot := &robots.Items[i]
		d, err := env.kube.AppsV1().Deployments(ns).Get(t.Context(), robot.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			d = nil
		case err != nil:
			t.Fatal(err)
		default:
			withDeployment++
			checkControlledBy(t, d, robot)
			if d.Labels[labelManagedBy] != labelManagedByValue || d.Annotations[annotationSpecHash] == "" || ptr.Deref(d.Spec.Replicas, -1) != 1 {
				t.Errorf("Deployment %s/%s is not as its Robot asks: %s; labels %v, annotations %v", ns, d.Name, summarizeDeployment(d), d.Labels, d.Annotations)
			}
		}
		s := robot.Status
		ready := readyCondition(robot)
		if s.ObservedGeneration == 0 && ready == nil {
			continue // never written: fine, the next leader will
		}
		withStatus++
		if s.ObservedGeneration > robot.Generation || s.DeploymentName != robot.Name || ready == nil || ready.ObservedGeneration > robot.Generation {
			t.Errorf("Robot %s/%s has an inconsistent status: %s; deploymentName %q", ns, robot.Name, summarizeRobot(robot), s.DeploymentName)
		}
		if ready != nil && ready.Reason == robotv1beta1.ReasonSyncFailed {
			t.Errorf("Robot %s/%s: a sync failed during the shutdown: %s", ns, robot.Name, summarizeRobot(robot))
		}
		if d == nil && (s.Replicas > 0 || (ready != nil && !strings.Contains(ready.Message, "waiting for the Deployment to be created"))) {
			t.Errorf("Robot %s/%s has no Deployment, yet its status says otherwise: %s", ns, robot.Name, summarizeRobot(robot))
		}
	}
	t.Logf("after the shutdown: of %d Robots, %d have a Deployment and %d a status", len(robots.Items), withDeployment, withStatus)
	if len(robots.Items) != n {
		t.Errorf("%d Robots in %s, want %d", len(robots.Items), ns, n)
	}

	// Nothing lost: the next operator completes every Robot.
	if err := env.operator.start(); err != nil {
		t.Fatalf("starting the shared operator again: %v", err)
	}
	eventually(t, convergeTimeout, fmt.Sprintf("all %d Robots are Ready", n), func(ctx context.Context) (bool, string, error) {
		list, err := env.robots.RobotV1beta1().Robots(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var waiting []string
		for i := range list.Items {
			if !robotConverged(&list.Items[i]) {
				waiting = append(waiting, list.Items[i].Name+": "+summarizeRobot(&list.Items[i]))
			}
		}
		return len(list.Items) == n && len(waiting) == 0, fmt.Sprintf("%d Robots, %d not Ready: %v", len(list.Items), len(waiting), waiting), nil
	})
}

// TestJSONLogging: with -logging-format=json every line is a JSON object, and
// a line about a Robot carries it as {"name","namespace"}.
func TestJSONLogging(t *testing.T) {
	exclusive(t, "it pauses the shared operator and runs one of its own")
	pauseSharedOperator(t)
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "web", 1))
	o := extraOperator(t, "json", sharedArgs("-logging-format=json", "-v=2"))
	if err := o.start(); err != nil {
		t.Fatal(err)
	}
	waitForRobotReady(t, ns, "web")
	patchRobot(t, ns, "web", `{"spec":{"replicas":2}}`)
	waitForRobotReady(t, ns, "web")
	terminate(t, o)
	waitExitedCleanly(t, o, 40*time.Second)

	var lines, aboutRobot int
	messages := map[string]bool{}
	for line := range strings.Lines(logSince(o, 0)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "=== e2e:") {
			continue
		}
		lines++
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("not a JSON object: %q (%v)", truncate(line, 300), err)
			continue
		}
		if _, ok := entry["msg"].(string); !ok {
			t.Errorf("a line has no \"msg\": %s", line)
		}
		if _, ok := entry["time"].(string); !ok {
			t.Errorf("a line has no \"time\": %s", line)
		}
		if v, ok := entry["v"].(float64); ok && v > 2 {
			t.Errorf("a line of verbosity %v, above -v=2: %s", v, line)
		}
		robot, ok := entry["robot"].(map[string]any)
		if !ok || robot["name"] != "web" || robot["namespace"] != ns {
			continue
		}
		aboutRobot++
		msg := entry["msg"].(string)
		if !messages[msg] {
			t.Logf("a line about the Robot: %s", line)
		}
		messages[msg] = true
		if msg == "Created Deployment" || msg == "Updated Deployment" {
			if entry["v"] != 2.0 {
				t.Errorf("%q is logged at -v=2, but its line has \"v\": %v: %s", msg, entry["v"], line)
			}
		}
	}
	t.Logf("%d JSON lines, %d of them about Robot %s/web", lines, aboutRobot, ns)
	for _, msg := range []string{"Created Deployment", "Updated Deployment", "Robot readiness changed"} {
		if !messages[msg] {
			t.Errorf("no line %q with \"robot\":{\"name\":\"web\",\"namespace\":%q}; the lines about the Robot: %v", msg, ns, slices.Sorted(maps.Keys(messages)))
		}
	}
}

// TestLeaderShutdownWhileFollowing: an operator with -leader-elect stopped
// with SIGTERM while another replica holds the Lease exits 0, soon, without
// ever having led or written anything, the Lease included.
func TestLeaderShutdownWhileFollowing(t *testing.T) {
	exclusive(t, "it pauses the shared operator and runs one of its own that waits for the leader election Lease")
	requireAuditLog(t)
	pauseSharedOperator(t)
	leaseID := newLease(t)
	const other = "e2e-other-replica"
	holdLease(t, leaseID, other)
	begin := time.Now()
	f := &replica{name: "F", o: extraOperator(t, "follower-term", sharedArgs(leaderElectArgs(leaseID)...))}
	f.off = launch(t, f.o)
	f.id = mustIdentity(t, f.o, f.off)
	mustFollow(t, f, other)
	// Its caches have synced: only the Lease keeps it from working.
	waitForStatus(t, "http://"+mustServingAddress(t, f.o, f.off, "health probes")+"/readyz", 200)

	termed := terminate(t, f.o)
	exited := waitExitedCleanly(t, f.o, 20*time.Second)
	t.Logf("the follower exited 0 %v after SIGTERM", exited.Sub(termed).Round(time.Millisecond))
	mustLog(t, f.o, f.off, `"Stopped"`, time.Second)
	for _, s := range []string{`"Became the leader"`, `"Started workers"`} {
		if containsLog(f.o, f.off, s) {
			t.Errorf("the follower logged %s though %s held the Lease", s, other)
		}
	}
	if holder, err := leaseHolder(t.Context(), leaseID); err != nil || holder != other {
		t.Errorf("after the follower exited the Lease is held by %q (%v), want %s still", holder, err, other)
	}
	checkNoWritesBy(t, f.id, begin)
}

// TestLeaderShutdownWhileAcquiring: an operator with -leader-elect stopped
// with SIGTERM while its request for the free Lease is on its way (the API
// server answers through a slow link) exits 0, without leading, and does
// not leave the Lease held in its name.
func TestLeaderShutdownWhileAcquiring(t *testing.T) {
	exclusive(t, "it pauses the shared operator and runs one of its own that asks for the leader election Lease")
	pauseSharedOperator(t)
	leaseID := newLease(t)
	const delay = 2 * time.Second
	o := extraOperator(t, "acquiring-term", slowAPIServerArgs(t, sharedArgs(leaderElectArgs(leaseID)...), delay))
	off := launch(t, o)
	id := mustIdentity(t, o, off)
	mustLog(t, o, off, `"Attempting to acquire leader lease`, operatorStartTimeout)

	termed := terminate(t, o)
	exited := waitExitedCleanly(t, o, 40*time.Second)
	t.Logf("the operator exited 0 %v after SIGTERM", exited.Sub(termed).Round(time.Millisecond))
	mustLog(t, o, off, `"Stopped"`, time.Second)
	if containsLog(o, off, `"Started workers"`) {
		t.Errorf("the operator started workers after SIGTERM, which came before it held the Lease")
	}
	if holder, err := leaseHolder(t.Context(), leaseID); err != nil || holder == id {
		t.Errorf("after the operator exited the Lease is held by %q (%v): it must not be left in the name of an operator that has gone", holder, err)
	}
}

// TestShutdownWhileCachesSync: an operator stopped with SIGTERM before its
// informer caches have synced (the API server answers through a slow link)
// exits 0: a shutdown before any work began is no failure.
func TestShutdownWhileCachesSync(t *testing.T) {
	exclusive(t, "it pauses the shared operator and runs one of its own")
	pauseSharedOperator(t)
	const delay = 2 * time.Second
	o := extraOperator(t, "sync-term", slowAPIServerArgs(t, sharedArgs(), delay))
	off := launch(t, o)
	mustLog(t, o, off, `"Waiting for informer caches to sync"`, operatorStartTimeout)

	termed := terminate(t, o)
	exited := waitExitedCleanly(t, o, 40*time.Second)
	t.Logf("the operator exited 0 %v after SIGTERM", exited.Sub(termed).Round(time.Millisecond))
	mustLog(t, o, off, `"Stopped"`, time.Second)
	if containsLog(o, off, `"Started workers"`) {
		t.Fatalf("the operator started workers: the SIGTERM came after its caches synced, %v through the slow link was not enough to test a shutdown during the sync", delay)
	}
	if containsLog(o, off, "failed to wait for caches to sync") {
		t.Errorf("the operator reported a failure to sync its caches after SIGTERM")
	}
}

// holdLease makes holder the holder of the Lease id, freshly renewed and
// for an hour, as another replica would hold it.
func holdLease(t *testing.T, id, holder string) {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	_, err := env.kube.CoordinationV1().Leases(leaseNamespace).Create(t.Context(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: leaseNamespace, Name: id},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(holder),
			LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Lease %s/%s held by %s: %v", leaseNamespace, id, holder, err)
	}
}

// checkNoWritesBy fails the test if the audit log has a write since begin
// by the operator whose identity is id.
func checkNoWritesBy(t *testing.T, id string, begin time.Time) {
	t.Helper()
	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: begin})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		if userAgentIdentity(w.UserAgent) == id {
			t.Errorf("write by the operator, which never held the Lease: %s", &w)
		}
	}
}
