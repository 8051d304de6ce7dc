package outcome

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// This file holds the ways a sync can fail, in one place: for each kind of
// error, the reason the Robot's conditions give, whether the controller
// tries again and when, and whether a person is warned.

// retry is what the controller does after a failed sync.
type retry int

const (
	// retryWithBackoff: the Robot is queued again after its per-Robot
	// backoff (5 ms doubling up to 5 minutes), and the sync counts as an
	// error. For what may pass by itself: an API error, a timeout.
	RetryWithBackoff retry = iota
	// recheckLater: the Robot is looked at again after nameTakenRecheck,
	// without backoff and without counting as an error. For what someone
	// else must change, and no watched event may say when.
	RecheckLater
	// retryOnChange: nothing is retried; the next change to the Robot
	// queues it.
	RetryOnChange
	// recheckAfterFight: the Robot is looked at again when its next revert
	// is due or its fight can end (contestedError.recheck), without
	// counting as an error.
	RecheckAfterFight
)

// failure is how the controller treats one kind of sync error.
type Failure struct {
	// reason is the Synced condition's reason, and Ready's while the
	// Deployment does not hold the Robot's current spec.
	Reason string
	// readyReason, when set, is Ready's reason instead of reason.
	ReadyReason string
	Retry       retry
}

// classify tells how a sync error is treated. Errors it does not know are
// API or network errors: retried with backoff, reported as SyncFailed.
func Classify(err error) Failure {
	var (
		nameTaken *NameTakenError
		svcTaken  *ServiceNameTakenError
		earlier   *EarlierRobotError
		invalid   *InvalidSpecError
		conflict  *FieldConflictError
		contested *ContestedError
	)
	switch {
	case errors.As(err, &invalid):
		return Failure{Reason: robotv1alpha1.ReasonInvalidSpec, Retry: RetryOnChange}
	case errors.As(err, &nameTaken):
		return Failure{Reason: robotv1alpha1.ReasonDeploymentNameTaken, Retry: RecheckLater}
	case errors.As(err, &svcTaken):
		// Like a taken Deployment name, but the Deployment runs: Ready
		// stays about it, and Synced says why the Service is missing.
		return Failure{Reason: robotv1alpha1.ReasonServiceNameTaken, Retry: RecheckLater}
	case errors.As(err, &conflict):
		// The other writer may take its field back; the Deployment's
		// update event then queues the Robot at once.
		return Failure{Reason: robotv1alpha1.ReasonFieldConflict, Retry: RetryWithBackoff}
	case errors.As(err, &contested):
		return Failure{Reason: robotv1alpha1.ReasonDeploymentContested, Retry: RecheckAfterFight}
	case errors.As(err, &earlier):
		// The garbage collector deletes it, and its delete event queues
		// the Robot; the recheck is for an event that was missed.
		return Failure{Reason: robotv1alpha1.ReasonWaitingForGarbageCollection, ReadyReason: robotv1alpha1.ReasonRolloutInProgress, Retry: RecheckLater}
	}
	return Failure{Reason: robotv1alpha1.ReasonSyncFailed, Retry: RetryWithBackoff}
}

// warnsOnEntry reports whether a Synced reason is one a person must act on:
// a Warning event is recorded when a Robot enters it. A SyncFailed is
// retried and usually passes by itself; its retries show in the metrics.
func WarnsOnEntry(reason string) bool {
	switch reason {
	case robotv1alpha1.ReasonInvalidSpec, robotv1alpha1.ReasonDeploymentNameTaken, robotv1alpha1.ReasonServiceNameTaken,
		robotv1alpha1.ReasonFieldConflict, robotv1alpha1.ReasonDeploymentContested:
		return true
	}
	return false
}

// errNamespaceTerminating: the Robot's namespace is being deleted, so its
// Deployment cannot be created again, and the Robot is about to go too.
// Nothing is reported and nothing retried.
var ErrNamespaceTerminating = errors.New("the namespace is terminating")

// invalidSpecError is a Robot spec that cannot become a Deployment. Retrying
// does not help; a change to the Robot does.
type InvalidSpecError struct{ Err error }

func (e *InvalidSpecError) Error() string { return "invalid spec: " + e.Err.Error() }
func (e *InvalidSpecError) Unwrap() error { return e.Err }

// nameTakenError is a Deployment with the Robot's deployment name that the
// Robot does not control. The operator never modifies or adopts it.
type NameTakenError struct {
	Name  string
	Owner string // the Deployment's controller, if any, as "Kind/name"
}

func (e *NameTakenError) Error() string {
	msg := fmt.Sprintf("Deployment %q already exists and is not controlled by this Robot", e.Name)
	if e.Owner != "" {
		msg += " (it is controlled by " + e.Owner + ")"
	}
	return msg + "; the operator leaves it alone: delete it, or recreate the Robot with another spec.deploymentName"
}

// notControlledError describes a Deployment that is in the way.
func NotControlledError(deployment *appsv1.Deployment) error {
	err := &NameTakenError{Name: deployment.Name}
	if owner := metav1.GetControllerOf(deployment); owner != nil {
		err.Owner = owner.Kind + "/" + owner.Name
	}
	return err
}

// serviceNameTakenError is a Service with the name of the Robot's Service
// that the Robot does not control. The operator never modifies, adopts or
// deletes it.
type ServiceNameTakenError struct {
	Name  string
	Owner string // the Service's controller, if any, as "Kind/name"
}

func (e *ServiceNameTakenError) Error() string {
	msg := fmt.Sprintf("Service %q already exists and is not controlled by this Robot", e.Name)
	if e.Owner != "" {
		msg += " (it is controlled by " + e.Owner + ")"
	}
	return msg + "; the operator leaves it alone: delete it, set spec.service.type to None, or recreate the Robot with another spec.deploymentName"
}

// fieldConflictError is an apply the API server refused because of a field
// another writer set on the Deployment, next to the operator's own.
type FieldConflictError struct {
	Deployment string
	Field      string // the other writer's field, as a field path
	Manager    string // the other writer, by its field manager
	Err        error  // the API server's answer
}

func (e *FieldConflictError) Error() string {
	return fmt.Sprintf("Deployment %q cannot take the Robot's spec because of %s, set by %q: %v", e.Deployment, e.Field, e.Manager, e.Err)
}

func (e *FieldConflictError) Unwrap() error { return e.Err }

// earlierRobotError is a Deployment with the Robot's deployment name that an
// earlier Robot of the same name controls: that Robot was deleted, and the
// garbage collector has not deleted its Deployment yet.
type EarlierRobotError struct {
	Name string
	Kind string // "Deployment" when empty
}

func (e *EarlierRobotError) Error() string {
	return fmt.Sprintf("waiting for the garbage collector to delete %s %q of an earlier Robot of the same name", cmp.Or(e.Kind, "Deployment"), e.Name)
}

// syncTimeoutError: the sync of the Robot key did not finish within its
// deadline.
type SyncTimeoutError struct {
	Key     cache.ObjectName
	Timeout time.Duration
}

func (e *SyncTimeoutError) Error() string {
	return fmt.Sprintf("sync of Robot %s did not finish within %v", e.Key, e.Timeout)
}

func (e *SyncTimeoutError) Unwrap() error { return context.DeadlineExceeded }
