//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// startObserver starts an observe-only operator with args, and returns it
// and the identity in its user agent.
func startObserver(t *testing.T, name string, args []string) (*operator, string) {
	t.Helper()
	o := extraOperator(t, name, args)
	if err := o.start(); err != nil {
		t.Fatal(err)
	}
	mustLog(t, o, 0, `"Observe-only: writing nothing`, operatorStartTimeout)
	m := observeIdentityLine.FindStringSubmatch(logSince(o, 0))
	if m == nil {
		t.Fatalf("the observe-only operator %s did not log its identity", name)
	}
	return o, m[1]
}

// observeIdentityLine is where an observe-only operator tells its identity,
// the one in its user agent.
var observeIdentityLine = regexp.MustCompile(`"Observe-only: writing nothing, reporting what this release would change" identity="([^"]+)"`)

// TestObserveOnlyPreviewsAnUpgrade: beside the shared operator, converged
// on four Robots, an operator run with -observe-only and another policy
// reports exactly the Robots whose pod template that policy changes, as
// rolling their pods, the others as unchanged, in its log, its gauges and
// its page; and the API server's audit log shows it wrote nothing, not
// even a Lease, although it was started with -leader-elect. Run again as the
// ServiceAccount of artifacts/observe, whose RBAC reads only, it reports the
// same, and tries no write.
//
// The policy: no flag changes the pod template by itself, so the test uses
// the one that holds it back. The shared operator runs with the default
// -max-termination-grace-period (an hour): two Robots asking for two hours
// keep their Deployments as they were. The next release, previewed, allows
// a day: it would apply those two templates, and roll their pods.
func TestObserveOnlyPreviewsAnUpgrade(t *testing.T) {
	exclusive(t, "it runs an observe-only operator of its own beside the shared one")
	requireAuditLog(t)
	ns := newNamespace(t)
	for _, name := range []string{"steady-1", "steady-2", "held-1", "held-2"} {
		robot := newRobot(ns, name, 1)
		robot.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
		createRobot(t, robot)
	}
	for _, name := range []string{"steady-1", "steady-2", "held-1", "held-2"} {
		waitForRobotReady(t, ns, name)
	}
	for _, name := range []string{"held-1", "held-2"} {
		patchRobot(t, ns, name, `{"spec":{"terminationGracePeriodSeconds":7200}}`)
		syncedReason(t, ns, name, robotv1beta1.ReasonGracePeriodNotAllowed)
	}

	start := time.Now()
	// With the shared operator's credentials, which may write: what keeps
	// it from writing is its own.
	o, identity := startObserver(t, "observe", sharedArgs(append([]string{"-observe-only", "-namespace=" + ns, "-max-termination-grace-period=24h"},
		leaderElectArgs("robot-operator")...)...))

	// The page: four Robots checked, the two held ones would roll.
	page := "http://" + mustServingAddress(t, o, 0, "health probes") + "/observe"
	var body string
	eventually(t, convergeTimeout, "the observe-only operator reports the four Robots", func(context.Context) (bool, string, error) {
		code, b, err := httpGet(page)
		body = b
		return code == 200 && strings.HasPrefix(b, "observe-only: 4 Robots checked"), b, err
	})
	if !strings.HasPrefix(body, "observe-only: 4 Robots checked, 2 would change, 2 would roll their pods\n") {
		t.Errorf("the page's totals:\n%s\nwant 4 checked, 2 would change, 2 would roll their pods", body)
	}
	for _, name := range []string{"held-1", "held-2"} {
		want := fmt.Sprintf("%s/%s (ROLLS PODS)\n  update Deployment %s: spec.template.spec.terminationGracePeriodSeconds is 30; the Robot asks for 7200 (rolls the pods)\n", ns, name, name)
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
	for _, name := range []string{"steady-1", "steady-2"} {
		if strings.Contains(body, ns+"/"+name) {
			t.Errorf("the page names %s, which would not change:\n%s", name, body)
		}
	}
	t.Logf("the page:\n%s", body)

	// The log: one line per Robot that would change, and none for the
	// others.
	log := logSince(o, 0)
	for _, name := range []string{"held-1", "held-2"} {
		if !strings.Contains(log, fmt.Sprintf(`"Robot would change" robot="%s/%s" rollsPods=true`, ns, name)) {
			t.Errorf("the log has no line for %s", name)
		}
	}
	for _, name := range []string{"steady-1", "steady-2"} {
		if strings.Contains(log, fmt.Sprintf(`"Robot would change" robot="%s/%s"`, ns, name)) {
			t.Errorf("the log says %s would change", name)
		}
	}

	// The gauges.
	metrics := scrape(t, "http://"+mustServingAddress(t, o, 0, "metrics")+"/metrics")
	for state, want := range map[string]float64{"checked": 4, "would_change": 2, "would_roll_pods": 2} {
		samples := metrics.matching("robot_operator_observe_robots", `state="`+state+`"`)
		if len(samples) != 1 || samples[0].value != want {
			t.Errorf("robot_operator_observe_robots{state=%q}: %v, want %v", state, samples, want)
		}
	}
	if samples := metrics.matching("robot_operator_observe_object_changes", `kind="Deployment"`, `action="update"`); len(samples) != 1 || samples[0].value != 2 {
		t.Errorf("robot_operator_observe_object_changes of Deployment updates: %v, want 2", samples)
	}
	// Its clients never even tried a write: the writer reported each one
	// instead, and the transport that would have refused it was not
	// needed. (A refused request is counted too, with code "<error>".)
	// The POSTs that went through are the questions it asks at its start,
	// which config it may watch (a SelfSubjectAccessReview per kind and
	// verb, which stores nothing): the transport lets no other POST out.
	var requests []string
	reviews := 0.0
	for _, s := range metrics.matching("rest_client_requests_total") {
		requests = append(requests, s.line)
		switch {
		case strings.Contains(s.labels, `method="GET"`):
		case strings.Contains(s.labels, `method="POST"`) && strings.Contains(s.labels, `code="201"`):
			reviews += s.value
		default:
			t.Errorf("the observe-only operator sent, or tried to send, a write: %s", s.line)
		}
	}
	if reviews > 4 {
		t.Errorf("the observe-only operator sent %v POSTs; want at most the 4 reviews of what config it may watch", reviews)
	}
	t.Logf("the observe-only operator's requests:\n%s", strings.Join(requests, "\n"))

	// Meanwhile the shared operator writes as ever: the audit log records
	// this window's writes.
	control := newNamespace(t)
	createRobot(t, newRobot(control, "control", 1))
	waitForRobotReady(t, control, "control")
	terminate(t, o)
	waitExitedCleanly(t, o, 40*time.Second)
	time.Sleep(2 * time.Second) // the audit log is written asynchronously

	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: start})
	if err != nil {
		t.Fatal(err)
	}
	var mine, others int
	for _, e := range writes {
		if userAgentIdentity(e.UserAgent) == identity {
			mine++
			t.Errorf("the observe-only operator wrote: %s", e.String())
		} else if e.ObjectRef != nil && e.ObjectRef.Namespace == control {
			others++
		}
	}
	if others == 0 {
		t.Errorf("the audit log has no write of the shared operator in namespace %s since %s: it cannot show that the observe-only one wrote nothing", control, start.UTC().Format(time.RFC3339))
	}
	t.Logf("audit log since the observe-only operator started: %d writes by it, %d by the shared operator in %s", mine, others, control)

	// The same as the ServiceAccount of artifacts/observe, whose RBAC
	// reads only: it is enough to report.
	rbac := filepath.Join(env.root, "artifacts", "observe", "rbac.yaml")
	mustKubectl(t, "apply", "-n", operatorNamespace, "-f", rbac)
	t.Cleanup(func() {
		if _, stderr, err := kubectl(context.Background(), "", "delete", "-n", operatorNamespace, "--ignore-not-found", "-f", rbac); err != nil {
			t.Errorf("deleting the observer's RBAC: %v\n%s", err, stderr)
		}
	})
	kubeconfig := filepath.Join(t.TempDir(), "observe-kubeconfig")
	token := strings.TrimSpace(mustKubectl(t, "create", "token", "robot-operator-observe", "-n", operatorNamespace, "--duration=1h"))
	config, err := clientcmd.LoadFromFile(env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name := range config.AuthInfos {
		config.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	}
	if err := clientcmd.WriteToFile(*config, kubeconfig); err != nil {
		t.Fatal(err)
	}
	args, index, _, _ := kubeconfigArg(t, sharedArgs("-observe-only", "-namespace="+ns, "-max-termination-grace-period=24h"))
	args[index] = "-kubeconfig=" + kubeconfig
	readOnlyStart := time.Now()
	readOnly, readOnlyIdentity := startObserver(t, "observe-read-only", args)
	readOnlyPage := "http://" + mustServingAddress(t, readOnly, 0, "health probes") + "/observe"
	eventually(t, convergeTimeout, "the read-only observer reports the four Robots, two rolling", func(context.Context) (bool, string, error) {
		code, b, err := httpGet(readOnlyPage)
		return code == 200 && strings.HasPrefix(b, "observe-only: 4 Robots checked, 2 would change, 2 would roll their pods\n"), b, err
	})
	terminate(t, readOnly)
	waitExitedCleanly(t, readOnly, 40*time.Second)
	time.Sleep(2 * time.Second)
	writes, err = env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: readOnlyStart})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range writes {
		if userAgentIdentity(e.UserAgent) == readOnlyIdentity {
			t.Errorf("the observe-only operator with read-only RBAC wrote, or tried to: %s", e.String())
		}
	}

	// Nothing changed: the held Robots' Deployments still run the old
	// template, and their status still says why.
	for _, name := range []string{"held-1", "held-2"} {
		if grace := getDeployment(t, ns, name).Spec.Template.Spec.TerminationGracePeriodSeconds; grace == nil || *grace != 30 {
			t.Errorf("Deployment %s: terminationGracePeriodSeconds %v, want 30 as it was", name, grace)
		}
		syncedReason(t, ns, name, robotv1beta1.ReasonGracePeriodNotAllowed)
	}
}
