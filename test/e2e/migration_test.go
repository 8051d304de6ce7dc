//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// TestMigrationContinuesPastARefusedRobot: Robots stored as v1alpha1, one of
// which an admission policy refuses to let anyone update. The operator
// rewrites the others in v1beta1, the one before the refused Robot and the
// one after it; the refused Robot gets a StorageMigrationFailed Warning
// Event and the metrics count it, and storedVersions keeps v1alpha1. Once
// the policy goes, only the refused Robot is written again, and
// storedVersions becomes [v1beta1].
func TestMigrationContinuesPastARefusedRobot(t *testing.T) {
	exclusive(t, "changes the Robot CRD's storage version and storedVersions, and restarts the shared operator to migrate")
	if env.audit.err != nil {
		t.Fatalf("this test reads the operator's writes in the API server's audit log: %v", env.audit.err)
	}
	ctx := t.Context()
	crds := crdClient(t)
	ns := newNamespace(t)
	t.Cleanup(func() {
		// This tree's CRD, storing v1beta1, whatever happened.
		if err := installCRD(context.Background()); err != nil {
			t.Errorf("installing this tree's CRD again: %v", err)
		}
	})

	// Robots stored as v1alpha1, as an earlier release stored them: the
	// CRD stores v1alpha1 while they are created, then v1beta1 again.
	setStorageVersion(t, crds, "v1alpha1")
	const before, refused, after = "a-before", "m-refused", "z-after"
	uids := map[string]types.UID{}
	for _, name := range []string{before, refused, after} {
		robot := &robotv1alpha1.Robot{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       robotv1alpha1.RobotSpec{Image: image1, Replicas: ptr.To[int32](1)},
		}
		created, err := env.robots.RobotV1alpha1().Robots(ns).Create(ctx, robot, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating Robot %s through v1alpha1: %v", name, err)
		}
		uids[name] = created.UID
	}
	if err := installCRD(ctx); err != nil {
		t.Fatal(err)
	}
	crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "robots.robot.dev", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(crd.Status.StoredVersions, "v1alpha1") {
		t.Fatalf("storedVersions %v after Robots were stored as v1alpha1, want it to list v1alpha1", crd.Status.StoredVersions)
	}
	removePolicy := refuseUpdatesOf(t, ns, refused)

	logOffset := logSize(t, env.operator)
	started := restartOperator(t)
	migrationPatches := func(ctx context.Context, name string, code int) (int, error) {
		events, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: started, Verb: "patch",
			Namespace: ns, Resource: "robots", Name: name, Code: code})
		n := 0
		for _, e := range events {
			if e.ObjectRef.Subresource == "" {
				n++
			}
		}
		return n, err
	}
	// The refused Robot's rewrite is refused, and the Robots on either
	// side of it are rewritten.
	for _, c := range []struct {
		name string
		code int
	}{{refused, 422}, {before, 200}, {after, 200}} {
		eventually(t, upgradeTimeout, fmt.Sprintf("the operator patched Robot %s, answered %d", c.name, c.code), func(ctx context.Context) (bool, string, error) {
			n, err := migrationPatches(ctx, c.name, c.code)
			return n > 0, fmt.Sprintf("%d patches", n), err
		})
	}
	events := waitForEvents(t, ns, uids[refused], "StorageMigrationFailed", 1)
	if events[0].Type != corev1.EventTypeWarning || !strings.Contains(events[0].Message, refusalMessage) {
		t.Errorf("event %s, want a Warning that quotes the refusal %q", summarizeEvents(events), refusalMessage)
	}
	metricsURL := "http://" + mustServingAddress(t, env.operator, logOffset, "metrics") + "/metrics"
	eventually(t, convergeTimeout, "the metrics count the refusal, and one Robot left", func(context.Context) (bool, string, error) {
		m, err := scrapeErr(metricsURL)
		if err != nil {
			return false, err.Error(), nil
		}
		return m.sum("robot_operator_storage_migration_failures_total") >= 1 && m.sum("robot_operator_storage_migration_robots_left") == 1,
			strings.Join(m.lines("robot_operator_storage_migration_failures_total", "robot_operator_storage_migration_robots_left"), "; "), nil
	})
	crd, err = crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "robots.robot.dev", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(crd.Status.StoredVersions, "v1alpha1") {
		t.Errorf("storedVersions %v while a Robot could not be rewritten, want v1alpha1 kept", crd.Status.StoredVersions)
	}

	removePolicy()
	waitForCRD(t, func(crd string) bool { return strings.Contains(crd, `"storedVersions":["v1beta1"]`) }, "lists v1beta1 alone in storedVersions")
	for name, want := range map[string]int{before: 1, after: 1} {
		if n, err := migrationPatches(ctx, name, 0); err != nil || n != want {
			t.Errorf("the operator patched Robot %s %d times (%v), want %d: only the refused Robot is retried", name, n, err, want)
		}
	}
	if n, err := migrationPatches(ctx, refused, 200); err != nil || n != 1 {
		t.Errorf("the operator's patches of Robot %s that passed: %d (%v), want 1", refused, n, err)
	}
	m := scrape(t, metricsURL)
	if left := m.sum("robot_operator_storage_migration_robots_left"); left != 0 {
		t.Errorf("robot_operator_storage_migration_robots_left %v once done, want 0", left)
	}
}

