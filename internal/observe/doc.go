// Package observe is what the operator run with -observe-only keeps and
// serves: per Robot, the writes its syncs would have made (Report), told as
// a log line when they change, as gauges, and as a page a person reads; and
// the transport (ReadOnly) that lets no write of the operator's clients
// leave the process, so that an observe-only operator cannot write whatever
// its code asks.
//
// It decides nothing about a Robot: the writer hands it what it would have
// written.
package observe
