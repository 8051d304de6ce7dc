// Package podsummary holds what the operator caches of the pods and
// ReplicaSets of the Deployments it manages: the informers' transform
// (Summarize) turns each into a summary that keeps only what the diagnosis
// of a Robot's pods reads and what finds its Robot, a few hundred bytes where
// the object takes kilobytes. The summaries are runtime.Objects, so the
// informers, their indexes and handlers treat them as any other; the pod
// cache's index by Robot is here too.
//
// It decides nothing about a Robot: internal/status reads the summaries.
// It is pure: it turns objects it is given into summaries, and imports no
// client.
package podsummary