// crdClient returns a client of the CustomResourceDefinitions.
func crdClient(t *testing.T) apiextensionsclient.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// setStorageVersion makes the Robot CRD store version, and waits until the
// API server lists it in storedVersions.
func setStorageVersion(t *testing.T, crds apiextensionsclient.Interface, version string) {
	t.Helper()
	client := crds.ApiextensionsV1().CustomResourceDefinitions()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := client.Get(t.Context(), "robots.robot.dev", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
		}
		_, err = client.Update(t.Context(), crd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("making the Robot CRD store %s: %v", version, err)
	}
	eventually(t, convergeTimeout, "the Robot CRD lists "+version+" in storedVersions", func(ctx context.Context) (bool, string, error) {
		crd, err := client.Get(ctx, "robots.robot.dev", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return slices.Contains(crd.Status.StoredVersions, version) && established(crd), fmt.Sprint(crd.Status.StoredVersions), nil
	})
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// refusalMessage is what the policy of refuseUpdatesOf answers.
const refusalMessage = "this Robot is frozen by the e2e test"

// refuseUpdatesOf makes a ValidatingAdmissionPolicy refuse every update of
// the Robot ns/name (not of its status), as Invalid, and waits until it
// does. It returns a function that removes the policy, which the test's
// cleanup calls too.
func refuseUpdatesOf(t *testing.T, ns, name string) func() {
	t.Helper()
	policyName := "e2e-freeze-" + ns
	admission := env.kube.AdmissionregistrationV1()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{"robot.dev"},
							APIVersions: []string{"*"},
							Resources:   []string{"robots"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("object.metadata.name != %q", name),
				Message:    refusalMessage,
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			},
		},
	}
	remove := func() {
		for _, err := range []error{
			admission.ValidatingAdmissionPolicyBindings().Delete(context.Background(), policyName, metav1.DeleteOptions{}),
			admission.ValidatingAdmissionPolicies().Delete(context.Background(), policyName, metav1.DeleteOptions{}),
		} {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("removing the policy %s: %v", policyName, err)
			}
		}
	}
	t.Cleanup(remove)
	if _, err := admission.ValidatingAdmissionPolicies().Create(t.Context(), policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ValidatingAdmissionPolicy %s: %v", policyName, err)
	}
	if _, err := admission.ValidatingAdmissionPolicyBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ValidatingAdmissionPolicyBinding %s: %v", policyName, err)
	}
	eventually(t, convergeTimeout, "the policy refuses updates of Robot "+name, func(ctx context.Context) (bool, string, error) {
		_, err := env.robots.RobotV1beta1().Robots(ns).Patch(ctx, name, types.MergePatchType, []byte("{}"), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return false, "a dry-run patch was allowed", nil
		}
		return strings.Contains(err.Error(), refusalMessage), err.Error(), nil
	})
	return remove
}
