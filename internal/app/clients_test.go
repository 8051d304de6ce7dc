package app

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robotclient"
	"github.com/robot-operator/robot-operator/internal/serving"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// TestReviewClient: the metrics endpoint's reviews go through a rate
// limiter of their own, not the one the syncs share.
func TestReviewClient(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443", QPS: 1000, Burst: 2000}
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	shared := cfg.RateLimiter

	syncClient, err := kubernetes.NewForConfig(protobufConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	reviewClient, err := kubernetes.NewForConfig(reviewConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if got := syncClient.AppsV1().RESTClient().GetRateLimiter(); got != shared {
		t.Fatalf("the sync client does not use the shared limiter")
	}
	for name, limiter := range map[string]flowcontrol.RateLimiter{
		"TokenReviews":         reviewClient.AuthenticationV1().RESTClient().GetRateLimiter(),
		"SubjectAccessReviews": reviewClient.AuthorizationV1().RESTClient().GetRateLimiter(),
	} {
		if limiter == shared {
			t.Errorf("%s go through the syncs' rate limiter", name)
		}
		if limiter == nil || limiter.QPS() != serving.MetricsReviewQPS {
			t.Errorf("%s: a rate limiter of %v QPS, want %v", name, limiter, serving.MetricsReviewQPS)
		}
	}
	if cfg.RateLimiter != shared || cfg.QPS != 1000 || cfg.Burst != 2000 {
		t.Error("reviewConfig changed the configuration it was given")
	}
}

// TestCompression: the operator does not ask the API server to gzip its
// responses unless -kube-api-compression says so. Gzip is CPU on both sides
// (the API server compresses every watch event and list it sends), which a
// client next to its API server gains nothing for; kube-controller-manager
// and kube-scheduler turn it off for the same reason.
// TestUserAgent: the API server's audit log names the operator's release
// and replica in every request's user agent.
func TestUserAgent(t *testing.T) {
	cfg, err := restConfig(Options{Master: "https://127.0.0.1:6443", QPS: 1, Burst: 1, Version: "v0.2.0"}, "node-1_0a1b")
	if err != nil {
		t.Fatal(err)
	}
	if want := "robot-operator/v0.2.0 (node-1_0a1b)"; cfg.UserAgent != want {
		t.Errorf("user agent %q, want %q", cfg.UserAgent, want)
	}
}

func TestCompression(t *testing.T) {
	var mu sync.Mutex
	var got []string
	// TLS and HTTP/2, as an API server speaks: client-go builds a
	// transport of its own only for TLS.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Proto+" "+r.URL.Path+" Accept-Encoding="+r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"List","apiVersion":"v1","items":[]}`))
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	for _, compression := range []bool{false, true} {
		mu.Lock()
		got = nil
		mu.Unlock()
		cfg, err := restConfig(Options{Master: srv.URL, QPS: 100, Burst: 100, Compression: compression}, "test")
		if err != nil {
			t.Fatal(err)
		}
		cfg.CAData = ca
		kube, err := kubernetes.NewForConfig(protobufConfig(cfg))
		if err != nil {
			t.Fatal(err)
		}
		robots, err := robotclient.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		lease, err := newLeaseClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		_, _ = kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
		_, _ = robots.RobotV1beta1().Robots("").List(ctx, metav1.ListOptions{})
		_, _ = lease.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{})

		mu.Lock()
		if len(got) != 3 {
			t.Fatalf("compression %v: %d requests reached the server, want 3: %q", compression, len(got), got)
		}
		for _, request := range got {
			if asked := strings.HasSuffix(request, "=gzip"); asked != compression {
				t.Errorf("-kube-api-compression=%v: %s", compression, request)
			}
		}
		mu.Unlock()
	}
}
