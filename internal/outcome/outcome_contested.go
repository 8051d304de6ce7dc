package outcome

import (
	"fmt"
	"time"
)

// contestedError is a Deployment that another writer keeps changing away
// from what the Robot asks for.
type ContestedError struct {
	Deployment string
	Drift      string // what the other writer changed, last seen
	Writer     string // its field manager, or ""
	// recheck is when to look at the Robot again: when the next revert is
	// due, or when the fight can end.
	Recheck time.Duration
	// MaxWait is the longest the operator waits between two reverts.
	MaxWait time.Duration
}

func (e *ContestedError) Error() string {
	writer := "another writer"
	if e.Writer != "" {
		writer = fmt.Sprintf("another writer (field manager %q)", e.Writer)
	}
	return fmt.Sprintf("%s keeps changing Deployment %q (%s); the operator puts back what the Robot asks for, "+
		"waiting longer each time, up to %v, and stops waiting once the Deployment is left alone",
		writer, e.Deployment, e.Drift, e.MaxWait)
}
