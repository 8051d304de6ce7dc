package serving

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
)

// reviewer is a fake API server's answer to reviews: the users its tokens
// name, and the users allowed to get /metrics.
type reviewer struct {
	users   map[string]string // token -> user name
	readers map[string]bool   // users who may get /metrics
	failing bool              // every review fails

	// When gate is set, each TokenReview says so on entered, then waits
	// for gate to close.
	entered chan struct{}
	gate    chan struct{}
}

// client returns a fake clientset that answers TokenReviews and
// SubjectAccessReviews as r says.
func (r *reviewer) client() *fake.Clientset {
	client := fake.NewClientset()
	client.PrependReactor("create", "tokenreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if r.gate != nil {
			r.entered <- struct{}{}
			<-r.gate
		}
		if r.failing {
			return true, nil, errors.New("connection refused")
		}
		review := action.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if user, ok := r.users[review.Spec.Token]; ok {
			review.Status.Authenticated = true
			review.Status.User = authenticationv1.UserInfo{Username: user, Groups: []string{"system:authenticated"}}
		}
		return true, review, nil
	})
	client.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		review := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		attrs := review.Spec.NonResourceAttributes
		review.Status.Allowed = r.readers[review.Spec.User] && attrs != nil && attrs.Path == "/metrics" && attrs.Verb == "get"
		return true, review, nil
	})
	return client
}

// reviews counts the TokenReviews and SubjectAccessReviews sent.
func reviews(client *fake.Clientset) (tokenReviews, accessReviews int) {
	for _, a := range client.Actions() {
		switch a.GetResource().Resource {
		case "tokenreviews":
			tokenReviews++
		case "subjectaccessreviews":
			accessReviews++
		}
	}
	return tokenReviews, accessReviews
}

// get sends GET path with token (none when empty) through handler.
func get(handler http.Handler, path, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	return rec
}

var metricsOK = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("# metrics\n")) })

// TestMetricsAuth: who gets /metrics, and how many reviews each answer
// costs.
func TestMetricsAuth(t *testing.T) {
	r := &reviewer{
		users:   map[string]string{"prometheus-token": "system:serviceaccount:monitoring:prometheus", "other-token": "system:serviceaccount:default:default"},
		readers: map[string]bool{"system:serviceaccount:monitoring:prometheus": true},
	}
	for _, tc := range []struct {
		name          string
		header        string // the Authorization header
		path          string
		want          int
		tokenReviews  int
		accessReviews int
	}{
		{name: "no token", want: http.StatusUnauthorized},
		{name: "not a bearer token", header: "Basic dXNlcjpwYXNz", want: http.StatusUnauthorized},
		{name: "empty bearer token", header: "Bearer ", want: http.StatusUnauthorized},
		{name: "a token that does not authenticate", header: "Bearer made-up", want: http.StatusUnauthorized, tokenReviews: 1},
		{name: "a user without the reader role", header: "Bearer other-token", want: http.StatusForbidden, tokenReviews: 1, accessReviews: 1},
		{name: "a reader", header: "Bearer prometheus-token", want: http.StatusOK, tokenReviews: 1, accessReviews: 1},
		{name: "a reader, scheme in lower case", header: "bearer prometheus-token", want: http.StatusOK, tokenReviews: 1, accessReviews: 1},
		{name: "a reader, on another path", header: "Bearer prometheus-token", path: "/debug", want: http.StatusNotFound},
		{name: "a made-up token, on another path", header: "Bearer made-up", path: "/debug", want: http.StatusNotFound},
		{name: "a made-up token, on a 1 MiB path", header: "Bearer made-up", path: "/" + strings.Repeat("a", 1<<20), want: http.StatusNotFound},
		{name: "a token of over 8 KiB", header: "Bearer " + strings.Repeat("a", 8<<10+1), want: http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := r.client()
			handler := newMetricsAuth(ktesting.NewLogger(t, ktesting.DefaultConfig), client).wrap(metricsOK)
			path := tc.path
			if path == "" {
				path = "/metrics"
			}
			req := httptest.NewRequest(http.MethodGet, path, nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("answered %d %q, want %d", rec.Code, rec.Body.String(), tc.want)
			}
			if rec.Code == http.StatusOK && rec.Body.String() != "# metrics\n" {
				t.Errorf("answered 200 with body %q, want the metrics", rec.Body.String())
			}
			if rec.Code == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
			if tr, sar := reviews(client); tr != tc.tokenReviews || sar != tc.accessReviews {
				t.Errorf("sent %d TokenReviews and %d SubjectAccessReviews, want %d and %d", tr, sar, tc.tokenReviews, tc.accessReviews)
			}
		})
	}
}

