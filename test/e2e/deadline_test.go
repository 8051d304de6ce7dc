//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSyncDeadline: a sync whose Deployment write (create or apply) gets no answer (a proxy
// between the operator and the API server holds it) fails at -sync-timeout
// with an error that says so; the operator's only worker goes on to the next
// Robot meanwhile; and once the API server answers again the Robot
// converges.
func TestSyncDeadline(t *testing.T) {
	exclusive(t, "it pauses the shared operator and runs one of its own through a proxy")
	pauseSharedOperator(t)
	const (
		syncTimeout = 3 * time.Second
		// How much later the operator may give up on a request than its
		// sync deadline: a small, shared machine may be slow to notice.
		slack = 3 * time.Second
	)
	args, proxy := holdingAPIServerArgs(t, sharedArgs("-workers=1", fmt.Sprintf("-sync-timeout=%v", syncTimeout)))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the requests the proxy held: %v", proxy.heldRequests())
		}
	})
	o := extraOperator(t, "deadline", args)
	if err := o.start(); err != nil {
		t.Fatal(err)
	}
	health := "http://" + mustServingAddress(t, o, 0, "health probes")
	ns := newNamespace(t)

	// From now on every write of Deployment "stuck" hangs: its create (a
	// POST to the collection, named in the body) and any apply (a PATCH).
	deployments := "/apis/apps/v1/namespaces/" + ns + "/deployments"
	proxy.hold(func(r *http.Request) bool {
		switch {
		case r.Method == http.MethodPatch:
			return r.URL.Path == deployments+"/stuck"
		case r.Method != http.MethodPost || r.URL.Path != deployments:
			return false
		}
		body, err := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		return err == nil && bytes.Contains(body, []byte("stuck"))
	})
	createRobot(t, newRobot(ns, "stuck", 1))
	created := time.Now()
	createRobot(t, newRobot(ns, "next", 1))

	timedOut := fmt.Sprintf(`"Syncing Robot failed; retrying" err="sync of Robot %s/stuck did not finish within %v"`, ns, syncTimeout)
	mustLog(t, o, 0, timedOut, syncTimeout+slack)
	t.Logf("the operator logged that the sync timed out %v after the Robot was created", time.Since(created).Round(time.Millisecond))
	eventually(t, slack, "the operator gave up on the held apply", func(_ context.Context) (bool, string, error) {
		held := proxy.heldRequests()
		return len(held) > 0 && held[0].gaveUp, fmt.Sprint(held), nil
	})

	// One worker, yet the next Robot is not held up behind the stuck one.
	waitForRobotReady(t, ns, "next")
	if c := readyCondition(getRobot(t, ns, "stuck")); c != nil && c.Status == metav1.ConditionTrue {
		t.Fatalf("Robot %s/stuck is Ready, though every apply of its Deployment hangs", ns)
	}
	mustGetStatus(t, health+"/healthz", 200)

	// The API server answers again.
	proxy.release()
	released := time.Now()
	waitForRobotReady(t, ns, "stuck")
	t.Logf("Robot %s/stuck Ready %v after the proxy let its applies through", ns, time.Since(released).Round(time.Millisecond))

	held := proxy.heldRequests()
	for _, r := range held {
		t.Logf("held: %s", r)
		took := r.ended.Sub(r.arrived)
		switch {
		case r.ended.IsZero():
			t.Errorf("still held after the release: %s", r)
		case took > syncTimeout+slack:
			t.Errorf("the operator waited on a held apply for longer than its sync deadline, %v: %s", syncTimeout, r)
		case r.gaveUp && took < syncTimeout/2:
			t.Errorf("the operator gave up on a held apply well before its sync deadline, %v: %s", syncTimeout, r)
		}
	}
	// Every failed sync of the stuck Robot says it ran out of time, and
	// nothing else: no second error from a status write with the expired
	// context.
	var failed, other []string
	for line := range strings.Lines(logSince(o, 0)) {
		if strings.Contains(line, `"Syncing Robot failed`) && strings.Contains(line, ns+"/stuck") {
			failed = append(failed, line)
			if !strings.Contains(line, timedOut) {
				other = append(other, line)
			}
		}
	}
	t.Logf("the operator held %d applies of Deployment %s/stuck and logged %d failed syncs of its Robot", len(held), ns, len(failed))
	if len(other) > 0 {
		t.Errorf("failed syncs of Robot %s/stuck that do not say they ran out of time:\n%s", ns, strings.Join(other, ""))
	}
	terminate(t, o)
	waitExitedCleanly(t, o, 40*time.Second)
}
