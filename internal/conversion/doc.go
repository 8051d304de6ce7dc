// Package conversion serves the Robot CRD's conversion webhook. It takes a
// ConversionReview from the API server, converts each Robot in it as JSON,
// moving only the fields that differ between the versions and passing every
// other value through as stored, and answers with the converted Robots or
// with why it could not (an object that is not a Robot, a field the operator
// does not know). The typed conversions beside the API types (pkg/apis) do
// the same on Go values, and the tests hold the two together. It converts and nothing
// else: it reads and writes nothing in the cluster, so every replica can
// serve it, the leader or not.
package conversion
