// Package memlimit sets the Go runtime's memory limit from the memory limit
// of the container the operator runs in.
//
// Without a limit the Go runtime lets the heap grow to twice the live heap
// before it collects (GOGC=100), whatever the container may hold: the
// operator is OOM-killed while half of what it holds is garbage. With
// GOMEMLIMIT a little under the container's limit, the runtime collects
// harder as it nears the limit instead.
//
// What the limit is decided by Limit and GoLimit, which read strings and
// touch nothing; Apply reads the cgroup's files and sets the limit. It
// decides nothing about Robots and reaches no API server.
package memlimit
