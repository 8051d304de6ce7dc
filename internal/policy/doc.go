// Package policy holds the administrator's switches: what a Robot may ask the
// operator for beyond what its author's own RBAC gives them (a Service of a
// type, its metadata, an HTTPRoute, a disruption budget, a long shutdown).
// The operator's ServiceAccount writes what a Robot asks for, so a tenant's
// Robot would otherwise reach as far as the operator's RBAC does.
//
// It decides and writes nothing: it reads flags, and tells whether a Robot
// is within them. It imports no client.
package policy
