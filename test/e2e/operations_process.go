//go:build e2e

package e2e

// What the production-operations tests (operations_test.go) share: operator
// processes of their own next to the shared one, their logs and ports, and
// the leader election Lease.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// leaseNamespace is where the tests' leader election Leases live: the
// operator's own namespace in the shipped manifests.
const leaseNamespace = "robot-operator"

// pauseSharedOperator stops the operator that TestMain started, for a test
// that runs operators of its own and needs them to be the only ones that
// write, and starts it again when the test ends (unless the test already
// has). It fails the test if the operator cannot be started again.
func pauseSharedOperator(t *testing.T) {
	t.Helper()
	requireExclusive(t, "pauses the shared operator")
	err := env.operator.stop()
	t.Cleanup(func() {
		if env.operator.running() {
			return
		}
		if err := env.operator.start(); err != nil {
			t.Errorf("starting the shared operator again: %v", err)
		}
	})
	if err != nil {
		t.Fatalf("stopping the shared operator: %v", err)
	}
}

// extraOperator returns an operator process, not started yet, running the
// shared operator's binary with args, logging next to the shared operator's
// log, with -NAME added to its name (_output/e2e-operator-NAME.log), emptied
// first. When the test ends it is killed if it still runs, and, if the test
// failed, the end of its log is printed.
func extraOperator(t *testing.T, name string, args []string) *operator {
	t.Helper()
	requireExclusive(t, "runs an operator of its own")
	logPath := strings.TrimSuffix(env.operator.logPath, filepath.Ext(env.operator.logPath)) + "-" + name + ".log"
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o := &operator{bin: env.operator.bin, args: args, logPath: logPath}
	t.Cleanup(func() {
		if o.running() {
			_ = o.cmd.Process.Kill()
			<-o.exited
			t.Logf("operator %s was still running at the end of the test: killed it", name)
		}
		if t.Failed() {
			t.Logf("the end of the log of operator %s (%s):\n%s", name, logPath, lastLines(logPath, 40))
		}
	})
	return o
}

// sharedArgs returns the shared operator's command line followed by extra:
// the same cluster and credentials, metrics and health probes on free
// loopback ports, and no conversion webhook.
func sharedArgs(extra ...string) []string {
	// Only the shared operator serves the webhook: the port is its.
	return append(append(slices.Clone(env.operator.args), "-webhook-bind-address=0"), extra...)
}

// leaderElectArgs are the flags that make an operator compete for the Lease
// id in leaseNamespace.
func leaderElectArgs(id string) []string {
	return []string{"-leader-elect", "-leader-elect-namespace=" + leaseNamespace, "-leader-elect-id=" + id}
}

// launch starts the operator process without waiting for it (a follower
// never logs "Started workers") and returns where its log begins.
func launch(t *testing.T, o *operator) int64 {
	t.Helper()
	offset, err := o.launch()
	if err != nil {
		t.Fatalf("%s: %v", o.logPath, err)
	}
	return offset
}

// mustLog waits until the operator's log, from offset on, contains needle.
func mustLog(t *testing.T, o *operator, offset int64, needle string, timeout time.Duration) {
	t.Helper()
	if err := o.waitForLog(offset, needle, timeout); err != nil {
		t.Fatal(err)
	}
}

// logSince returns the operator's log from offset on.
func logSince(o *operator, offset int64) string {
	data, err := os.ReadFile(o.logPath)
	if err != nil || int64(len(data)) < offset {
		return ""
	}
	return string(data[offset:])
}

// lastLines returns the last n lines of a file.
func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read it: %v)", err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

// kill sends the operator SIGKILL, waits for it to be gone, and returns when
// the signal was sent.
func kill(t *testing.T, o *operator) time.Time {
	t.Helper()
	sent := time.Now()
	if err := o.cmd.Process.Kill(); err != nil {
		t.Fatalf("killing operator %s: %v", o.logPath, err)
	}
	select {
	case <-o.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("operator %s still runs 10 s after SIGKILL", o.logPath)
	}
	return sent
}

// terminate sends the operator SIGTERM and returns when it was sent, without
// waiting for the process to exit.
func terminate(t *testing.T, o *operator) time.Time {
	t.Helper()
	sent := time.Now()
	if err := o.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("sending SIGTERM to operator %s: %v", o.logPath, err)
	}
	return sent
}

// waitExitedCleanly waits for the operator to exit and fails the test
// unless it exits with status 0 within timeout. It returns when it saw it
// gone.
func waitExitedCleanly(t *testing.T, o *operator, timeout time.Duration) time.Time {
	t.Helper()
	select {
	case <-o.exited:
	case <-time.After(timeout):
		t.Fatalf("operator %s has not exited %v after SIGTERM", o.logPath, timeout)
	}
	gone := time.Now()
	if o.waitErr != nil {
		t.Fatalf("operator %s exited with %v after SIGTERM, want status 0; its last lines:\n%s", o.logPath, o.waitErr, lastLines(o.logPath, 30))
	}
	return gone
}

