package main

import (
	"slices"
	"testing"
	"time"
)

func auditWrite(identity, resource string, code int, at time.Time) auditEvent {
	e := auditEvent{Stage: "ResponseComplete", Verb: "update", UserAgent: "robot-operator/v1 (" + identity + ")", RequestReceived: at}
	e.ObjectRef.Resource = resource
	e.ResponseStatus.Code = code
	return e
}

func TestCheckOneWriter(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 17, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	handOver := []auditEvent{
		auditWrite("a", "leases", 200, at(0)),
		auditWrite("b", "leases", 409, at(0.1)), // b lost the race to create the Lease
		auditWrite("a", "deployments", 201, at(1)),
		auditWrite("a", "robots", 200, at(2)),
		auditWrite("b", "leases", 200, at(8)),
		auditWrite("a", "leases", 409, at(8.5)), // a's renewal, refused
		auditWrite("b", "deployments", 201, at(9)),
	}
	c, handovers, gap := checkOneWriter(handOver)
	if !c.ok || handovers != 1 || gap != 6*time.Second {
		t.Errorf("a clean hand-over: got %+v, %d hand-overs, gap %v", c, handovers, gap)
	}

	late := append(handOver, auditWrite("a", "robots", 409, at(10)))
	if c, _, _ := checkOneWriter(late); c.ok {
		t.Errorf("a write of the old leader after the new leader's: the check passed: %s", c.detail)
	}
	beforeWork := append(handOver[:5:5], auditWrite("a", "deployments", 201, at(8.2)), handOver[6])
	if c, _, _ := checkOneWriter(beforeWork); c.ok {
		t.Errorf("a write of the old leader after the new leader took the Lease: the check passed: %s", c.detail)
	}
}

// Every replica keeps the webhook's certificates, leader or not: its writes
// of the webhook's Secret and of the CRD's conversion are no leader's work,
// and a follower's are no hand-over. The CRD's status (storedVersions) is
// the migration's, which only the leader runs.
func TestCheckOneWriterLeavesTheCertificateUpkeep(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 17, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	upkeep := []auditEvent{
		auditWrite("a", "leases", 200, at(0)),
		auditWrite("a", "deployments", 201, at(1)),
		auditWrite("b", "secrets", 409, at(1.1)),                   // b lost the race to fill the Secret
		auditWrite("b", "customresourcedefinitions", 200, at(1.2)), // and applied the caBundle
		auditWrite("a", "robots", 200, at(2)),
	}
	if c, handovers, _ := checkOneWriter(upkeep); !c.ok || handovers != 0 {
		t.Errorf("a follower keeping the webhook's certificates: got %+v, %d hand-overs; want a pass and none", c, handovers)
	}
	migration := auditWrite("b", "customresourcedefinitions", 200, at(1.3))
	migration.ObjectRef.Subresource = "status"
	if c, _, _ := checkOneWriter(append(upkeep, migration)); c.ok {
		t.Errorf("a follower writing the CRD's storedVersions while another leads: the check passed: %s", c.detail)
	}
}

func TestCheckStoppedInTime(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 17, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	audit := []auditEvent{
		auditWrite("a", "leases", 200, at(0)),
		auditWrite("a", "robots", 200, at(0.5)),
		auditWrite("b", "leases", 200, at(9)),
	}
	if c := checkStoppedInTime(audit, "a", "b", at(5.5)); !c.ok {
		t.Errorf("stopped 5.5 s after the last renewal: %s", c.detail)
	}
	if c := checkStoppedInTime(audit, "a", "b", at(8.5)); c.ok {
		t.Errorf("stopped after the lease duration: the check passed: %s", c.detail)
	}
	if c := checkStoppedInTime(audit, "a", "b", time.Time{}); c.ok {
		t.Errorf("never stopped: the check passed: %s", c.detail)
	}
}

// TestInformersBack: the informers count as back when every resource the
// operator listed or watched before the fault was listed or watched with
// success after the component started again, or kept its watch (asked
// nothing since the fault began); a resource refused after keeps them out.
func TestInformersBack(t *testing.T) {
	answered := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return answered.Add(time.Duration(s * float64(time.Second))) }
	faultStart, restarted := at(-30), at(-6)
	read := func(verb, resource string, code int, when time.Time) auditEvent {
		e := auditEvent{Verb: verb, RequestReceived: when}
		e.ObjectRef.Resource = resource
		e.ResponseStatus.Code = code
		return e
	}
	before := []auditEvent{
		read("list", "robots", 200, at(-60)),
		read("list", "deployments", 200, at(-60)),
		read("watch", "pods", 200, at(-59)),
		read("watch", "robots", 200, at(-20)), // during the fault, not a return
	}
	after := []auditEvent{
		read("watch", "robots", 403, at(-1)),
		read("watch", "robots", 200, at(1.5)),
		read("list", "deployments", 200, at(-0.5)),
		read("watch", "pods", 200, at(2.5)),
	}
	if back, detail := informersBack(append(before, after...), faultStart, restarted, answered); back != 2500*time.Millisecond {
		t.Errorf("every informer back: got %v (%s), want 2.5s, the last of them", back, detail)
	}
	refused := append(slices.Clone(before), after[0], after[1], after[2], read("watch", "pods", 500, at(1)))
	if back, detail := informersBack(refused, faultStart, restarted, answered); back <= maxInformersBack {
		t.Errorf("pods refused and never watched again: got %v (%s), want beyond the bound", back, detail)
	}
	// The API server stayed up and kept the pods' watch open: nothing to
	// come back from.
	if back, detail := informersBack(append(before, after[:3]...), faultStart, restarted, answered); back != 1500*time.Millisecond {
		t.Errorf("pods kept their watch: got %v (%s), want 1.5s, the Robots'", back, detail)
	}
	late := append(slices.Clone(before), after[0], read("watch", "robots", 200, at(45)), after[2], after[3])
	if back, detail := informersBack(late, faultStart, restarted, answered); back <= maxInformersBack {
		t.Errorf("Robots watched again 45 s after: got %v (%s), want beyond the bound", back, detail)
	}
}
