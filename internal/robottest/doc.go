// Package robottest holds test fixtures that the tests of several packages
// share: Robots, the Deployments and Services the API server would store for
// them, pods, managedFields entries, golden objects and fuzz helpers. It
// imports no package of the operator but outcome, so that any package's
// tests may use it.
package robottest
