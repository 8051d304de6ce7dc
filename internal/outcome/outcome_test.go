package outcome

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestClassify: each kind of sync error, its reason and what happens next,
// from the one table the sync, the conditions and the warnings read.
func TestClassify(t *testing.T) {
	tests := []struct {
		err    error
		reason string
		retry  retry
		warns  bool
	}{
		{errors.New("connection refused"), robotv1beta1.ReasonSyncFailed, RetryWithBackoff, false},
		{&SyncTimeoutError{}, robotv1beta1.ReasonSyncFailed, RetryWithBackoff, false},
		{&InvalidSpecError{Err: errors.New("bad")}, robotv1beta1.ReasonInvalidSpec, RetryOnChange, true},
		{&NameTakenError{Name: "x"}, robotv1beta1.ReasonDeploymentNameTaken, RecheckLater, true},
		{&NameTakenError{Kind: "Service", Name: "x", Reason: robotv1beta1.ReasonServiceNameTaken}, robotv1beta1.ReasonServiceNameTaken, RecheckLater, true},
		{&NameTakenError{Kind: "PodDisruptionBudget", Name: "x", Reason: robotv1beta1.ReasonDisruptionBudgetNameTaken}, robotv1beta1.ReasonDisruptionBudgetNameTaken, RecheckLater, true},
		{&NameTakenError{Kind: "HTTPRoute", Name: "x", Reason: robotv1beta1.ReasonRouteNameTaken}, robotv1beta1.ReasonRouteNameTaken, RecheckLater, true},
		{&ServiceTypeNotAllowedError{Type: robotv1beta1.ServiceTypeNodePort, Allowed: []robotv1beta1.ServiceType{robotv1beta1.ServiceTypeClusterIP}},
			robotv1beta1.ReasonServiceTypeNotAllowed, RetryOnChange, true},
		{&NotAllowedError{Reason: robotv1beta1.ReasonRouteNotAllowed}, robotv1beta1.ReasonRouteNotAllowed, RetryOnChange, true},
		{&NotAllowedError{Reason: robotv1beta1.ReasonServiceMetadataNotAllowed}, robotv1beta1.ReasonServiceMetadataNotAllowed, RetryOnChange, true},
		{&NotAllowedError{Reason: robotv1beta1.ReasonLoadBalancerClassNotAllowed}, robotv1beta1.ReasonLoadBalancerClassNotAllowed, RetryOnChange, true},
		{&NotAllowedError{Reason: robotv1beta1.ReasonGracePeriodNotAllowed}, robotv1beta1.ReasonGracePeriodNotAllowed, RetryOnChange, true},
		{&LoadBalancerClassImmutableError{Service: "x", Current: "a", Desired: "b"}, robotv1beta1.ReasonLoadBalancerClassImmutable, RetryOnChange, true},
		{&LoadBalancerClassImmutableError{Service: "x", Current: "a", Err: apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "x", nil)},
			robotv1beta1.ReasonLoadBalancerClassImmutable, RetryOnChange, true},
		{&EarlierRobotError{Name: "x"}, robotv1beta1.ReasonWaitingForGarbageCollection, RecheckLater, false},
		{&EarlierRobotError{Name: "x", Kind: "Service"}, robotv1beta1.ReasonWaitingForGarbageCollection, RecheckLater, false},
		{&FieldConflictError{Name: "x", Field: "f", Manager: "m", Err: errors.New("invalid")}, robotv1beta1.ReasonFieldConflict, RetryWithBackoff, true},
		{&PausedError{Deployment: "x"}, robotv1beta1.ReasonPaused, RetryOnChange, false},
		{&NewerFieldsError{Fields: []string{"spec.x"}}, robotv1beta1.ReasonNewerAPI, RetryOnChange, true},
		{fmt.Errorf("checking: %w", &ChangeRejectedError{Message: "exceeded quota"}), robotv1beta1.ReasonChangeRejected, RetryOnChange, true},
		{fmt.Errorf("checking: %w", &CheckDeferredError{After: time.Second}), robotv1beta1.ReasonRolloutInProgress, RecheckWhenDue, false},
		{fmt.Errorf("applying status: %w", StatusWriteError(apierrors.NewInternalError(errors.New("etcdserver: request is too large")))), ReasonStatusTooLarge, RetryOnChange, false},
		{StatusWriteError(apierrors.NewRequestEntityTooLargeError("limit is 3145728")), ReasonStatusTooLarge, RetryOnChange, false},
		{StatusWriteError(apierrors.NewInternalError(errors.New("etcdserver: leader changed"))), robotv1beta1.ReasonSyncFailed, RetryWithBackoff, false},
		{StatusWriteError(costRefusal("'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: x")),
			ReasonStatusValidationTooCostly, RetryOnChange, false},
		{fmt.Errorf("applying status: %w", StatusWriteError(costRefusal("validation failed due to running out of cost budget, no further validation rules will be run"))),
			ReasonStatusValidationTooCostly, RetryOnChange, false},
		// A rule that fails within its budget is no cost refusal; nor is a
		// message that quotes the words outside a 422.
		{StatusWriteError(costRefusal("a sidecar's port cannot have the name of another port")), robotv1beta1.ReasonSyncFailed, RetryWithBackoff, false},
		{StatusWriteError(apierrors.NewInternalError(errors.New("cost limit exceeded"))), robotv1beta1.ReasonSyncFailed, RetryWithBackoff, false},
	}
	for _, tt := range tests {
		f := Classify(tt.err)
		if f.Reason != tt.reason || f.Retry != tt.retry || WarnsOnEntry(f.Reason) != tt.warns {
			t.Errorf("%T: reason %s, retry %d, warns %v; want %s, %d, %v", tt.err, f.Reason, f.Retry, WarnsOnEntry(f.Reason), tt.reason, tt.retry, tt.warns)
		}
	}
}

