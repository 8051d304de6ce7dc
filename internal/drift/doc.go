// Package drift decides whether what the operator would apply differs from
// what is there: the drift of a Deployment or Service, the spec-check memo
// that keeps the costly comparison of specs to one per change, which
// managedFields entries are the operator's (the create's and the apply's),
// and the fight tracker that backs off from another writer that keeps
// undoing the operator's changes. The patches that act on those decisions
// are the writer's.
//
// It is pure: it compares objects it is given, and imports no client.
package drift
