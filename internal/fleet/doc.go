// Package fleet holds the fleet budget: how many Robots at a time roll a
// change of their pod template that does not come from their own spec (a
// new default of the operator's release, a digest of a ConfigMap their pods
// read). Without it, an upgrade of the operator that changes a default rolls
// every Robot of the cluster at once.
//
// The Budget is the leader's in-memory state: which Robots hold a slot
// (their Deployment rolls such a change) and which wait for one, first come
// first served. It sends no request: the owned Deployment's path asks it
// before an apply, and a restarted leader rebuilds it from its caches
// (Holders). What is decided from objects alone (whether a change comes from
// the spec, whether a rollout is over) is pure, in change.go.
package fleet