// TestMetricsAuthCache: a scraper's decision is reused for a minute, a
// refusal for ten seconds; after that the API server is asked again, and
// sees a change of role.
func TestMetricsAuthCache(t *testing.T) {
	r := &reviewer{
		users:   map[string]string{"reader": "alice", "stranger": "bob"},
		readers: map[string]bool{"alice": true},
	}
	client := r.client()
	auth := newMetricsAuth(ktesting.NewLogger(t, ktesting.DefaultConfig), client)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	auth.now = func() time.Time { return now }
	handler := auth.wrap(metricsOK)

	step := func(what string, d time.Duration, token string, want, wantTokenReviews int) {
		t.Helper()
		now = now.Add(d)
		if got := get(handler, "/metrics", token).Code; got != want {
			t.Errorf("%s: answered %d, want %d", what, got, want)
		}
		if tr, _ := reviews(client); tr != wantTokenReviews {
			t.Errorf("%s: %d TokenReviews sent so far, want %d", what, tr, wantTokenReviews)
		}
	}
	step("first scrape", 0, "reader", http.StatusOK, 1)
	step("a scrape 15s later", 15*time.Second, "reader", http.StatusOK, 1)
	step("a scrape 59s after the first", 44*time.Second, "reader", http.StatusOK, 1)
	step("a scrape 60s after the first", time.Second, "reader", http.StatusOK, 2)
	step("a stranger", 0, "stranger", http.StatusForbidden, 3)
	r.readers["bob"] = true // granted the reader role
	step("the stranger 9s later", 9*time.Second, "stranger", http.StatusForbidden, 3)
	step("the stranger 10s later", time.Second, "stranger", http.StatusOK, 4)
	delete(r.readers, "alice") // the role revoked
	step("the reader, revoked, within the minute", 0, "reader", http.StatusOK, 4)
	step("the reader, revoked, after the minute", time.Minute, "reader", http.StatusForbidden, 5)
}

// TestMetricsAuthCacheBound: neither refusals nor grants grow the cache
// past its limit, and refusals never take a grant's place.
func TestMetricsAuthCacheBound(t *testing.T) {
	auth := newMetricsAuth(ktesting.NewLogger(t, ktesting.DefaultConfig), (&reviewer{}).client())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	key := func(kind string, i int) authCacheKey {
		return authCacheKey(sha256.Sum256(fmt.Appendf(nil, "%s-%d", kind, i)))
	}
	for i := range metricsAuthCacheLimit + 10 {
		auth.remember(key("granted", i), authDecision{code: http.StatusOK, expires: now.Add(metricsAllowedTTL)}, now)
	}
	for i := range 3 * metricsAuthCacheLimit {
		auth.remember(key("refused", i), authDecision{code: http.StatusUnauthorized, expires: now.Add(metricsDeniedTTL)}, now)
	}
	if len(auth.allowed) != metricsAuthCacheLimit || len(auth.denied) != metricsAuthCacheLimit {
		t.Errorf("%d grants and %d refusals cached, want %d of each", len(auth.allowed), len(auth.denied), metricsAuthCacheLimit)
	}
	// Once expired, entries make room before any unexpired one goes.
	now = now.Add(metricsDeniedTTL)
	auth.remember(key("refused", -1), authDecision{code: http.StatusUnauthorized, expires: now.Add(metricsDeniedTTL)}, now)
	if len(auth.denied) != 1 || len(auth.allowed) != metricsAuthCacheLimit {
		t.Errorf("after the refusals expired: %d grants and %d refusals cached, want %d and 1", len(auth.allowed), len(auth.denied), metricsAuthCacheLimit)
	}
	// A token refused, then granted, is only granted.
	auth.remember(key("refused", -1), authDecision{code: http.StatusOK, expires: now.Add(metricsAllowedTTL)}, now)
	if _, ok := auth.denied[key("refused", -1)]; ok {
		t.Error("a token now granted is still among the refusals")
	}
}

