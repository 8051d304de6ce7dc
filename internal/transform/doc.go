// Package transform holds the Deployment and Service informers' transforms
// that keep the caches small: managedFields trimmed to what the controller
// reads or dropped, an object no Robot controls kept as a stub, and strings
// that every object repeats shared. The transforms change the objects they
// are given, in place, before the informer caches them; so the package is
// not pure, though it imports no client. What the pod and ReplicaSet caches
// keep is internal/podsummary's.
package transform
