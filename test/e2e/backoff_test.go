//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// deniedPrefix starts the names of the Deployments that denyDeployments
// refuses.
const deniedPrefix = "e2e-denied-"

// denyMessage is what the policy says when it refuses a Deployment.
const denyMessage = "the e2e test denies Deployments named " + deniedPrefix + "*"

// denyDeployments makes the API server refuse, with 403 Forbidden, to create
// or update Deployments in ns whose name starts with deniedPrefix, until the
// test ends. It returns once the refusal is in force.
func denyDeployments(t *testing.T, ns string) {
	t.Helper()
	name := "e2e-deny-" + ns
	admission := env.kube.AdmissionregistrationV1()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{"apps"},
							APIVersions: []string{"v1"},
							Resources:   []string{"deployments"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("!object.metadata.name.startsWith(%q)", deniedPrefix),
				Message:    denyMessage,
				// 403, which the operator retries; with the default,
				// Invalid (422), it would take the spec for invalid and
				// stop.
				Reason: ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			},
		},
	}
	if _, err := admission.ValidatingAdmissionPolicies().Create(t.Context(), policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ValidatingAdmissionPolicy %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := admission.ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting ValidatingAdmissionPolicy %s: %v", name, err)
		}
	})
	if _, err := admission.ValidatingAdmissionPolicyBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ValidatingAdmissionPolicyBinding %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := admission.ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting ValidatingAdmissionPolicyBinding %s: %v", name, err)
		}
	})

	// The API server takes a moment to enforce a new policy: wait until it
	// refuses a Deployment of the test's own (sent as a dry run).
	probe := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: deniedPrefix + "probe", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "probe"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: image1}}},
			},
		},
	}
	eventually(t, convergeTimeout, "the policy refuses Deployments named "+deniedPrefix+"* with 403", func(ctx context.Context) (bool, string, error) {
		_, err := env.kube.AppsV1().Deployments(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return false, "a dry-run create was allowed", nil
		}
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), denyMessage), err.Error(), nil
	})
}

// TestFailingRobotBacksOff: the operator retries a Robot whose Deployment it
// cannot write with growing delays, not in a hot loop, and keeps converging
// the other Robots meanwhile.
func TestFailingRobotBacksOff(t *testing.T) {
	parallel(t)
	if env.audit.err != nil {
		t.Fatalf("this test counts the operator's writes in the API server's audit log: %v", env.audit.err)
	}
	ns := newNamespace(t)
	denyDeployments(t, ns)

	const denied = deniedPrefix + "robot"
	const window = 20 * time.Second
	start := time.Now()
	createRobot(t, newRobot(ns, denied, 1))
	createRobot(t, newRobot(ns, "healthy", 1))

	robot := waitForRobotReason(t, ns, denied, metav1.ConditionFalse, robotv1beta1.ReasonSyncFailed, convergeTimeout)
	if msg := readyCondition(robot).Message; !strings.Contains(msg, denyMessage) {
		t.Errorf("the Ready message does not give the API server's reason (%q): %q", denyMessage, msg)
	}
	waitForRobotReady(t, ns, "healthy")
	t.Logf("the other Robot was Ready %v after the Robots were created", time.Since(start).Round(time.Millisecond))

	time.Sleep(time.Until(start.Add(window)))
	attempts, err := env.audit.find(auditQuery{
		UserAgentPrefix: operatorUserAgentPrefix,
		After:           start,
		Before:          start.Add(window),
		Namespace:       ns,
		Resource:        "deployments",
		Name:            denied,
	})
	if err != nil {
		t.Fatal(err)
	}
	var report strings.Builder
	for i, a := range attempts {
		gap := ""
		if i > 0 {
			gap = fmt.Sprintf(" (+%v)", a.RequestReceivedTimestamp.Sub(attempts[i-1].RequestReceivedTimestamp).Round(time.Millisecond))
		}
		fmt.Fprintf(&report, "\n  %2d. %s%s", i+1, &a, gap)
		if a.code() != http.StatusForbidden {
			t.Errorf("attempt %d was answered %d, want %d: %s", i+1, a.code(), http.StatusForbidden, &a)
		}
	}
	t.Logf("the operator tried to write Deployment %s %d times in the %v after the Robot was created:%s", denied, len(attempts), window, report.String())
	if n := len(attempts); n < 2 || n > 15 {
		t.Errorf("%d write attempts in %v; want between 2 (it retries) and 15 (it backs off)", n, window)
	}
	if n := len(attempts); n >= 2 {
		if last := attempts[n-1].RequestReceivedTimestamp.Sub(attempts[n-2].RequestReceivedTimestamp); last < time.Second {
			t.Errorf("the last two attempts were %v apart; after %d failures the operator should wait longer", last, n-1)
		}
	}
}
