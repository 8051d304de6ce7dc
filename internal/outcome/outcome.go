package outcome

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// This file holds the ways a sync can fail, in one place: for each kind of
// error, the reason the Robot's conditions give, whether the controller
// tries again and when, and whether a person is warned.

// retry is what the controller does after a failed sync.
type retry int

const (
	// RetryWithBackoff: the Robot is queued again after its per-Robot
	// backoff (5 ms doubling up to 5 minutes), and the sync counts as an
	// error. For what may pass by itself: an API error, a timeout.
	RetryWithBackoff retry = iota
	// RecheckLater: the Robot is looked at again after nameTakenRecheck,
	// without backoff and without counting as an error. For what someone
	// else must change, and no watched event may say when.
	RecheckLater
	// RetryOnChange: nothing is retried; the next change to the Robot
	// queues it.
	RetryOnChange
	// RecheckAfterFight: the Robot is looked at again when its next revert
	// is due or its fight can end (ContestedError.recheck), without
	// counting as an error.
	RecheckAfterFight
	// RecheckWhenDue: the Robot is looked at again when the error says
	// (RequeueAfter), without counting as an error and without writing
	// its status: it waits for its turn, which nothing is wrong in.
	RecheckWhenDue
)

// Failure is how the controller treats one kind of sync error.
type Failure struct {
	// Reason is the Synced condition's reason, and Ready's while the
	// Deployment does not hold the Robot's current spec.
	Reason string
	// ReadyReason, when set, is Ready's reason instead of reason.
	ReadyReason string
	Retry       retry
	// KeepsReady says that the Deployment holds what the Robot's own spec
	// asks for all the same: Ready keeps saying what its pods do.
	KeepsReady bool
}

// Classify tells how a sync error is treated. Errors it does not know are
// API or network errors: retried with backoff, reported as SyncFailed.
func Classify(err error) Failure {
	var (
		nameTaken *NameTakenError
		svcType   *ServiceTypeNotAllowedError
		notAllow  *NotAllowedError
		lbClass   *LoadBalancerClassImmutableError
		earlier   *EarlierRobotError
		invalid   *InvalidSpecError
		conflict  *FieldConflictError
		contested *ContestedError
		paused    *PausedError
		tooLarge  *StatusTooLargeError
		tooCostly *StatusValidationTooCostlyError
		newer     *NewerFieldsError
		rejected  *ChangeRejectedError
		fleet     *FleetBudgetError
		deferred  *CheckDeferredError
	)
	switch {
	case errors.As(err, &deferred):
		// Its turn comes at a known time, and nothing about the Robot is
		// wrong: its status says what it said until the check is made.
		return Failure{Reason: robotv1beta1.ReasonRolloutInProgress, Retry: RecheckWhenDue, KeepsReady: true}
	case errors.Is(err, ErrGatewayAPIMissing):
		// Installing the Gateway API queues every Robot that asks for a
		// route.
		return Failure{Reason: robotv1beta1.ReasonGatewayAPIMissing, Retry: RetryOnChange}
	case errors.As(err, &tooLarge):
		// The Robot does not fit in etcd with its status: only a change
		// of its spec, a new generation, can make it fit.
		return Failure{Reason: ReasonStatusTooLarge, Retry: RetryOnChange}
	case errors.As(err, &tooCostly):
		// The same spec costs the same to check: only a new generation
		// can be checked within the budget.
		return Failure{Reason: ReasonStatusValidationTooCostly, Retry: RetryOnChange}
	case errors.As(err, &newer):
		// A change of the Robot that drops the fields, or a release that
		// knows them, can help; the first queues it, the second restarts
		// the operator.
		return Failure{Reason: robotv1beta1.ReasonNewerAPI, Retry: RetryOnChange}
	case errors.As(err, &fleet):
		// The Robot is queued again when a slot of the budget frees.
		return Failure{Reason: robotv1beta1.ReasonWaitingForFleetBudget, Retry: RetryOnChange, KeepsReady: true}
	case errors.As(err, &paused):
		// The person who paused the Robot unpauses it; that change
		// queues it.
		return Failure{Reason: robotv1beta1.ReasonPaused, Retry: RetryOnChange}
	case errors.As(err, &invalid):
		return Failure{Reason: robotv1beta1.ReasonInvalidSpec, Retry: RetryOnChange}
	case errors.As(err, &rejected):
		// The same template is refused again: a change of the Robot, or
		// of a ConfigMap it names, queues it.
		return Failure{Reason: robotv1beta1.ReasonChangeRejected, Retry: RetryOnChange}
	case errors.As(err, &nameTaken):
		// Someone else must free the name, and the cache, which holds
		// only the operator's objects, sees no event when they do.
		return Failure{Reason: cmp.Or(nameTaken.Reason, robotv1beta1.ReasonDeploymentNameTaken), Retry: RecheckLater}
	case errors.As(err, &svcType):
		// Only a change of the Robot, or of the operator's flags (which
		// restarts it), can help.
		return Failure{Reason: robotv1beta1.ReasonServiceTypeNotAllowed, Retry: RetryOnChange}
	case errors.As(err, &notAllow):
		// As for the Service's type: a change of the Robot, or of the
		// operator's flags (a restart), can help.
		return Failure{Reason: notAllow.Reason, Retry: RetryOnChange}
	case errors.As(err, &lbClass):
		// Only a person can choose between the Service's address and the
		// new class: a change of the Robot, or the Service's deletion
		// (whose event queues the Robot), syncs it again.
		return Failure{Reason: robotv1beta1.ReasonLoadBalancerClassImmutable, Retry: RetryOnChange}
	case errors.As(err, &conflict):
		// The other writer may take its field back; the Deployment's
		// update event then queues the Robot at once.
		return Failure{Reason: robotv1beta1.ReasonFieldConflict, Retry: RetryWithBackoff}
	case errors.As(err, &contested):
		return Failure{Reason: cmp.Or(contested.Reason, robotv1beta1.ReasonDeploymentContested), Retry: RecheckAfterFight}
	case errors.As(err, &earlier):
		// The garbage collector deletes it, and its delete event queues
		// the Robot; the recheck is for an event that was missed.
		return Failure{Reason: robotv1beta1.ReasonWaitingForGarbageCollection, ReadyReason: robotv1beta1.ReasonRolloutInProgress, Retry: RecheckLater}
	}
	return Failure{Reason: robotv1beta1.ReasonSyncFailed, Retry: RetryWithBackoff}
}

