package observe

import (
	"fmt"
	"net/http"
	"strings"
)

// ErrWriteRefused is the error of every request that ReadOnly keeps from
// leaving the process.
type ErrWriteRefused struct {
	Method, Path string
}

func (e *ErrWriteRefused) Error() string {
	return fmt.Sprintf("observe-only: %s %s not sent (this operator writes nothing)", e.Method, e.Path)
}

// reviews are the only resources a read-only client may POST to: a
// TokenReview or a SubjectAccessReview asks the API server a question and
// stores nothing. The metrics endpoint asks them of its callers, and the
// operator asks at its start which config it may watch
// (SelfSubjectAccessReviews).
var reviews = []string{
	"/apis/authentication.k8s.io/v1/tokenreviews",
	"/apis/authorization.k8s.io/v1/subjectaccessreviews",
	"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
}

// ReadOnly wraps next so that only reads reach the API server: GET and HEAD
// (a list and a watch are GETs), and the POST of a review. Any other
// request (create, update, patch, delete, an Event, a Lease) is answered
// ErrWriteRefused, without being sent.
func ReadOnly(next http.RoundTripper) http.RoundTripper {
	return readOnly{next: next}
}

type readOnly struct{ next http.RoundTripper }

func (r readOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if Allowed(req.Method, req.URL.Path) {
		return r.next.RoundTrip(req)
	}
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return nil, &ErrWriteRefused{Method: req.Method, Path: req.URL.Path}
}

// Allowed reports whether a request of method to path reads and stores
// nothing: what ReadOnly lets through.
func Allowed(method, path string) bool {
	switch method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPost:
		for _, review := range reviews {
			if strings.HasSuffix(path, review) {
				return true
			}
		}
	}
	return false
}
