package app

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/robot-operator/robot-operator/internal/observe"

	robotac "github.com/robot-operator/robot-operator/pkg/generated/applyconfiguration/robot/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestObserveOnlyClientsRefuseWrites: every client an observe-only operator
// builds (the syncs', the CRD's, the Gateway API's, the Lease's were one
// made, the reviews') refuses every write before it leaves the process:
// the API server sees reads, and the reviews that store nothing, only.
func TestObserveOnlyClientsRefuseWrites(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
			_, _ = w.Write([]byte(`{"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","status":{"authenticated":false}}`))
		default:
			_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"robots"}}`))
		}
	}))
	defer server.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	cfg, err := restConfig(Options{Master: server.URL, QPS: 100, Burst: 100, ObserveOnly: true}, "observer")
	if err != nil {
		t.Fatal(err)
	}
	c, err := newClients(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	leases, err := newLeaseClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "robots"}}
	writes := map[string]func() error{
		"create a Deployment": func() error {
			_, err := c.kube.AppsV1().Deployments("robots").Create(ctx, deployment, metav1.CreateOptions{})
			return err
		},
		"apply a Deployment": func() error {
			_, err := c.kube.AppsV1().Deployments("robots").Apply(ctx, appsv1ac.Deployment("web", "robots"), metav1.ApplyOptions{FieldManager: "robot-operator"})
			return err
		},
		"patch a Deployment": func() error {
			_, err := c.kube.AppsV1().Deployments("robots").Patch(ctx, "web", types.JSONPatchType, []byte(`[]`), metav1.PatchOptions{})
			return err
		},
		"update a Deployment": func() error {
			_, err := c.kube.AppsV1().Deployments("robots").Update(ctx, deployment, metav1.UpdateOptions{})
			return err
		},
		"delete a Service": func() error {
			return c.kube.CoreV1().Services("robots").Delete(ctx, "web", metav1.DeleteOptions{})
		},
		"create an Event": func() error {
			_, err := c.kube.CoreV1().Events("robots").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}}, metav1.CreateOptions{})
			return err
		},
		"create the webhook's Secret": func() error {
			_, err := c.kube.CoreV1().Secrets("robots").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cert"}}, metav1.CreateOptions{})
			return err
		},
		"apply a Robot's status": func() error {
			_, err := c.robots.RobotV1beta1().Robots("robots").ApplyStatus(ctx, robotac.Robot("web", "robots"), metav1.ApplyOptions{FieldManager: "robot-operator"})
			return err
		},
		"patch a Robot (the storage migration)": func() error {
			_, err := c.robots.RobotV1beta1().Robots("robots").Patch(ctx, "web", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
			return err
		},
		"update the CRD (its caBundle, its storedVersions)": func() error {
			_, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: robotsCRD}}, metav1.UpdateOptions{})
			return err
		},
		"create an HTTPRoute": func() error {
			_, err := c.gateway.GatewayV1().HTTPRoutes("robots").Create(ctx, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{})
			return err
		},
		"create a Lease": func() error {
			_, err := leases.CoordinationV1().Leases("robots").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "robot-operator"}}, metav1.CreateOptions{})
			return err
		},
	}
	for what, write := range writes {
		var refused *observe.ErrWriteRefused
		if err := write(); !errors.As(err, &refused) {
			t.Errorf("%s: %v, want it refused before it is sent", what, err)
		}
	}
	// Reads, and the reviews of the metrics endpoint, go through.
	if _, err := c.kube.CoreV1().Namespaces().Get(ctx, "robots", metav1.GetOptions{}); err != nil {
		t.Errorf("a read: %v", err)
	}
	if _, err := c.review.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{}); err != nil {
		t.Errorf("a TokenReview: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"GET /api/v1/namespaces/robots", "POST /apis/authentication.k8s.io/v1/tokenreviews"} {
		if !slices.Contains(seen, want) {
			t.Errorf("the API server saw %q, want %q among them", seen, want)
		}
	}
	for _, request := range seen {
		if !strings.HasPrefix(request, "GET ") && request != "POST /apis/authentication.k8s.io/v1/tokenreviews" {
			t.Errorf("the API server saw %q: a write", request)
		}
	}
}

// TestObservingTurnsOffWhatWrites: an observe-only operator holds no Lease
// and serves no webhook whatever its flags say, and runs no migration.
func TestObservingTurnsOffWhatWrites(t *testing.T) {
	opts := Options{ObserveOnly: true, Webhook: WebhookOptions{Addr: ":9443"}}
	opts.LeaderElection.Enabled = true
	got := observing(klog.Background(), opts)
	if got.LeaderElection.Enabled || got.Webhook.Addr != "0" {
		t.Errorf("observe-only: leader election %v, webhook address %q; want neither", got.LeaderElection.Enabled, got.Webhook.Addr)
	}
	// The check before a change creates a pod as a dry run: a POST its
	// clients would refuse. An observe-only operator makes no check.
	checked := &clients{preflight: kubefake.NewClientset()}
	observingClients(got, checked)
	if checked.preflight != nil {
		t.Error("observe-only: the check before a change has a client; want none")
	}
	writes := &clients{preflight: kubefake.NewClientset()}
	if observingClients(Options{}, writes); writes.preflight == nil {
		t.Error("an operator that writes: the check before a change lost its client")
	}
	if writing := observing(klog.Background(), Options{Webhook: WebhookOptions{Addr: ":9443"}}); writing.Webhook.Addr != ":9443" {
		t.Errorf("an operator that writes: webhook address %q, want it as given", writing.Webhook.Addr)
	}
	c := &clients{}
	if migrator, err := newMigrator(Options{ObserveOnly: true}, c, nil, nil); err != nil || migrator != nil {
		t.Errorf("observe-only: migrator %v, %v; want none", migrator, err)
	}
}

// TestObservePageIsForLoopbackOnly: the report names Robots of every
// namespace and the values their Deployments differ by, on the health
// probes' port, which the kubelet must reach from the node: it is
// answered only to a connection from the pod itself (kubectl
// port-forward, or a local run), wherever the NetworkPolicy is not
// enforced. The probes are answered to all.
func TestObservePageIsForLoopbackOnly(t *testing.T) {
	report := observe.NewReport(klog.Background())
	health := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	handler := healthHandler(health, report)
	for _, c := range []struct {
		path, remote string
		want         int
	}{
		{ObservePath, "127.0.0.1:40000", http.StatusOK},
		{ObservePath, "[::1]:40000", http.StatusOK},
		{ObservePath, "10.244.1.7:40000", http.StatusForbidden},
		{ObservePath, "[fd00::7]:40000", http.StatusForbidden},
		{ObservePath, "192.0.2.1", http.StatusForbidden},
		{"/readyz", "10.244.1.7:40000", http.StatusOK},
	} {
		request := httptest.NewRequest(http.MethodGet, c.path, nil)
		request.RemoteAddr = c.remote
		recorder := httptest.NewRecorder()
		handler.ServeHTTP(recorder, request)
		if recorder.Code != c.want {
			t.Errorf("GET %s from %s: %d, want %d", c.path, c.remote, recorder.Code, c.want)
		}
		if c.want == http.StatusForbidden && strings.Contains(recorder.Body.String(), "Robots checked") {
			t.Errorf("GET %s from %s was answered the report: %q", c.path, c.remote, recorder.Body.String())
		}
	}
}
