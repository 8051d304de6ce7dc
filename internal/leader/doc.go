// Package leader runs the controller only while this process holds the
// leader election Lease, and provides the write fence: a check before every
// write that fails once the Lease may have passed to another replica.
//
// Run keeps client-go's elector to take, renew and release the Lease, and
// lets it decide nothing else: the elector runs in a goroutine of its own
// and only reports that it leads and that it has stopped. Run, in one
// goroutine, starts lead when the elector leads (unless a signal came
// first), watches the Lease's age while lead runs (exiting the process once
// it has gone unrenewed for the renew deadline, or once the elector has
// stopped), and stops the elector, which releases the Lease, only after lead
// has returned.
package leader
