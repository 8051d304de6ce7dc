package serving

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// The cache of review results. A scraper sends the same token every scrape
// (15 to 60 seconds apart), so remembering a decision for a minute costs
// the API server one TokenReview and one SubjectAccessReview per scraper
// per minute instead of two per scrape. A refusal is remembered for less,
// so that a scraper that was just granted the reader role gets in soon; a
// revoked token or role is honoured within metricsAllowedTTL. The number of
// entries is bounded, so that a flood of made-up tokens cannot grow the
// cache without end: when it is full, expired entries go first, and if none
// has expired, the whole cache is dropped (the next scrapes pay the reviews
// again, nothing worse).
const (
	metricsAllowedTTL      = time.Minute
	metricsDeniedTTL       = 10 * time.Second
	metricsAuthCacheLimit  = 1024
	metricsAuthReviewLimit = 10 * time.Second
)

// MetricsEndpoint returns the handler of the metrics server and its TLS
// configuration: /metrics behind authentication and authorization over
// HTTPS with -metrics-secure, open over plain HTTP without it.
// certDir, when set, holds the certificate to serve (else a self-signed one
// is made).
func MetricsEndpoint(ctx context.Context, secure bool, certDir string, registry *prometheus.Registry, client kubernetes.Interface) (http.Handler, *tls.Config, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{Registry: registry}))
	if !secure {
		return mux, nil, nil
	}
	logger := klog.FromContext(ctx)
	tlsConfig, err := metricsTLSConfig(logger, certDir)
	if err != nil {
		return nil, nil, err
	}
	return newMetricsAuth(logger, client).wrap(mux), tlsConfig, nil
}

// authDecision is what the cluster said about one bearer token: the HTTP
// status to answer (200 to go on, 401 or 403), and why, for the caller.
type authDecision struct {
	code    int
	message string
	expires time.Time
}

// metricsAuth lets a request through only when its bearer token
// authenticates (a TokenReview) and the user it names may get the request's
// non-resource URL (a SubjectAccessReview): who may scrape is then decided
// by RBAC, with a ClusterRole such as robot-operator-metrics-reader.
type metricsAuth struct {
	logger klog.Logger
	client kubernetes.Interface
	now    func() time.Time

	mu    sync.Mutex
	cache map[authCacheKey]authDecision
}

// authCacheKey holds a hash of the token, never the token itself, and what
// it asked for.
type authCacheKey struct {
	token      [sha256.Size]byte
	verb, path string
}

func newMetricsAuth(logger klog.Logger, client kubernetes.Interface) *metricsAuth {
	return &metricsAuth{logger: logger, client: client, now: time.Now, cache: map[authCacheKey]authDecision{}}
}

// wrap returns next behind authentication and authorization.
func (a *metricsAuth) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="robot-operator"`)
			http.Error(w, "Unauthorized: send a bearer token (Authorization: Bearer ...)", http.StatusUnauthorized)
			return
		}
		decision, err := a.decide(r, token)
		if err != nil {
			// Not remembered: the next scrape asks again.
			a.logger.Error(err, "Reviewing a metrics request", "path", r.URL.Path)
			http.Error(w, "the API server could not review the request", http.StatusInternalServerError)
			return
		}
		if decision.code != http.StatusOK {
			if decision.code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="robot-operator"`)
			}
			http.Error(w, decision.message, decision.code)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerToken returns the token of the Authorization header.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// decide returns the cached decision for token, or asks the API server.
func (a *metricsAuth) decide(r *http.Request, token string) (authDecision, error) {
	key := authCacheKey{token: sha256.Sum256([]byte(token)), verb: strings.ToLower(r.Method), path: r.URL.Path}
	now := a.now()
	a.mu.Lock()
	cached, ok := a.cache[key]
	a.mu.Unlock()
	if ok && now.Before(cached.expires) {
		return cached, nil
	}

	decision, err := a.review(r, token, key.verb)
	if err != nil {
		return authDecision{}, err
	}
	ttl := metricsDeniedTTL
	if decision.code == http.StatusOK {
		ttl = metricsAllowedTTL
	}
	decision.expires = now.Add(ttl)
	a.remember(key, decision, now)
	return decision, nil
}

// review asks the API server who token is, then whether they may verb the
// request's path.
func (a *metricsAuth) review(r *http.Request, token, verb string) (authDecision, error) {
	ctx, cancel := context.WithTimeout(r.Context(), metricsAuthReviewLimit)
	defer cancel()
	tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return authDecision{}, fmt.Errorf("TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		return authDecision{code: http.StatusUnauthorized, message: "Unauthorized: the token does not authenticate"}, nil
	}
	user := tr.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user.Username,
			UID:    user.UID,
			Groups: user.Groups,
			Extra:  extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{
				Path: r.URL.Path,
				Verb: verb,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return authDecision{}, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	if !sar.Status.Allowed || sar.Status.Denied {
		return authDecision{code: http.StatusForbidden, message: fmt.Sprintf("Forbidden: user %q may not %s %s", user.Username, verb, r.URL.Path)}, nil
	}
	return authDecision{code: http.StatusOK}, nil
}

// remember stores decision, keeping the cache within its bound.
func (a *metricsAuth) remember(key authCacheKey, decision authDecision, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= metricsAuthCacheLimit {
		for k, d := range a.cache {
			if !now.Before(d.expires) {
				delete(a.cache, k)
			}
		}
		if len(a.cache) >= metricsAuthCacheLimit {
			clear(a.cache)
		}
	}
	a.cache[key] = decision
}