// costRefusal is the API server's 422 for a Robot whose CRD rules said
// detail about its spec.
func costRefusal(detail string) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: "robot.dev", Kind: "Robot"}, "r", field.ErrorList{field.Invalid(field.NewPath("spec"), "object", detail)})
}

// TestStatusRefused: the status writes refused until the spec changes give
// their own Event reason and message; others none.
func TestStatusRefused(t *testing.T) {
	for _, tt := range []struct {
		err    error
		reason string
	}{
		{StatusWriteError(apierrors.NewRequestEntityTooLargeError("limit is 3145728")), ReasonStatusTooLarge},
		{fmt.Errorf("applying: %w", StatusWriteError(costRefusal("validation failed due to running out of cost budget"))), ReasonStatusValidationTooCostly},
		{StatusWriteError(costRefusal("must be at most 4")), ""},
		{nil, ""},
	} {
		reason, message, refused := StatusRefused(tt.err)
		if reason != tt.reason || refused != (tt.reason != "") || refused && !strings.Contains(message, "spec change") {
			t.Errorf("StatusRefused(%v) = %q, %q, %v; want %q, a message that says when it is written again", tt.err, reason, message, refused, tt.reason)
		}
	}
}

// TestLoadBalancerClassImmutableMessage: the message says what the Service
// has, what the Robot asks for, and the two ways out.
func TestLoadBalancerClassImmutableMessage(t *testing.T) {
	for _, tt := range []struct {
		err  *LoadBalancerClassImmutableError
		want []string
	}{
		{&LoadBalancerClassImmutableError{Namespace: "team", Service: "web", Current: "example.com/a", Desired: "example.com/b"},
			[]string{`asks for loadBalancerClass "example.com/b"`, `Service "web" has "example.com/a"`, "kubectl delete service -n team web",
				"a new address", `ask for "example.com/a" again`}},
		{&LoadBalancerClassImmutableError{Namespace: "team", Service: "web", Desired: "example.com/b"},
			[]string{`Service "web" has none (the cluster's default load balancer)`, "ask for none"}},
		{&LoadBalancerClassImmutableError{Namespace: "team", Service: "web", Current: "example.com/a"},
			[]string{"asks for loadBalancerClass none"}},
	} {
		for _, want := range tt.want {
			if !strings.Contains(tt.err.Error(), want) {
				t.Errorf("message %q lacks %q", tt.err.Error(), want)
			}
		}
	}
}

// TestDueIn: a check put off to its turn says when the Robot is due again;
// no other error does.
func TestDueIn(t *testing.T) {
	if got := DueIn(fmt.Errorf("syncing: %w", &CheckDeferredError{After: 1500 * time.Millisecond})); got != 1500*time.Millisecond {
		t.Errorf("a check put off 1.5s is due in %v", got)
	}
	for _, err := range []error{nil, errors.New("connection refused"), &ChangeRejectedError{Message: "x"}} {
		if got := DueIn(err); got != 0 {
			t.Errorf("%v is due in %v, want 0", err, got)
		}
	}
}
