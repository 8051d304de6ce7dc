package main

import (
	"fmt"
	"time"
)

// contestedError is a Deployment that another writer keeps changing away
// from what the Robot asks for.
type contestedError struct {
	deployment string
	drift      string // what the other writer changed, last seen
	writer     string // its field manager, or ""
	// recheck is when to look at the Robot again: when the next revert is
	// due, or when the fight can end.
	recheck time.Duration
}

func (e *contestedError) Error() string {
	writer := "another writer"
	if e.writer != "" {
		writer = fmt.Sprintf("another writer (field manager %q)", e.writer)
	}
	return fmt.Sprintf("%s keeps changing Deployment %q (%s); the operator puts back what the Robot asks for, "+
		"waiting longer each time, up to %v, and stops waiting once the Deployment is left alone",
		writer, e.deployment, e.drift, fightMaxWait)
}
