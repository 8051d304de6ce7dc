package main

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
	retryWithBackoff retry = iota
	// recheckLater: the Robot is looked at again after nameTakenRecheck,
	// without backoff and without counting as an error. For what someone
	// else must change, and no watched event may say when.
	recheckLater
	// retryOnChange: nothing is retried; the next change to the Robot
	// queues it.
	retryOnChange
	// recheckAfterFight: the Robot is looked at again when its next revert
	// is due or its fight can end (contestedError.recheck), without
	// counting as an error.
	recheckAfterFight
)

// failure is how the controller treats one kind of sync error.
type failure struct {
	// reason is the Synced condition's reason, and Ready's while the
	// Deployment does not hold the Robot's current spec.
	reason string
	// readyReason, when set, is Ready's reason instead of reason.
	readyReason string
	retry       retry
}

// classify tells how a sync error is treated. Errors it does not know are
// API or network errors: retried with backoff, reported as SyncFailed.
func classify(err error) failure {
	var (
		nameTaken *nameTakenError
		svcTaken  *serviceNameTakenError
		earlier   *earlierRobotError
		invalid   *invalidSpecError
		conflict  *fieldConflictError
		contested *contestedError
	)
	switch {
	case errors.As(err, &invalid):
		return failure{reason: robotv1alpha1.ReasonInvalidSpec, retry: retryOnChange}
	case errors.As(err, &nameTaken):
		return failure{reason: robotv1alpha1.ReasonDeploymentNameTaken, retry: recheckLater}
	case errors.As(err, &svcTaken):
		// Like a taken Deployment name, but the Deployment runs: Ready
		// stays about it, and Synced says why the Service is missing.
		return failure{reason: robotv1alpha1.ReasonServiceNameTaken, retry: recheckLater}
	case errors.As(err, &conflict):
		// The other writer may take its field back; the Deployment's
		// update event then queues the Robot at once.
		return failure{reason: robotv1alpha1.ReasonFieldConflict, retry: retryWithBackoff}
	case errors.As(err, &contested):
		return failure{reason: robotv1alpha1.ReasonDeploymentContested, retry: recheckAfterFight}
	case errors.As(err, &earlier):
		// The garbage collector deletes it, and its delete event queues
		// the Robot; the recheck is for an event that was missed.
		return failure{reason: robotv1alpha1.ReasonWaitingForGarbageCollection, readyReason: robotv1alpha1.ReasonRolloutInProgress, retry: recheckLater}
	}
	return failure{reason: robotv1alpha1.ReasonSyncFailed, retry: retryWithBackoff}
}

// warnsOnEntry reports whether a Synced reason is one a person must act on:
// a Warning event is recorded when a Robot enters it. A SyncFailed is
// retried and usually passes by itself; its retries show in the metrics.
func warnsOnEntry(reason string) bool {
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
var errNamespaceTerminating = errors.New("the namespace is terminating")

// invalidSpecError is a Robot spec that cannot become a Deployment. Retrying
// does not help; a change to the Robot does.
type invalidSpecError struct{ err error }

func (e *invalidSpecError) Error() string { return "invalid spec: " + e.err.Error() }
func (e *invalidSpecError) Unwrap() error { return e.err }

// nameTakenError is a Deployment with the Robot's deployment name that the
// Robot does not control. The operator never modifies or adopts it.
type nameTakenError struct {
	name  string
	owner string // the Deployment's controller, if any, as "Kind/name"
}

func (e *nameTakenError) Error() string {
	msg := fmt.Sprintf("Deployment %q already exists and is not controlled by this Robot", e.name)
	if e.owner != "" {
		msg += " (it is controlled by " + e.owner + ")"
	}
	return msg + "; the operator leaves it alone: delete it, or recreate the Robot with another spec.deploymentName"
}

// notControlledError describes a Deployment that is in the way.
func notControlledError(deployment *appsv1.Deployment) error {
	err := &nameTakenError{name: deployment.Name}
	if owner := metav1.GetControllerOf(deployment); owner != nil {
		err.owner = owner.Kind + "/" + owner.Name
	}
	return err
}

// serviceNameTakenError is a Service with the name of the Robot's Service
// that the Robot does not control. The operator never modifies, adopts or
// deletes it.
type serviceNameTakenError struct {
	name  string
	owner string // the Service's controller, if any, as "Kind/name"
}

func (e *serviceNameTakenError) Error() string {
	msg := fmt.Sprintf("Service %q already exists and is not controlled by this Robot", e.name)
	if e.owner != "" {
		msg += " (it is controlled by " + e.owner + ")"
	}
	return msg + "; the operator leaves it alone: delete it, set spec.service.type to None, or recreate the Robot with another spec.deploymentName"
}

// fieldConflictError is an apply the API server refused because of a field
// another writer set on the Deployment, next to the operator's own.
type fieldConflictError struct {
	deployment string
	field      string // the other writer's field, as a field path
	manager    string // the other writer, by its field manager
	err        error  // the API server's answer
}

func (e *fieldConflictError) Error() string {
	return fmt.Sprintf("Deployment %q cannot take the Robot's spec because of %s, set by %q: %v", e.deployment, e.field, e.manager, e.err)
}

func (e *fieldConflictError) Unwrap() error { return e.err }

// earlierRobotError is a Deployment with the Robot's deployment name that an
// earlier Robot of the same name controls: that Robot was deleted, and the
// garbage collector has not deleted its Deployment yet.
type earlierRobotError struct {
	name string
	kind string // "Deployment" when empty
}

func (e *earlierRobotError) Error() string {
	return fmt.Sprintf("waiting for the garbage collector to delete %s %q of an earlier Robot of the same name", cmp.Or(e.kind, "Deployment"), e.name)
}

// syncTimeoutError: the sync of the Robot key did not finish within its
// deadline.
type syncTimeoutError struct {
	key     cache.ObjectName
	timeout time.Duration
}

func (e *syncTimeoutError) Error() string {
	return fmt.Sprintf("sync of Robot %s did not finish within %v", e.key, e.timeout)
}

func (e *syncTimeoutError) Unwrap() error { return context.DeadlineExceeded }