// WarnsOnEntry reports whether a Synced reason is one a person must act on:
// a Warning event is recorded when a Robot enters it. A SyncFailed is
// retried and usually passes by itself; its retries show in the metrics.
func WarnsOnEntry(reason string) bool {
	switch reason {
	case robotv1beta1.ReasonInvalidSpec, robotv1beta1.ReasonDeploymentNameTaken, robotv1beta1.ReasonServiceNameTaken, robotv1beta1.ReasonServiceTypeNotAllowed,
		robotv1beta1.ReasonLoadBalancerClassImmutable, robotv1beta1.ReasonFieldConflict, robotv1beta1.ReasonDeploymentContested, robotv1beta1.ReasonServiceContested,
		robotv1beta1.ReasonDisruptionBudgetNameTaken, robotv1beta1.ReasonDisruptionBudgetContested, robotv1beta1.ReasonDisruptionBudgetNotAllowed, robotv1beta1.ReasonConfigNotWatched,
		robotv1beta1.ReasonGatewayAPIMissing, robotv1beta1.ReasonRouteNameTaken, robotv1beta1.ReasonRouteContested,
		robotv1beta1.ReasonRouteNotAllowed, robotv1beta1.ReasonServiceMetadataNotAllowed, robotv1beta1.ReasonLoadBalancerClassNotAllowed, robotv1beta1.ReasonGracePeriodNotAllowed, robotv1beta1.ReasonNewerAPI,
		robotv1beta1.ReasonChangeRejected:
		return true
	}
	return false
}

// ErrNamespaceTerminating: the Robot's namespace is being deleted, so its
// Deployment cannot be created again, and the Robot is about to go too.
// Nothing is reported and nothing retried.
var ErrNamespaceTerminating = errors.New("the namespace is terminating")

// ErrGatewayAPIMissing: the Robot asks for an HTTPRoute, and the cluster
// has no Gateway API. The operator queues the Robot again once the Gateway
// API is installed.
var ErrGatewayAPIMissing = errors.New("the Robot asks for an HTTPRoute (spec.http), and the cluster has no Gateway API: " +
	"install its CRDs (gateway.networking.k8s.io/v1, HTTPRoute) and the route is made, with no restart of the operator")

// ChangeRejectedError is a Robot's new pod template that would not run:
// the API server refused a dry-run pod of it, or something the pods name is
// missing. Message is the API server's own message, or names what is
// missing and which field of the pods named it. The Deployment keeps its
// last template.
type ChangeRejectedError struct{ Message string }

func (e *ChangeRejectedError) Error() string {
	return "the new pod template was not written to the Deployment, which keeps running the last one: " + e.Message
}