// TestMetricsAuthReviewFails: when the API server cannot review, the caller
// gets a 500, and the failure is not remembered.
func TestMetricsAuthReviewFails(t *testing.T) {
	r := &reviewer{users: map[string]string{"reader": "alice"}, readers: map[string]bool{"alice": true}, failing: true}
	client := r.client()
	handler := newMetricsAuth(ktesting.NewLogger(t, ktesting.DefaultConfig), client).wrap(metricsOK)
	if code := get(handler, "/metrics", "reader").Code; code != http.StatusInternalServerError {
		t.Errorf("the review failed: answered %d, want 500", code)
	}
	r.failing = false
	if code := get(handler, "/metrics", "reader").Code; code != http.StatusOK {
		t.Errorf("the review works again: answered %d, want 200", code)
	}
	if tr, _ := reviews(client); tr != 2 {
		t.Errorf("%d TokenReviews, want 2 (a failure is not cached)", tr)
	}
}

// TestMetricsEndpoint: -metrics-secure=false serves the metrics to anyone
// over plain HTTP; -metrics-secure puts them behind TLS and the review.
func TestMetricsEndpoint(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	registry := prometheus.NewRegistry()
	registry.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "robot_operator_test"}))
	r := &reviewer{}

	handler, tlsConfig, err := MetricsEndpoint(ctx, false, "", registry, r.client())
	if err != nil {
		t.Fatal(err)
	}
	if tlsConfig != nil {
		t.Error("-metrics-secure=false: a TLS configuration, want plain HTTP")
	}
	if rec := get(handler, "/metrics", ""); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "robot_operator_test") {
		t.Errorf("-metrics-secure=false, no token: %d %q, want 200 and the metrics", rec.Code, rec.Body.String())
	}

	handler, tlsConfig, err = MetricsEndpoint(ctx, true, "", registry, r.client())
	if err != nil {
		t.Fatal(err)
	}
	if tlsConfig == nil || len(tlsConfig.Certificates) != 1 {
		t.Error("-metrics-secure: want TLS with the self-signed certificate")
	}
	if rec := get(handler, "/metrics", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("-metrics-secure, no token: %d, want 401", rec.Code)
	}
}

// The limit the docs promise on reviews: 5 a second, 10 at once.
const (
	wantReviewRate  = 5
	wantReviewBurst = 10
)

// flood sends GET /metrics with n distinct made-up tokens at once, and
// fails the test on any answer but 401 (reviewed and refused) or 429 (not
// reviewed: over the limit, with a Retry-After).
func flood(t *testing.T, handler http.Handler, n int, prefix string) {
	t.Helper()
	var wg sync.WaitGroup
	codes := make(chan int, n)
	for i := range n {
		wg.Go(func() {
			rec := get(handler, "/metrics", fmt.Sprintf("%s-%d", prefix, i))
			if rec.Code == http.StatusTooManyRequests && rec.Header().Get("Retry-After") == "" {
				codes <- -1
				return
			}
			codes <- rec.Code
		})
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusUnauthorized && code != http.StatusTooManyRequests {
			t.Errorf("a made-up token: answered %d, want 401, or 429 with Retry-After", code)
			return
		}
	}
}

// TestMetricsAuthFlood: a flood of made-up tokens costs the API server at
// most the limit's burst, plus its rate for each second the flood lasts.
func TestMetricsAuthFlood(t *testing.T) {
	r := &reviewer{}
	client := r.client()
	auth := newMetricsAuth(ktesting.NewLogger(t, ktesting.DefaultConfig), client)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	auth.now = func() time.Time { return now }
	handler := auth.wrap(metricsOK)

	flood(t, handler, 2000, "made-up")
	if tr, _ := reviews(client); tr > wantReviewBurst {
		t.Errorf("2000 made-up tokens at once: %d TokenReviews, want at most %d", tr, wantReviewBurst)
	}
	now = now.Add(3 * time.Second)
	flood(t, handler, 2000, "more-made-up")
	if tr, _ := reviews(client); tr > wantReviewBurst+3*wantReviewRate {
		t.Errorf("4000 made-up tokens over 3 s: %d TokenReviews, want at most %d", tr, wantReviewBurst+3*wantReviewRate)
	}
}

