package preflight

import (
	"context"
	"errors"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Classify says what the answer err to a dry-run create of a pod means: the
// pod passed, the cluster refused it (Rejected), or the check could not
// tell, for a reason that is not the pod's.
func Classify(err error) string {
	if err == nil {
		return Passed
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// No answer from the API server: the network, a deadline.
		return Unavailable
	}
	message := status.Status().Message
	code := int(status.Status().Code)
	switch {
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsTooManyRequests(err), code >= http.StatusInternalServerError:
		// A webhook that did not answer in time or failed, an API server
		// overloaded or failing.
		return Unavailable
	case strings.Contains(message, "does not support dry run"):
		// An admission webhook whose side effects are not declared as
		// none: the API server refuses to call it in a dry run.
		return Unsupported
	case apierrors.IsForbidden(err) && isAuthorization(message):
		return Forbidden
	case apierrors.IsUnauthorized(err):
		return Forbidden
	}
	return Rejected
}

// isAuthorization reports whether a Forbidden's message is the
// authorizer's (the operator may not create pods there), not an admission
// plugin's refusal of the pod, which says "is forbidden:" and why.
func isAuthorization(message string) bool {
	return strings.Contains(message, "cannot create resource")
}

// Message is the API server's own message in err, or err's text.
func Message(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}
