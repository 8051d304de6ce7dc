package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	auditlog "github.com/robot-operator/robot-operator/test/internal/audit"
	"github.com/robot-operator/robot-operator/test/internal/localcluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Bounds of "no hot loop".
const (
	// maxWritesPerGeneration bounds the operator's writes (Events aside),
	// from the first Robot created until all converged, per Robot
	// generation made (each Robot's first, and each spec change). One
	// generation needs a Deployment write and one to three status writes
	// as the rollout progresses; a restarted operator that finds a
	// converged Robot writes nothing. Eight leaves room for conflicts and
	// retries, and is far below what a loop writing each Robot again and
	// again would cost.
	maxWritesPerGeneration = 8
	// maxInformersBack bounds how long after the API server answers again
	// (scenarios 3 and 4) the operator's informers may take to list or
	// watch again: the back-off client-go's reflectors build up over an
	// outage took 40-60 s, the outage gate a second or two.
	maxInformersBack = 10 * time.Second
	// maxOutageRequestRate bounds the operator's requests per second while
	// the API server (or etcd) is down: the reflectors back off and the
	// workers' rate limiter spaces the retries of the Robots in error, so
	// a few a second per informer and worker is what backing off costs;
	// a worker retrying without waiting would make hundreds.
	maxOutageRequestRate = 20.0
)

// auditEvent is one of the operator's requests in the audit log.
type auditEvent = auditlog.Event

// readAudit returns the operator's requests, one per request: a watch's
// start, every other request's end. A line cut short by a killed API
// server is passed over.
func readAudit(path string) ([]auditEvent, error) {
	var events []auditEvent
	err := auditlog.Scan(path, localcluster.OperatorUser, true, func(e *auditEvent) {
		events = append(events, *e)
	})
	return events, err
}

// writesIn counts the writes (Events and the leader election Lease aside)
// received in [from, to) that match. A leader renews its Lease every retry
// period whatever its Robots do: that is not work, and would make any idle
// operator look busy.
func writesIn(events []auditEvent, from, to time.Time, match func(*auditEvent) bool) int {
	n := 0
	for i := range events {
		e := &events[i]
		if e.Write() && e.ObjectRef.Resource != "events" && e.ObjectRef.Resource != "leases" && !e.RequestReceived.Before(from) && e.RequestReceived.Before(to) && (match == nil || match(e)) {
			n++
		}
	}
	return n
}

// check is one invariant, held or not.
type check struct {
	name   string
	ok     bool
	detail string
}

func checkf(name string, ok bool, format string, args ...any) check {
	return check{name: name, ok: ok, detail: fmt.Sprintf(format, args...)}
}

// checkConverged: every Robot exists, is Ready with its spec applied, and
// says so of its current generation.
func checkConverged(ctx context.Context, c *cluster, n int, waitErr error) check {
	count, examples, err := notConverged(ctx, c)
	if err != nil {
		return checkf("converged", false, "listing: %v", err)
	}
	robots, err := c.Robots.RobotV1beta1().Robots(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return checkf("converged", false, "listing: %v", err)
	}
	if waitErr != nil || count > 0 || len(robots.Items) != n {
		return checkf("converged", false, "%d of %d Robots exist, %d not converged, e.g. %v (%v)", len(robots.Items), n, count, examples, waitErr)
	}
	return checkf("converged", true, "%d Robots Ready, spec applied, observedGeneration current", n)
}