// CheckDeferredError is a Robot's new pod template whose check before it is
// written (internal/preflight) waits for its turn of the check's rate
// limit: the Deployment keeps its last template until After, when the
// Robot is synced again and its check made. No worker waits meanwhile.
type CheckDeferredError struct{ After time.Duration }

func (e *CheckDeferredError) Error() string {
	return fmt.Sprintf("the new pod template waits %v for its turn to be checked (-preflight-qps) before it is written to the Deployment", e.After)
}

// RequeueAfter is how long until the check's turn.
func (e *CheckDeferredError) RequeueAfter() time.Duration { return e.After }

// DueIn returns how long until the Robot whose sync failed with err, an
// error that Classify says RecheckWhenDue of, is to be synced again; 0 for
// any other error.
func DueIn(err error) time.Duration {
	var due interface{ RequeueAfter() time.Duration }
	if errors.As(err, &due) {
		return due.RequeueAfter()
	}
	return 0
}

// InvalidSpecError is a Robot spec that cannot become a Deployment. Retrying
// does not help; a change to the Robot does.
type InvalidSpecError struct{ Err error }

func (e *InvalidSpecError) Error() string { return "invalid spec: " + e.Err.Error() }
func (e *InvalidSpecError) Unwrap() error { return e.Err }

// NameTakenError is an object with the name of one the Robot owns (its
// Deployment, its Service, its PodDisruptionBudget, its HTTPRoute) that the
// Robot does not control. The operator never modifies, adopts or deletes
// it. When it is not the Deployment, the Deployment runs all the same:
// Ready stays about it, and Synced says why the object is missing. Its
// empty fields are those of a Deployment.
type NameTakenError struct {
	Kind  string // the object's kind: "Deployment" when empty
	Name  string // the object's name
	Owner string // the object's controller, if any, as ControllerName writes it
	// Reason is the Synced condition's reason: DeploymentNameTaken when
	// empty.
	Reason string
	// Hint is what a person can do, besides deleting the object:
	// DeploymentNameTakenHint when empty.
	Hint string
}

// DeploymentNameTakenHint is what a person can do about a Deployment in
// the way, besides deleting it.
const DeploymentNameTakenHint = "or recreate the Robot with another spec.deploymentName"

func (e *NameTakenError) Error() string {
	msg := fmt.Sprintf("%s %q already exists and is not controlled by this Robot", cmp.Or(e.Kind, "Deployment"), e.Name)
	if e.Owner != "" {
		msg += " (it is controlled by " + e.Owner + ")"
	}
	return msg + "; the operator leaves it alone: delete it, " + cmp.Or(e.Hint, DeploymentNameTakenHint)
}

// ControllerName returns object's controller as "Kind/name", or "".
func ControllerName(object metav1.Object) string {
	if ref := metav1.GetControllerOf(object); ref != nil {
		return ref.Kind + "/" + ref.Name
	}
	return ""
}

// ServiceTypeNotAllowedError is a Robot that asks for a Service of a type the
// operator may not create.
type ServiceTypeNotAllowedError struct {
	Type    robotv1beta1.ServiceType
	Allowed []robotv1beta1.ServiceType
}

func (e *ServiceTypeNotAllowedError) Error() string {
	allowed := make([]string, len(e.Allowed))
	for i, t := range e.Allowed {
		allowed[i] = string(t)
	}
	return fmt.Sprintf("the Robot asks for a Service of type %s, which this operator does not create (it creates %s); "+
		"ask for one of those, or for spec.service.type None", e.Type, strings.Join(allowed, ", "))
}

// NotAllowedError is a Robot that asks for something the administrator's
// switches (internal/policy) do not allow. Reason is the Synced reason, a
// constant of robotv1beta1 that WarnsOnEntry knows; Message names the
// Robot's field and the flag that refuses it.
type NotAllowedError struct {
	Reason  string
	Message string
}

func (e *NotAllowedError) Error() string { return e.Message }

// LoadBalancerClassImmutableError is a Robot that asks for another
// loadBalancerClass than its LoadBalancer Service has. The API server refuses
// to change a Service's class once set, so the operator leaves the Service
// as it is rather than send an apply that is refused on every sync. The
// choice it leaves is a person's: the new class costs a new load balancer,
// and with it the Service's address.
type LoadBalancerClassImmutableError struct {
	Namespace string
	Service   string
	Current   string // the Service's class, "" for none
	Desired   string // the Robot's, "" for none
	Err       error  // the API server's refusal, when an apply was sent
}

