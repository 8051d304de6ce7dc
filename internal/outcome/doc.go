// Package outcome is the taxonomy of what can go wrong in a sync: an error
// type for each case a Robot reports differently, and Classify, which says
// for any error the condition reason, the message and how the sync is
// retried (with backoff, later, or not until the Robot changes).
//
// It is pure, and imports no client.
package outcome
