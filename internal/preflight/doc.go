// Package preflight checks a Robot's changed pod template before its
// Deployment is written: one pod of the template is created as a
// server-side dry run in the Robot's namespace, so that Pod Security, the
// ResourceQuotas, the LimitRanges, the admission policies and webhooks all
// judge it, and the ConfigMaps (and their keys), Secrets, ServiceAccount
// and PriorityClass the pods name are looked up. A template the cluster
// refuses is not written: the Deployment keeps running the last one.
//
// Each template is checked once (a digest of it is remembered per Robot),
// on a token bucket of its own. A check that fails for a reason that is
// not the pod's (a timeout, the API server overloaded, a webhook without
// dry-run support, the operator not allowed) lets the change through,
// logged and counted: the check never holds a Robot back for the cluster's
// own trouble.
//
// It writes nothing: a dry run stores nothing.
package preflight