// TestMetricsAuthCoalesce: identical requests at once cost one review, and
// all get its answer.
func TestMetricsAuthCoalesce(t *testing.T) {
	r := &reviewer{
		users:   map[string]string{"reader": "alice"},
		readers: map[string]bool{"alice": true},
		entered: make(chan struct{}, 100),
		gate:    make(chan struct{}),
	}
	client := r.client()
	handler := newMetricsAuth(ktesting.NewLogger(t, ktesting.DefaultConfig), client).wrap(metricsOK)

	const n = 50
	var started, done sync.WaitGroup
	codes := make(chan int, n)
	for range n {
		started.Add(1)
		done.Go(func() {
			started.Done()
			codes <- get(handler, "/metrics", "reader").Code
		})
	}
	<-r.entered                       // the first review is under way
	started.Wait()                    // every request has been sent
	time.Sleep(50 * time.Millisecond) // and most have reached the review (the result holds either way)
	close(r.gate)
	done.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusOK {
			t.Errorf("a reader: answered %d, want 200", code)
		}
	}
	if tr, sar := reviews(client); tr != 1 || sar != 1 {
		t.Errorf("%d identical requests at once: %d TokenReviews and %d SubjectAccessReviews, want 1 and 1", n, tr, sar)
	}
}

// TestMetricsAuthFloodKeepsReaders: a reader's decision, once made,
// outlives a flood of made-up tokens: its next scrape costs no review.
func TestMetricsAuthFloodKeepsReaders(t *testing.T) {
	r := &reviewer{users: map[string]string{"reader": "alice"}, readers: map[string]bool{"alice": true}}
	client := r.client()
	auth := newMetricsAuth(ktesting.NewLogger(t, ktesting.DefaultConfig), client)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	auth.now = func() time.Time { return now }
	handler := auth.wrap(metricsOK)

	if code := get(handler, "/metrics", "reader").Code; code != http.StatusOK {
		t.Fatalf("the reader's first scrape: %d, want 200", code)
	}
	for i := range 3 {
		now = now.Add(5 * time.Second)
		flood(t, handler, 2000, fmt.Sprintf("made-up-%d", i))
	}
	before, _ := reviews(client)
	if code := get(handler, "/metrics", "reader").Code; code != http.StatusOK {
		t.Errorf("the reader after the flood: %d, want 200", code)
	}
	if after, _ := reviews(client); after != before {
		t.Errorf("the reader's scrape after the flood cost %d TokenReviews, want none (its decision cached)", after-before)
	}

	// Whatever reaches the cache: refusals by the thousand never push a
	// reader's decision out.
	for i := range 3 * metricsAuthCacheLimit {
		key := authCacheKey(sha256.Sum256(fmt.Appendf(nil, "refused-%d", i)))
		auth.remember(key, authDecision{code: http.StatusUnauthorized, expires: now.Add(metricsDeniedTTL)}, now)
	}
	before, _ = reviews(client)
	if code := get(handler, "/metrics", "reader").Code; code != http.StatusOK {
		t.Errorf("the reader after %d refusals: %d, want 200", 3*metricsAuthCacheLimit, code)
	}
	if after, _ := reviews(client); after != before {
		t.Errorf("the reader's scrape after %d refusals cost %d TokenReviews, want none", 3*metricsAuthCacheLimit, after-before)
	}

	// The reader's minute is up while a flood has used up the reviews: the
	// renewal of its grant has a bucket of its own.
	now = now.Add(metricsAllowedTTL)
	flood(t, handler, 2000, "made-up-again")
	before, _ = reviews(client)
	if code := get(handler, "/metrics", "reader").Code; code != http.StatusOK {
		t.Errorf("the reader, its minute up, during a flood: %d, want 200", code)
	}
	if after, _ := reviews(client); after != before+1 {
		t.Errorf("the reader's renewal cost %d TokenReviews, want 1", after-before)
	}
}

// TestMetricsEndpointFlood: through the endpoint main serves, a flood of
// made-up tokens sends its reviews through the review client only, within
// the limit, and does not hold up requests on the syncs' client, even while
// the API server is slow to review.
func TestMetricsEndpointFlood(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	r := &reviewer{entered: make(chan struct{}, 2000), gate: make(chan struct{})}
	reviewClient := r.client()
	syncClient := fake.NewClientset()
	handler, _, err := MetricsEndpoint(ctx, true, "", prometheus.NewRegistry(), reviewClient)
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		flood(t, handler, 2000, "made-up")
	}()
	<-r.entered // a review is stuck at the API server
	if _, err := syncClient.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("a sync's request during the flood: %v", err)
	}
	close(r.gate)
	<-flooded
	elapsed := time.Since(start)

	if tr, sar := reviews(syncClient); tr != 0 || sar != 0 {
		t.Errorf("the sync client sent %d TokenReviews and %d SubjectAccessReviews, want none", tr, sar)
	}
	// The limiter runs on the wall clock here: allow for however long the
	// flood took.
	limit := wantReviewBurst + int(elapsed.Seconds()*wantReviewRate) + 1
	if tr, _ := reviews(reviewClient); tr > limit {
		t.Errorf("2000 made-up tokens over %v: %d TokenReviews, want at most %d", elapsed, tr, limit)
	}
}

