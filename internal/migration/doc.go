// Package migration moves the Robots an earlier release stored as v1alpha1
// to v1beta1, the storage version, and then drops v1alpha1 from the CRD's
// status.storedVersions, so that a later release can stop serving it. The
// leader does it after it starts, while storedVersions lists another
// version; afterwards it costs one read of the CRD per start. A Robot the
// API server refuses to write is reported (a Warning Event, a metric) and
// retried on its own, and keeps storedVersions as it is until it is written.
// Once done, when the operator is told to (-serve-v1alpha1), it sets whether
// the CRD serves v1alpha1, that one field, keeping the version in the CRD.
package migration
