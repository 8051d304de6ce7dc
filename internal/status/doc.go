// Package status decides what a Robot's status says: its conditions from
// its Deployment, its Service and the outcome of the sync, the diagnosis of
// why the pods of its Deployment's current ReplicaSet do not run from the
// summaries the pod and ReplicaSet caches keep (internal/podsummary), the
// status apply configuration, and the Warning Event on entry into a state
// that needs a person.
//
// It is pure: it computes from objects it is given, and imports no client.
package status