// TestMetricsAuthOnlyGets: /metrics is read with GET (or HEAD); any other
// method is refused before a review.
func TestMetricsAuthOnlyGets(t *testing.T) {
	r := &reviewer{users: map[string]string{"reader": "alice"}, readers: map[string]bool{"alice": true}}
	client := r.client()
	handler := newMetricsAuth(ktesting.NewLogger(t, ktesting.DefaultConfig), client).wrap(metricsOK)
	req := httptest.NewRequest(http.MethodPost, "/metrics", strings.NewReader("x"))
	req.Header.Set("Authorization", "Bearer made-up")
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %d, want 405", rec.Code)
	}
	if tr, sar := reviews(client); tr != 0 || sar != 0 {
		t.Errorf("POST /metrics: %d TokenReviews and %d SubjectAccessReviews, want none", tr, sar)
	}
}

// TestMetricsAuthForgetsExpiredRefusals: refusals are let go as they
// expire, not only once the cache is full, so the refusal cache holds no
// more than a refusal's lifetime of reviews.
func TestMetricsAuthForgetsExpiredRefusals(t *testing.T) {
	auth := newMetricsAuth(ktesting.NewLogger(t, ktesting.DefaultConfig), (&reviewer{}).client())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	auth.now = func() time.Time { return now }
	handler := auth.wrap(metricsOK)
	for i := range 100 {
		now = now.Add(time.Second)
		if code := get(handler, "/metrics", fmt.Sprintf("made-up-%d", i)).Code; code != http.StatusUnauthorized {
			t.Fatalf("made-up token %d: %d, want 401", i, code)
		}
	}
	auth.mu.Lock()
	held := len(auth.denied)
	auth.mu.Unlock()
	if limit := int(metricsDeniedTTL/time.Second) + 1; held > limit {
		t.Errorf("after 100 refusals a second apart, %d are held, want at most %d (those of the last %s)", held, limit, metricsDeniedTTL)
	}
}

// TestMetricsAuthFloodFromOneClient: one client flooding made-up tokens
// does not use up the reviews of the others: a scraper with a token never
// seen before (a rotated projected token, or any token after a restart)
// gets in during the flood.
func TestMetricsAuthFloodFromOneClient(t *testing.T) {
	r := &reviewer{users: map[string]string{"new-token": "prometheus"}, readers: map[string]bool{"prometheus": true}}
	client := r.client()
	auth := newMetricsAuth(ktesting.NewLogger(t, ktesting.DefaultConfig), client)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	auth.now = func() time.Time { return now }
	handler := auth.wrap(metricsOK)
	from := func(addr, token string) int {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.RemoteAddr = addr
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec.Code
	}
	for second := range 3 {
		now = now.Add(time.Second)
		for i := range 500 {
			if code := from("10.0.0.66:40000", fmt.Sprintf("made-up-%d-%d", second, i)); code != http.StatusUnauthorized && code != http.StatusTooManyRequests {
				t.Fatalf("a made-up token: %d, want 401 or 429", code)
			}
		}
	}
	if code := from("10.0.0.7:50000", "new-token"); code != http.StatusOK {
		t.Errorf("a scraper's new token from another pod during the flood: %d, want 200", code)
	}
}