// checkDeployments: each Robot has exactly one Deployment, controlled by it
// (by UID); none is without its Robot; none was deleted, but those of the
// Robots the scenario deleted, or recreated under the same name, and the
// operator deleted none.
func checkDeployments(ctx context.Context, c *cluster, uids *uidWatch, audit []auditEvent, deletedRobots map[string]bool) check {
	robots, err := c.Robots.RobotV1beta1().Robots(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return checkf("deployments", false, "listing: %v", err)
	}
	deployments, err := c.Kube.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return checkf("deployments", false, "listing: %v", err)
	}
	robotByUID := map[types.UID]string{}
	for _, r := range robots.Items {
		robotByUID[r.UID] = r.Name
	}
	var problems []string
	controlled := map[types.UID]int{}
	uids.mu.Lock()
	for _, d := range deployments.Items {
		owner := metav1.GetControllerOf(&d)
		switch {
		case owner == nil || owner.Kind != "Robot":
			problems = append(problems, d.Name+": no Robot controls it (orphaned)")
		case robotByUID[owner.UID] == "":
			problems = append(problems, fmt.Sprintf("%s: its controller Robot %s (%s) is gone (orphaned)", d.Name, owner.Name, owner.UID))
		default:
			controlled[owner.UID]++
		}
		if first := uids.first[d.Name]; first != "" && first != d.UID {
			problems = append(problems, fmt.Sprintf("%s: UID %s, first seen as %s (recreated)", d.Name, d.UID, first))
		}
	}
	for name, later := range uids.recreated {
		problems = append(problems, fmt.Sprintf("%s: recreated as %v", name, later))
	}
	for name, n := range uids.deleted {
		if deletedRobots[name] && n == 1 {
			continue
		}
		problems = append(problems, fmt.Sprintf("%s: deleted %d times", name, n))
	}
	uids.mu.Unlock()
	for _, r := range robots.Items {
		if n := controlled[r.UID]; n != 1 {
			problems = append(problems, fmt.Sprintf("Robot %s controls %d Deployments", r.Name, n))
		}
	}
	deletes := 0
	for _, e := range audit {
		if e.Verb == "delete" && e.ObjectRef.Resource == "deployments" {
			deletes++
		}
	}
	if deletes > 0 {
		problems = append(problems, fmt.Sprintf("the operator deleted Deployments %d times", deletes))
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return checkf("deployments", false, "%d problems, e.g. %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	return checkf("deployments", true, "%d Deployments, one per Robot, each with its first UID", len(deployments.Items))
}

// checkEvents: at most one Deployment creation per Robot, as its Created
// Events name them (one Event per sync names all the sync created).
func checkEvents(ctx context.Context, c *cluster) check {
	events, err := c.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=Created"})
	if err != nil {
		return checkf("events", false, "listing: %v", err)
	}
	perRobot := map[types.UID]int32{}
	total := int32(0)
	for _, e := range events.Items {
		if !strings.Contains(e.Message, `Deployment "`) {
			continue
		}
		n := max(e.Count, 1)
		if e.Series != nil {
			n = max(n, e.Series.Count)
		}
		perRobot[e.InvolvedObject.UID] += n
		total += n
	}
	var over []string
	for uid, n := range perRobot {
		if n > 1 {
			over = append(over, fmt.Sprintf("%s: %d", uid, n))
		}
	}
	if len(over) > 0 {
		sort.Strings(over)
		return checkf("events", false, "%d Robots have created their Deployment more than once, e.g. %s", len(over), strings.Join(over[:min(5, len(over))], ", "))
	}
	return checkf("events", true, "%d Deployment creations for %d Robots", total, len(perRobot))
}

// writerOf returns the replica's identity from the User-Agent the operator
// sends: "robot-operator/<version> (<identity>)".
func writerOf(e *auditEvent) string {
	open, end := strings.LastIndex(e.UserAgent, "("), strings.LastIndex(e.UserAgent, ")")
	if open < 0 || end < open {
		return e.UserAgent
	}
	return e.UserAgent[open+1 : end]
}

// effectiveWrite reports whether e is a write that counts towards who
// wrote when: every write the operator attempted, whatever the answer,
// except a Lease write the API server refused. A follower tries to take an
// expired Lease, and a deposed leader may try to renew one already taken;
// the API server refuses both (409) and nothing changes. The webhook's
// certificate upkeep (its Secret, the CRD's conversion) is left out too:
// every replica keeps them, leader or not, each write on the resourceVersion
// it read, so they say nothing of who leads. The CRD's status is the
// migration's, which only the leader runs, and counts.
func effectiveWrite(e *auditEvent) bool {
	if !e.Write() {
		return false
	}
	if e.ObjectRef.Resource == "secrets" || (e.ObjectRef.Resource == "customresourcedefinitions" && e.ObjectRef.Subresource == "") {
		return false
	}
	if e.ObjectRef.Resource == "leases" {
		return e.ResponseStatus.Code >= 200 && e.ResponseStatus.Code < 300
	}
	return true
}

// term is one replica's time as a writer: its first and last writes.
type term struct {
	identity    string
	first, last time.Time
	// firstWork is its first write other than the Lease (zero if none).
	firstWork time.Time
	writes    int
}

// terms returns, in the order they started, each replica's span of writes
// from the audit log. Every start of the operator has a new identity, so a
// replica leads at most once: a leader that loses the Lease exits, and one
// that is stopped releases the Lease and exits.
func terms(audit []auditEvent) []*term {
	byID := map[string]*term{}
	var all []*term
	for i := range audit {
		e := &audit[i]
		if !effectiveWrite(e) {
			continue
		}
		id := writerOf(e)
		t := byID[id]
		if t == nil {
			t = &term{identity: id, first: e.RequestReceived, last: e.RequestReceived}
			byID[id] = t
			all = append(all, t)
		}
		if e.RequestReceived.Before(t.first) {
			t.first = e.RequestReceived
		}
		if e.RequestReceived.After(t.last) {
			t.last = e.RequestReceived
		}
		if e.ObjectRef.Resource != "leases" && (t.firstWork.IsZero() || e.RequestReceived.Before(t.firstWork)) {
			t.firstWork = e.RequestReceived
		}
		t.writes++
	}
	sort.Slice(all, func(i, j int) bool { return all[i].first.Before(all[j].first) })
	return all
}

// checkOneWriter: from the audit log, once a replica has written (its first
// write is taking the Lease), no replica that wrote before it writes again.
// Two replicas whose writes interleave past a hand-over is what leader
// election exists to prevent. It also returns the hand-overs seen and the
// shortest quiet time between one leader's last write and the next one's
// first.
func checkOneWriter(audit []auditEvent) (check, int, time.Duration) {
	all := terms(audit)
	var problems []string
	overlaps := 0
	for j := 1; j < len(all); j++ {
		next := all[j]
		for _, old := range all[:j] {
			if !old.last.Before(next.first) {
				late := 0
				for i := range audit {
					e := &audit[i]
					if effectiveWrite(e) && writerOf(e) == old.identity && !e.RequestReceived.Before(next.first) {
						late++
					}
				}
				overlaps += late
				problems = append(problems, fmt.Sprintf("%s wrote %d times after %s's first write at %s, the last at %s",
					old.identity, late, next.identity, next.first.Format("15:04:05.000000"), old.last.Format("15:04:05.000000")))
			}
		}
	}
	handovers := max(len(all)-1, 0)
	gap := time.Duration(-1)
	for j := 1; j < len(all); j++ {
		if d := all[j].first.Sub(all[j-1].last); gap < 0 || d < gap {
			gap = d
		}
	}
	if len(problems) > 0 {
		return checkf("one writer", false, "%d writes of an old leader after its successor's first write: %s",
			overlaps, strings.Join(problems[:min(3, len(problems))], "; ")), handovers, gap
	}
	return checkf("one writer", true, "%d replicas wrote, one after the other: %d hand-overs, no write of an old leader after its successor's first; shortest quiet time between two leaders' writes %.1f s",
		len(all), handovers, gap.Seconds()), handovers, gap
}

// formatSizes renders the map sizes in a stable order.
func formatSizes(sizes map[string]int) string {
	names := make([]string, 0, len(sizes))
	for name := range sizes {
		names = append(names, name)
	}
	sort.Strings(names)
	var parts []string
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %d", name, sizes[name]))
	}
	return strings.Join(parts, ", ")
}