func (e *LoadBalancerClassImmutableError) Error() string {
	class := func(c string) string {
		if c == "" {
			return "none (the cluster's default load balancer)"
		}
		return fmt.Sprintf("%q", c)
	}
	return fmt.Sprintf("the Robot asks for loadBalancerClass %s, and its Service %q has %s, which a Service cannot change once set; "+
		"the operator leaves the Service as it is: to move it to the new class, delete it (kubectl delete service -n %s %s) "+
		"and the operator creates it again at once, with a new load balancer and a new address; or ask for %s again",
		class(e.Desired), e.Service, class(e.Current), e.Namespace, e.Service, class(e.Current))
}

func (e *LoadBalancerClassImmutableError) Unwrap() error { return e.Err }

// FieldConflictError is an apply the API server refused because of a field
// another writer set on an object the Robot owns, next to the operator's own.
type FieldConflictError struct {
	Kind    string // the object's kind: "Deployment" when empty
	Name    string // the object's name
	Field   string // the other writer's field, as a field path
	Manager string // the other writer, by its field manager
	Err     error  // the API server's answer
}

func (e *FieldConflictError) Error() string {
	return fmt.Sprintf("%s %q cannot take the Robot's spec because of %s, set by %q: %v", cmp.Or(e.Kind, "Deployment"), e.Name, e.Field, e.Manager, e.Err)
}

func (e *FieldConflictError) Unwrap() error { return e.Err }

// EarlierRobotError is a Deployment with the Robot's deployment name that an
// earlier Robot of the same name controls: that Robot was deleted, and the
// garbage collector has not deleted its Deployment yet.
type EarlierRobotError struct {
	Name string
	Kind string // "Deployment" when empty
}

func (e *EarlierRobotError) Error() string {
	return fmt.Sprintf("waiting for the garbage collector to delete %s %q of an earlier Robot of the same name", cmp.Or(e.Kind, "Deployment"), e.Name)
}

// SyncTimeoutError: the sync of the Robot key did not finish within its
// deadline.
type SyncTimeoutError struct {
	Key     types.NamespacedName
	Timeout time.Duration
}

func (e *SyncTimeoutError) Error() string {
	return fmt.Sprintf("sync of Robot %s did not finish within %v", e.Key, e.Timeout)
}

func (e *SyncTimeoutError) Unwrap() error { return context.DeadlineExceeded }

// ContestedError is a Deployment that another writer keeps changing away
// from what the Robot asks for.
type ContestedError struct {
	// Reason is the Synced condition's reason: the kind's, such as
	// DeploymentContested (the default).
	Reason string
	Kind   string // the object's kind: "Deployment" when empty
	Name   string // the object's name
	Drift  string // what the other writer changed, last seen
	Writer string // its field manager, or ""
	// Recheck is when to look at the Robot again: when the next revert is
	// due, or when the fight can end.
	Recheck time.Duration
	// MaxWait is the longest the operator waits between two reverts.
	MaxWait time.Duration
}

func (e *ContestedError) Error() string {
	writer := "another writer"
	if e.Writer != "" {
		writer = fmt.Sprintf("another writer (field manager %q)", e.Writer)
	}
	kind := cmp.Or(e.Kind, "Deployment")
	return fmt.Sprintf("%s keeps changing %s %q (%s); the operator puts back what the Robot asks for, "+
		"waiting longer each time, up to %v, and stops waiting once the %s is left alone",
		writer, kind, e.Name, e.Drift, e.MaxWait, kind)
}

// PausedError is a Robot whose annotation robot.dev/paused is "true" (in any
// case): the operator writes nothing to what it owns. It is no failure
// a person must be warned of (a person asked for it), but the Synced
// condition must say that the Deployment is not kept as the Robot asks.
type PausedError struct {
	Deployment string
}

func (e *PausedError) Error() string {
	return fmt.Sprintf("reconciliation is paused by the robot.dev/paused annotation: the operator writes nothing to Deployment %q "+
		"or the Robot's Service, PodDisruptionBudget and HTTPRoute until the annotation is removed or set to \"false\"", e.Deployment)
}

// NewerFieldsError is a Robot that holds spec fields this release's Go types
// do not know: a newer release's CRD let a client write them, and this
// release was rolled back to. Decoding drops them, so a Deployment built from
// what is left, applied, would remove from the Robot's pods what the newer
// release gave them (the apply has the same field manager). The operator
// writes nothing to what the Robot owns.
type NewerFieldsError struct {
	// Fields are the fields, each with who set it through which version.
	Fields []string
}

func (e *NewerFieldsError) Error() string {
	return fmt.Sprintf("the Robot holds fields this release of the operator does not know, written through a newer release's CRD: %s; "+
		"the operator leaves its Deployment and everything else it owns as they are: run the release that knows them, "+
		"or remove them from the Robot", strings.Join(e.Fields, ", "))
}

