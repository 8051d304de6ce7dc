//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// metricsReaderRole is the ClusterRole of artifacts/deploy/metrics-rbac.yaml
// that lets a scraper get /metrics.
const metricsReaderRole = "robot-operator-metrics-reader"

// TestSecureMetrics: an operator with -metrics-secure, running as its
// ServiceAccount with the shipped RBAC, serves /metrics over HTTPS only to
// a caller whose token RBAC lets get it: no token 401, a ServiceAccount
// without the reader role 403, one bound to it 200. The health probes stay
// plain HTTP for the kubelet.
func TestSecureMetrics(t *testing.T) {
	exclusive(t, "it runs an operator of its own that waits for the leader election Lease, which the leader election tests share")
	start := time.Now()
	// The operator under test only waits for the Lease, held by someone
	// else: it serves metrics but never writes, so the shared operator
	// keeps running.
	leaseID := newLease(t)
	now := metav1.NewMicroTime(time.Now())
	if _, err := env.kube.CoordinationV1().Leases(leaseNamespace).Create(t.Context(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: leaseID},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("e2e-secure-metrics-holder"),
			LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	ns := newNamespace(t)
	readerToken := serviceAccountToken(t, ns, "scraper")
	strangerToken := serviceAccountToken(t, ns, "stranger")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + ns + "-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReaderRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns}},
	}
	if _, err := env.kube.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})

	o := extraOperator(t, "secure-metrics", sharedArgs(append(leaderElectArgs(leaseID), "-metrics-secure=true")...))
	offset := launch(t, o)
	mustLog(t, o, offset, `"Waiting to become the leader"`, operatorStartTimeout)
	url := "https://" + mustServingAddress(t, o, offset, "metrics") + "/metrics"

	if code, body := getWithToken(t, url, ""); code != http.StatusUnauthorized {
		t.Errorf("GET %s without a token: %d %q, want 401", url, code, truncate(body, 200))
	}
	if code, body := getWithToken(t, url, strangerToken); code != http.StatusForbidden {
		t.Errorf("GET %s as %s/stranger (no reader role): %d %q, want 403", url, ns, code, truncate(body, 200))
	}
	// RBAC reaches the API server's authorizer within moments of the
	// binding, and the operator remembers a refusal for ten seconds. The
	// operator is a follower, so its leader gauge says 0.
	eventually(t, 30*time.Second, "the reader gets the metrics", func(context.Context) (bool, string, error) {
		code, body := getWithToken(t, url, readerToken)
		return code == http.StatusOK && strings.Contains(body, "\nrobot_operator_leader 0\n"), fmt.Sprintf("%d %q", code, truncate(body, 200)), nil
	})
	// Plain HTTP on the HTTPS port gets no metrics.
	if code, body, err := httpGet("http://" + strings.TrimPrefix(url, "https://")); err == nil && strings.Contains(body, "robot_operator_") {
		t.Errorf("GET over plain HTTP: %d with the metrics, want none", code)
	}
	// Ready once its caches have synced and discovery has said whether the
	// Gateway API is there, which may come a moment after the metrics.
	waitForStatus(t, "http://"+mustServingAddress(t, o, offset, "health probes")+"/readyz", http.StatusOK)

	// The reviews are what the shipped RBAC allows: never a 403.
	if err := checkNeverForbidden(start); err != nil {
		t.Error(err)
	}
}

// serviceAccountToken creates the ServiceAccount ns/name and returns a token
// of it.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	if _, err := env.kube.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(mustKubectl(t, "create", "token", name, "-n", ns, "--duration=1h"))
}

// metricsClient speaks HTTPS to the operator's metrics server. The
// certificate is the self-signed one the operator made at start-up, which
// no client can verify; what is under test is who gets the metrics.
var metricsClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
}

// getWithToken GETs url with token as bearer token (none when empty).
func getWithToken(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}
