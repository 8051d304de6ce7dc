package serving

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
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

// Only GET (or HEAD) /metrics is reviewed: any other path is answered 404
// and any other method 405 before a review, so that what a caller sends
// beyond its token costs neither a review nor a cache entry. A token of
// over metricsMaxTokenBytes is refused unreviewed: a projected
// ServiceAccount token is 1-2 KB.
//
// The cache of review results is keyed by a hash of the token alone, since
// every review asks the same question (may this user get /metrics). A
// scraper sends the same token every scrape (15 to 60 seconds apart), so
// remembering a decision for a minute costs the API server one TokenReview
// and one SubjectAccessReview per scraper per minute instead of two per
// scrape. A refusal (401 or 403) is remembered for less, so that a scraper
// that was just granted the reader role gets in soon; a revoked token or
// role is honoured within metricsAllowedTTL. Grants and refusals are kept
// apart, each within metricsAuthCacheLimit entries of a fixed size. Each
// insert first lets go of the expired entries, and when the cache is still
// full, of one more. Refusals, which anyone can cause, so never push out a
// reader's grant, and since a refusal follows a review, the refusals held
// are at most a refusal's lifetime of reviews (about 60).
//
// Reviews themselves, whoever asks, are limited to metricsReviewRate a
// second with bursts of metricsReviewBurst; a request over the limit gets
// 429 with a Retry-After at once, unreviewed and not remembered. Before
// that, a client (a source IP address) may start at most
// metricsClientReviewRate reviews a second with bursts of
// metricsClientReviewBurst: a flood from one pod takes only that share, so
// a scraper elsewhere whose token is new (the kubelet rotates projected
// tokens; after a restart every token is new) still gets its review.
// Renewing a grant that has expired draws on a bucket of its own
// (metricsRenewalRate, metricsRenewalBurst), since only a token that was
// granted can: a flood of made-up tokens, which empties the first bucket,
// does not shut the scrapers out when their minute is up.
//
// Pods enough (six, at 1 a second each) still empty the shared bucket
// together. A review it refuses then has two ways left, neither of which
// a flooding pod can take, and both only for a client whose own bucket
// was full (it sent no review for metricsClientReviewBurst seconds, as a
// scraper sends one a scrape): a flooding pod spends its own bucket as
// fast as it refills, so it is never full, even at an address once
// granted. Such a client that was granted a token within
// metricsGrantedHostTTL (a scraper whose projected token was rotated)
// draws on the renewals' bucket; any other (a scraper after a restart of
// the operator) on the newcomers' bucket (metricsNewcomerRate,
// metricsNewcomerBurst). Identical
// requests under review at the same time (same token) share one review. A review sends at most two requests (a TokenReview, then a
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
	metricsNewcomerRate    = 1
	metricsNewcomerBurst   = 3
	metricsGrantedHostTTL  = 24 * time.Hour
	metricsRetryAfter      = "1" // seconds: the bucket refills in 1/metricsReviewRate

	metricsClientReviewRate  = 1
	metricsClientReviewBurst = 3
	metricsClientLimit       = 1024 // clients whose buckets are kept
	metricsMaxTokenBytes     = 8 << 10
	metricsPath              = "/metrics"
)

// The rate limit of the client that MetricsEndpoint is given: room for
// every request the review limit lets through, so that none waits on the
// client.
const (
	MetricsReviewQPS   = 2 * (metricsReviewRate + metricsRenewalRate + metricsNewcomerRate)
	MetricsReviewBurst = 2 * (metricsReviewBurst + metricsRenewalBurst + metricsNewcomerBurst)
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
	mux.Handle(metricsPath, promhttp.HandlerFor(registry, promhttp.HandlerOpts{Registry: registry}))
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

	limiter   *rate.Limiter      // reviews, timed by now
	renewals  *rate.Limiter      // reviews of a grant that expired, timed by now
	newcomers *rate.Limiter      // reviews limiter refused, of a client that is not flooding, timed by now
	flights   singleflight.Group // reviews under way, by authCacheKey.String

	mu      sync.Mutex
	allowed map[authCacheKey]authDecision
	denied  map[authCacheKey]authDecision
	clients map[string]*rate.Limiter // reviews of tokens not granted, by source IP, timed by now
	granted map[string]time.Time     // when each source IP was last granted a token
}

// authCacheKey is a hash of the token, never the token itself.
type authCacheKey [sha256.Size]byte

// String is the key of the review under way for k.
func (k authCacheKey) String() string {
	return string(k[:])
}

func newMetricsAuth(logger klog.Logger, client kubernetes.Interface) *metricsAuth {
	return &metricsAuth{
		logger:    logger,
		client:    client,
		now:       time.Now,
		limiter:   rate.NewLimiter(metricsReviewRate, metricsReviewBurst),
		renewals:  rate.NewLimiter(metricsRenewalRate, metricsRenewalBurst),
		newcomers: rate.NewLimiter(metricsNewcomerRate, metricsNewcomerBurst),
		allowed:   map[authCacheKey]authDecision{},
		denied:    map[authCacheKey]authDecision{},
		clients:   map[string]*rate.Limiter{},
		granted:   map[string]time.Time{},
	}
}