// servingLine matches the line in which the operator tells where a server
// of it listens, in the text and the JSON formats.
var servingLine = regexp.MustCompile(`"Serving" server="([^"]+)" address="([^"]+)"|"msg":"Serving","server":"([^"]+)","address":"([^"]+)"`)

// servingAddress returns the address that the operator logged, in its log
// from offset on, for its server called server ("metrics", "health probes",
// "pprof"), and "" when it logged none. When it logged several (the shared
// operator's log spans its restarts), the last one is the current one.
func servingAddress(o *operator, offset int64, server string) string {
	address := ""
	for _, m := range servingLine.FindAllStringSubmatch(logSince(o, offset), -1) {
		if m[1] == server {
			address = m[2]
		} else if m[3] == server {
			address = m[4]
		}
	}
	return address
}

// mustServingAddress waits for the operator to log the address of its
// server called server, and returns it.
func mustServingAddress(t *testing.T, o *operator, offset int64, server string) string {
	t.Helper()
	deadline := time.Now().Add(operatorStartTimeout)
	for {
		if address := servingAddress(o, offset, server); address != "" {
			return address
		}
		if !o.running() {
			t.Fatalf("operator %s exited (%v) without logging where it serves %s", o.logPath, o.waitErr, server)
		}
		if time.Now().After(deadline) {
			t.Fatalf("operator %s did not log where it serves %s within %v", o.logPath, server, operatorStartTimeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// httpClient is for the operator's own servers, on loopback.
var httpClient = &http.Client{Timeout: 5 * time.Second}

// httpGet GETs url and returns the status code and body.
func httpGet(url string) (int, string, error) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// mustGetStatus fails the test unless GET url answers want.
func mustGetStatus(t *testing.T, url string, want int) string {
	t.Helper()
	code, body, err := httpGet(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if code != want {
		t.Errorf("GET %s: %d, want %d; body %q", url, code, want, truncate(body, 200))
	}
	return body
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// identityLine is where an operator with -leader-elect tells its identity,
// the one in the Lease and in its user agent.
var identityLine = regexp.MustCompile(`"Waiting to become the leader" lease="[^"]*" identity="([^"]+)"`)

// mustIdentity waits for the operator, started with -leader-elect, to log its
// leader election identity, and returns it.
func mustIdentity(t *testing.T, o *operator, offset int64) string {
	t.Helper()
	mustLog(t, o, offset, `"Waiting to become the leader"`, operatorStartTimeout)
	m := identityLine.FindStringSubmatch(logSince(o, offset))
	if m == nil {
		t.Fatalf("operator %s logged \"Waiting to become the leader\" without its identity", o.logPath)
	}
	return m[1]
}

// userAgentIdentity is the identity in an operator's user agent,
// "robot-operator/VERSION (IDENTITY)", or "" if there is none.
func userAgentIdentity(userAgent string) string {
	rest, ok := strings.CutPrefix(userAgent, operatorUserAgentPrefix)
	if !ok {
		return ""
	}
	open, end := strings.Index(rest, " ("), strings.LastIndex(rest, ")")
	if open < 0 || end < open {
		return ""
	}
	return rest[open+2 : end]
}

// leaseName is the leader election Lease the tests' operators compete for:
// the default -leader-elect-id, and the only Lease that the shipped RBAC
// (artifacts/deploy/leader-election-rbac.yaml) lets the operator's
// ServiceAccount read and renew, so a name of the test's own would be
// refused.
const leaseName = "robot-operator"

// newLease returns the name of the leader election Lease, in leaseNamespace
// (created if need be), after deleting any Lease of that name an earlier
// test or run left, so that the operators never wait for a stale holder's
// Lease to expire. It deletes the Lease again when the test ends. Call it
// before starting the operators that use it, so that they are stopped
// before the Lease is deleted.
func newLease(t *testing.T) string {
	t.Helper()
	requireExclusive(t, "takes the leader election Lease")
	_, err := env.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", leaseNamespace, err)
	}
	deleteLease := func() error {
		err := env.kube.CoordinationV1().Leases(leaseNamespace).Delete(context.Background(), leaseName, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if err := deleteLease(); err != nil {
		t.Fatalf("deleting the Lease %s/%s left from before: %v", leaseNamespace, leaseName, err)
	}
	t.Cleanup(func() {
		if err := deleteLease(); err != nil {
			t.Errorf("deleting Lease %s/%s: %v", leaseNamespace, leaseName, err)
		}
	})
	return leaseName
}

// leaseHolder returns the holder of the Lease id, "" when none holds it.
func leaseHolder(ctx context.Context, id string) (string, error) {
	lease, err := env.kube.CoordinationV1().Leases(leaseNamespace).Get(ctx, id, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
}

// requireAuditLog fails the test unless the API server's audit log can be
// read.
func requireAuditLog(t *testing.T) {
	t.Helper()
	if env.audit.err != nil {
		t.Fatalf("this test reads the operator's writes from the API server's audit log: %v", env.audit.err)
	}
}

// logSize returns how long the operator's log is now: where what it logs
// next begins.
func logSize(t *testing.T, o *operator) int64 {
	t.Helper()
	info, err := os.Stat(o.logPath)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}
