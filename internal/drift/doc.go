// Package drift decides whether what the operator would apply differs from
// what is there: the drift of a Deployment or Service, the spec-check memo
// that keeps the costly comparison of specs to one per change, the
// managedFields hand-over of what a create set to the applies that follow,
// the patch that clears a rollingUpdate the apply of a Recreate strategy
// cannot, and the fight tracker that backs off from another writer that
// keeps undoing the operator's changes.
//
// It is pure: it compares objects it is given, and imports no client.
package drift
