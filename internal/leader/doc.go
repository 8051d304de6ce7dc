// Package leader runs the controller only while this process holds the
// leader election Lease, and provides the write fence: a check before every
// write that fails once the Lease may have passed to another replica.
package leader
