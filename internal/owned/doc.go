// Package owned is the one path every object a Robot owns goes through: its
// Deployment, its Service, and any kind to come. A kind is described once
// (Kind: how its desired object is built, where it is cached, how drift is
// told, how it is written and announced, what error says its name is taken,
// whether its API may be missing) in a small file of its own, and listed
// by one line in the list of kinds (kinds.go); Path, written once, reads it from the cache,
// creates it when missing, refuses to touch one the Robot does not control,
// compares, applies with the UID precondition, deletes it when the Robot no
// longer asks for it, backs off from another writer that keeps changing it,
// and remembers an apply the API server refused for the Robot's generation.
// The writes themselves, and what they remember, are internal/writer's.
package owned
