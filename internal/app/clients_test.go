package app

import (
	"testing"

	"github.com/robot-operator/robot-operator/internal/serving"

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
