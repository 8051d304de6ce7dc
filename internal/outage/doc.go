// Package outage tells when the API server stops answering and when it
// answers again, and holds the operator's requests in between.
//
// client-go's reflectors back off every failed list and watch, up to 30 s
// with a jitter that can double it, and the workqueue backs each failed
// Robot off on its own: after an outage of 20 s the operator would wait
// most of a minute more before it looked again, with the API server long
// back. The Gate puts one probe in their place. While the API server is
// down, reads wait for it, writes fail at once without being sent, and one
// probe of /readyz every ProbeInterval is all the operator asks; the moment
// the probe answers, the reads go out and the Gate says so to whoever
// waits (the controller queues the Robots whose syncs the outage failed).
//
// It decides nothing about Robots and knows nothing of them.
package outage
