// Package conversion serves the Robot CRD's conversion webhook. It takes a
// ConversionReview from the API server, converts each Robot in it with the
// conversions that live beside the API types (pkg/apis), and answers with
// the converted Robots or with why it could not. It converts and nothing
// else: it reads and writes nothing in the cluster, so every replica can
// serve it, the leader or not.
package conversion