// wrap returns next, at GET /metrics only, behind authentication and
// authorization.
func (a *metricsAuth) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != metricsPath {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "GET /metrics only", http.StatusMethodNotAllowed)
			return
		}
		token, ok := bearerToken(r)
		if ok && len(token) > metricsMaxTokenBytes {
			w.Header().Set("WWW-Authenticate", `Bearer realm="robot-operator"`)
			http.Error(w, fmt.Sprintf("Unauthorized: a token of over %d bytes", metricsMaxTokenBytes), http.StatusUnauthorized)
			return
		}
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
			a.logger.Error(err, "Reviewing a metrics request")
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
	key := authCacheKey(sha256.Sum256([]byte(token)))
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
		if !a.mayReview(key, r.RemoteAddr, now) {
			return authDecision{}, errReviewLimited
		}
		decision, err := a.review(ctx, token)
		if err != nil {
			return authDecision{}, err
		}
		ttl := metricsDeniedTTL
		if decision.code == http.StatusOK {
			ttl = metricsAllowedTTL
		}
		decision.expires = now.Add(ttl)
		a.remember(key, decision, now)
		if decision.code == http.StatusOK {
			a.rememberGranted(r.RemoteAddr, now)
		}
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

// mayReview says whether a review of key, from remoteAddr, is within the
// limits: a grant's renewal draws on the renewals' bucket, any other review
// on its client's first, then on the shared one, and when that is empty,
// for a client that is not flooding, on the newcomers' bucket.
func (a *metricsAuth) mayReview(key authCacheKey, remoteAddr string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.allowed[key]; ok {
		return a.renewals.AllowN(now, 1)
	}
	host := clientHost(remoteAddr)
	own := a.clientLimiter(host, now)
	quiet := own.TokensAt(now) >= metricsClientReviewBurst
	if !own.AllowN(now, 1) {
		return false
	}
	if a.limiter.AllowN(now, 1) {
		return true
	}
	if !quiet {
		return false
	}
	if granted, ok := a.granted[host]; ok && now.Sub(granted) < metricsGrantedHostTTL {
		// A scraper's rotated token: a renewal of the client's grant.
		return a.renewals.AllowN(now, 1)
	}
	return a.newcomers.AllowN(now, 1)
}

// rememberGranted notes that the client at remoteAddr was granted a token
// now. Only readers are granted, so the map holds the scrapers' addresses:
// when it is full, those granted longest ago go first.
func (a *metricsAuth) rememberGranted(remoteAddr string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	host := clientHost(remoteAddr)
	if _, ok := a.granted[host]; !ok && len(a.granted) >= metricsClientLimit {
		for h, at := range a.granted {
			if now.Sub(at) >= metricsGrantedHostTTL {
				delete(a.granted, h)
			}
		}
		for len(a.granted) >= metricsClientLimit {
			oldest := ""
			for h, at := range a.granted {
				if oldest == "" || at.Before(a.granted[oldest]) {
					oldest = h
				}
			}
			delete(a.granted, oldest)
		}
	}
	a.granted[host] = now
}

// clientHost is the source IP address of remoteAddr.
func clientHost(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return host
}

// clientLimiter returns the bucket of client, made now if it has none.
// When metricsClientLimit clients have one, those that are full again
// (idle) go first, and if none is, one other: a client that comes back
// then starts with a full bucket, and the shared bucket still bounds the
// reviews.
func (a *metricsAuth) clientLimiter(client string, now time.Time) *rate.Limiter {
	if limiter, ok := a.clients[client]; ok {
		return limiter
	}
	if len(a.clients) >= metricsClientLimit {
		for c, limiter := range a.clients {
			if limiter.TokensAt(now) >= metricsClientReviewBurst {
				delete(a.clients, c)
			}
		}
		for c := range a.clients {
			if len(a.clients) < metricsClientLimit {
				break
			}
			delete(a.clients, c)
		}
	}
	limiter := rate.NewLimiter(metricsClientReviewRate, metricsClientReviewBurst)
	a.clients[client] = limiter
	return limiter
}

// review asks the API server who token is, then whether they may get
// /metrics.
func (a *metricsAuth) review(ctx context.Context, token string) (authDecision, error) {
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
				Path: metricsPath,
				Verb: "get",
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return authDecision{}, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	if !sar.Status.Allowed || sar.Status.Denied {
		return authDecision{code: http.StatusForbidden, message: fmt.Sprintf("Forbidden: user %q may not get %s", user.Username, metricsPath)}, nil
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
	delete(into, key)
	makeRoom(into, now)
	into[key] = decision
}

// makeRoom lets go of cache's expired entries, then, if it still holds
// metricsAuthCacheLimit, of one more, the first the map yields. It runs
// only after a review, so at most a few times a second over at most
// metricsAuthCacheLimit entries.
func makeRoom(cache map[authCacheKey]authDecision, now time.Time) {
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