// TestMetricsAuthFloodFromManyClients: a flood of made-up tokens from
// several pods, together over the shared limit on reviews, does not shut
// out a scraper elsewhere: neither its first token, sent once the flood
// is under way (after a restart of the operator, every token is new), nor
// the new token it sends each time its projected token is rotated (here
// every second, the worst case). The
// clock is the test's: 5ms steps, every flooding pod sending at each once
// it has joined, the pods joining at uneven intervals over the first
// second (so their buckets refill at different times, and the scraper
// comes at none of them).
func TestMetricsAuthFloodFromManyClients(t *testing.T) {
	for _, pods := range []int{3, 6, 20} {
		t.Run(fmt.Sprintf("%d flooding pods", pods), func(t *testing.T) {
			r := &reviewer{users: map[string]string{}, readers: map[string]bool{"prometheus": true}}
			for second := range 60 {
				r.users[fmt.Sprintf("scraper-token-%d", second)] = "prometheus"
			}
			client := r.client()
			auth := newMetricsAuth(ktesting.NewLogger(t, ktesting.DefaultConfig), client)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			auth.now = func() time.Time { return now }
			handler := auth.wrap(metricsOK)
			from := func(addr, token string) int {
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				req.RemoteAddr = addr
				req.Header.Set("Authorization", "Bearer "+token)
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				return rec.Code
			}

			const step = 5 * time.Millisecond
			refused := 0
			sent := 0
			for second := range 60 {
				for i := range int(time.Second / step) {
					if i == 117 && second >= 3 {
						// The scraper, mid-second, with the token it was
						// just given.
						sent++
						switch code := from("10.0.9.200:40000", fmt.Sprintf("scraper-token-%d", second)); code {
						case http.StatusOK:
						case http.StatusTooManyRequests:
							refused++
						default:
							t.Fatalf("the scraper's token %d: %d, want 200", second, code)
						}
					}
					for pod := range pods {
						if second == 0 && i < pod*200/pods+pod%3 {
							continue // not joined yet
						}
						code := from(fmt.Sprintf("10.0.1.%d:40000", pod), fmt.Sprintf("made-up-%d-%d-%d", second, i, pod))
						if code != http.StatusUnauthorized && code != http.StatusTooManyRequests {
							t.Fatalf("a made-up token: %d, want 401 or 429", code)
						}
					}
					now = now.Add(step)
				}
			}
			if refused > 0 {
				t.Errorf("%d flooding pods: the scraper's new token got 429 %d times of %d, want never", pods, refused, sent)
			}
			// The flood still costs the API server no more than the limits.
			limit := wantReviewBurst + 60*(wantReviewRate+1) + 5 + 60
			if tr, _ := reviews(client); tr > limit {
				t.Errorf("%d flooding pods for 60s: %d TokenReviews, want at most %d", pods, tr, limit)
			}
		})
	}
}

// TestMetricsAuthGrantedAddressFloodTakesNoRenewals: a reader's pods, their
// addresses once granted, that flood made-up tokens beside other flooding
// pods do not spend the renewals' allowance, so another scraper's renewal,
// its minute up, still gets its review.
func TestMetricsAuthGrantedAddressFloodTakesNoRenewals(t *testing.T) {
	r := &reviewer{users: map[string]string{"a-token-5": "a", "a-token-6": "a", "a-token-7": "a", "b-token": "b"}, readers: map[string]bool{"a": true, "b": true}}
	auth := newMetricsAuth(ktesting.NewLogger(t, ktesting.DefaultConfig), r.client())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	auth.now = func() time.Time { return now }
	handler := auth.wrap(metricsOK)
	from := func(addr, token string) int {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.RemoteAddr = addr
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, pod := range []int{5, 6, 7} {
		if from(fmt.Sprintf("10.0.0.%d:1", pod), fmt.Sprintf("a-token-%d", pod)) != http.StatusOK {
			t.Fatal("a reader's first scrape was refused")
		}
	}
	if from("10.0.0.9:1", "b-token") != http.StatusOK {
		t.Fatal("the other reader's first scrape was refused")
	}
	now = now.Add(time.Second)
	const step = 5 * time.Millisecond
	renewedAt := metricsAllowedTTL + 5*time.Second
	for elapsed := time.Duration(0); elapsed < renewedAt+time.Second; elapsed += step {
		for pod := range 23 {
			addr := fmt.Sprintf("10.0.1.%d:1", pod)
			if pod >= 20 {
				addr = fmt.Sprintf("10.0.0.%d:1", pod-15) // the reader's, granted
			}
			if code := from(addr, fmt.Sprintf("made-up-%d-%d", elapsed, pod)); code != http.StatusUnauthorized && code != http.StatusTooManyRequests {
				t.Fatalf("a made-up token: %d, want 401 or 429", code)
			}
		}
		if elapsed == renewedAt {
			if code := from("10.0.0.9:1", "b-token"); code != http.StatusOK {
				t.Errorf("the other reader's renewal, during the flood: %d, want 200", code)
			}
		}
		now = now.Add(step)
	}
}
