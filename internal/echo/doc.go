// Package echo is the echo filter: it remembers the objects this process
// wrote until the informer caches catch up, so that a sync reads its own
// writes and the watch event of a write made by this process does not queue
// another sync.
package echo
