package serving

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// The cache of review results. A scraper sends the same token every scrape
// (15 to 60 seconds apart), so remembering a decision for a minute costs
// the API server one TokenReview and one SubjectAccessReview per scraper
// per minute instead of two per scrape. A refusal (401 or 403) is
// remembered for less, so that a scraper that was just granted the reader
// role gets in soon; a revoked token or role is honoured within
// metricsAllowedTTL. Grants and refusals are kept apart, each within
// metricsAuthCacheLimit entries: when one is full its expired entries go
// first, and if none has expired, a single entry. Refusals, which anyone
// can cause, so never push out a reader's grant.
//
// Reviews themselves, whoever asks, are limited to metricsReviewRate a
// second with bursts of metricsReviewBurst; a request over the limit gets
// 429 with a Retry-After at once, unreviewed and not remembered. Renewing
// a grant that has expired draws on a bucket of its own
// (metricsRenewalRate, metricsRenewalBurst), since only a token that was
// granted can: a flood of made-up tokens, which empties the first bucket,
// does not shut the scrapers out when their minute is up. Identical
// requests under review at the same time (same token, verb and path) share
// one review. A review sends at most two requests (a TokenReview, then a
// SubjectAccessReview), so the API server sees at most twice both rates
// from the metrics endpoint, through a client of its own
// (MetricsReviewQPS, MetricsReviewBurst) that the syncs never wait on.
const (
	metricsAllowedTTL      = time.Minute
	metricsDeniedTTL       = 10 * time.Second
	metricsAuthCacheLimit  = 1024
	metricsAuthReviewLimit = 10 * time.Second
	metricsReviewRate      = 5
	metricsReviewBurst     = 10
	metricsRenewalRate     = 1
	metricsRenewalBurst    = 5
	metricsRetryAfter      = "1" // seconds: the bucket refills in 1/metricsReviewRate
)

// The rate limit of the client that MetricsEndpoint is given: room for
// every request the review limit lets through, so that none waits on the
// client.
const (
	MetricsReviewQPS   = 2 * (metricsReviewRate + metricsRenewalRate)
	MetricsReviewBurst = 2 * (metricsReviewBurst + metricsRenewalBurst)
)

// errReviewLimited says a request was not reviewed: the limit was reached.
var errReviewLimited = errors.New("too many reviews")

// MetricsEndpoint returns the handler of the metrics server and its TLS
// configuration: /metrics behind authentication and authorization over
// HTTPS with -metrics-secure, open over plain HTTP without it.
// certDir, when set, holds the certificate to serve (else a self-signed one
// is made). reviewClient sends the TokenReviews and SubjectAccessReviews:
// give it a rate limiter of its own (MetricsReviewQPS, MetricsReviewBurst),
// not the one the syncs share.
func MetricsEndpoint(ctx context.Context, secure bool, certDir string, registry *prometheus.Registry, reviewClient kubernetes.Interface) (http.Handler, *tls.Config, error) {
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
	return newMetricsAuth(logger, reviewClient).wrap(mux), tlsConfig, nil
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

	limiter  *rate.Limiter      // reviews, timed by now
	renewals *rate.Limiter      // reviews of a grant that expired, timed by now
	flights  singleflight.Group // reviews under way, by authCacheKey.String

	mu      sync.Mutex
	allowed map[authCacheKey]authDecision
	denied  map[authCacheKey]authDecision
}

// authCacheKey holds a hash of the token, never the token itself, and what
// it asked for.
type authCacheKey struct {
	token      [sha256.Size]byte
	verb, path string
}

// String is the key of the review under way for k.
func (k authCacheKey) String() string {
	return string(k.token[:]) + k.verb + " " + k.path
}

func newMetricsAuth(logger klog.Logger, client kubernetes.Interface) *metricsAuth {
	return &metricsAuth{
		logger:   logger,
		client:   client,
		now:      time.Now,
		limiter:  rate.NewLimiter(metricsReviewRate, metricsReviewBurst),
		renewals: rate.NewLimiter(metricsRenewalRate, metricsRenewalBurst),
		allowed:  map[authCacheKey]authDecision{},
		denied:   map[authCacheKey]authDecision{},
	}
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
		if errors.Is(err, errReviewLimited) {
			w.Header().Set("Retry-After", metricsRetryAfter)
			http.Error(w, "Too many requests to review: try again later", http.StatusTooManyRequests)
			return
		}
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

// decide returns the cached decision for token, or asks the API server:
// once for all the identical requests that arrive meanwhile, and only
// within the limit on reviews (else errReviewLimited).
func (a *metricsAuth) decide(r *http.Request, token string) (authDecision, error) {
	key := authCacheKey{token: sha256.Sum256([]byte(token)), verb: strings.ToLower(r.Method), path: r.URL.Path}
	if cached, ok := a.cached(key); ok {
		return cached, nil
	}
	// The review is shared, so it does not end with the request that
	// started it; metricsAuthReviewLimit still bounds it.
	ctx := context.WithoutCancel(r.Context())
	v, err, _ := a.flights.Do(key.String(), func() (any, error) {
		// A review that ended between the lookup above and here.
		if cached, ok := a.cached(key); ok {
			return cached, nil
		}
		now := a.now()
		limiter := a.limiter
		if a.granted(key) {
			limiter = a.renewals
		}
		if !limiter.AllowN(now, 1) {
			return authDecision{}, errReviewLimited
		}
		decision, err := a.review(ctx, r.URL.Path, token, key.verb)
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
	})
	if err != nil {
		return authDecision{}, err
	}
	return v.(authDecision), nil
}

// cached returns the unexpired decision for key, if any.
func (a *metricsAuth) cached(key authCacheKey) (authDecision, bool) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if d, ok := a.allowed[key]; ok && now.Before(d.expires) {
		return d, true
	}
	if d, ok := a.denied[key]; ok && now.Before(d.expires) {
		return d, true
	}
	return authDecision{}, false
}

// granted says whether key was granted, expired or not: whether it is a
// scraper's.
func (a *metricsAuth) granted(key authCacheKey) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.allowed[key]
	return ok
}

// review asks the API server who token is, then whether they may verb the
// request's path.
func (a *metricsAuth) review(ctx context.Context, path, token, verb string) (authDecision, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsAuthReviewLimit)
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
				Path: path,
				Verb: verb,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return authDecision{}, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	if !sar.Status.Allowed || sar.Status.Denied {
		return authDecision{code: http.StatusForbidden, message: fmt.Sprintf("Forbidden: user %q may not %s %s", user.Username, verb, path)}, nil
	}
	return authDecision{code: http.StatusOK}, nil
}

// remember stores decision with the grants or with the refusals, and
// drops any older one for key from the other.
func (a *metricsAuth) remember(key authCacheKey, decision authDecision, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	into, other := a.denied, a.allowed
	if decision.code == http.StatusOK {
		into, other = a.allowed, a.denied
	}
	delete(other, key)
	if _, ok := into[key]; !ok {
		makeRoom(into, now)
	}
	into[key] = decision
}

// makeRoom keeps cache below metricsAuthCacheLimit before an entry is
// added: expired entries go first; if none has expired, one entry, the
// first the map yields.
func makeRoom(cache map[authCacheKey]authDecision, now time.Time) {
	if len(cache) < metricsAuthCacheLimit {
		return
	}
	for k, d := range cache {
		if !now.Before(d.expires) {
			delete(cache, k)
		}
	}
	for k := range cache {
		if len(cache) < metricsAuthCacheLimit {
			return
		}
		delete(cache, k)
	}
}