// ReasonStatusTooLarge is the reason of the Warning Event on a Robot whose
// status the API server cannot store. No condition carries it: the status
// that would hold it is what cannot be written.
const ReasonStatusTooLarge = "StatusTooLarge"

// StatusTooLargeError is a status write the API server refused because the
// Robot, with that status, is larger than what etcd stores in one request
// (1.5 MiB by default). The status is small: the Robot's spec (an env value,
// say) takes the room. Retrying does not help; a smaller spec does.
type StatusTooLargeError struct{ Err error }

func (e *StatusTooLargeError) Error() string {
	return fmt.Sprintf("the Robot is too large for the API server to store its status (%v): shrink its spec, "+
		"for instance move large env values to a ConfigMap; the operator writes its status again at its next spec change", e.Err)
}

func (e *StatusTooLargeError) Unwrap() error { return e.Err }

// ReasonStatusValidationTooCostly is the reason of the Warning Event on a
// Robot whose status the API server refuses because checking the Robot
// against the CRD's CEL rules costs more than its budget. No condition
// carries it: the status that would hold it is what cannot be written.
const ReasonStatusValidationTooCostly = "StatusValidationTooCostly"

// StatusValidationTooCostlyError is a status write the API server refused
// (422) because the CRD's CEL rules ran out of their cost budget on the
// Robot. A status write sends the status alone, but the API server checks
// the whole Robot, spec included: a spec far beyond what the schema admits
// (a list longer than its maxItems, stored around the schema) fails every
// write, each after seconds of the API server's CPU. Retrying does not help;
// a smaller spec does.
type StatusValidationTooCostlyError struct{ Err error }

func (e *StatusValidationTooCostlyError) Error() string {
	return fmt.Sprintf("the API server cannot check the Robot against its CRD's rules within their cost budget (%v): "+
		"its spec holds far more than the CRD allows (a list longer than its maxItems, say); shrink it to what the CRD allows; "+
		"the operator writes its status again at its next spec change", e.Err)
}

func (e *StatusValidationTooCostlyError) Unwrap() error { return e.Err }

// costExceeded holds what the API server says when a CRD's CEL rules ran out
// of cost on an object (apiextensions-apiserver's schema/cel): a rule cut
// off by the per-call limit, and the request's budget spent before a rule
// could run.
var costExceeded = []string{"cost limit exceeded", "call cost exceeds limit", "running out of cost budget"}

// StatusWriteError returns err, the error of a Robot's status write, as a
// StatusTooLargeError when it says that the Robot is too large to store,
// and as a StatusValidationTooCostlyError when the CRD's rules ran out of
// cost on it. The API server answers the first with a 413, or, when etcd
// refuses the request, with a 500 that quotes etcd; the second with a 422.
func StatusWriteError(err error) error {
	if err == nil {
		return nil
	}
	if apierrors.IsRequestEntityTooLargeError(err) || strings.Contains(err.Error(), "etcdserver: request is too large") ||
		strings.Contains(err.Error(), "trying to send message larger than max") {
		return &StatusTooLargeError{Err: err}
	}
	if apierrors.IsInvalid(err) {
		for _, text := range costExceeded {
			if strings.Contains(err.Error(), text) {
				return &StatusValidationTooCostlyError{Err: err}
			}
		}
	}
	return err
}

// StatusRefused returns the reason and the message of the Warning Event for
// err, when err is a status write the API server refuses for as long as the
// Robot's spec stays as it is: too large to store, or too costly to check.
func StatusRefused(err error) (reason, message string, refused bool) {
	var (
		tooLarge  *StatusTooLargeError
		tooCostly *StatusValidationTooCostlyError
	)
	switch {
	case errors.As(err, &tooLarge):
		return ReasonStatusTooLarge, tooLarge.Error(), true
	case errors.As(err, &tooCostly):
		return ReasonStatusValidationTooCostly, tooCostly.Error(), true
	}
	return "", "", false
}

// ErrRobotGone is a Robot the cache holds but the API server no longer does.
var ErrRobotGone = errors.New("the Robot no longer exists")

// FleetBudgetError is a change of the Robot's pod template that does not
// come from its spec (a new default of the operator, say), held while as
// many Robots as the fleet budget allows roll such changes. The Deployment
// keeps the template it has; the Robot is queued again when a slot frees.
// Message says so once, as the Robot was first held: it names the budget
// and how many Robots rolled and waited then, and it is not rewritten as
// those numbers change, so that a waiting Robot costs no status write.
type FleetBudgetError struct {
	Message string
}

func (e *FleetBudgetError) Error() string { return e.Message }
