// Package worker runs the Controller's workers: each takes a Robot from the
// queue, syncs it under a deadline, and puts it back as the sync's result
// says (its backoff forgotten, delayed, backed off, or set aside until the
// API server answers again). It keeps which Robots are being synced, for the
// health check, and drains the syncs in flight on shutdown.
//
// It decides nothing about a Robot: the sync is a function it is given.
package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/robot-operator/robot-operator/internal/outage"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Queue is the queue the workers take from.
type Queue = workqueue.TypedRateLimitingInterface[cache.ObjectName]

// SyncFunc syncs the Robot named key. A positive duration asks for another
// look after that long even if nothing changes.
type SyncFunc func(ctx context.Context, key cache.ObjectName) (time.Duration, error)

// Options is what a Pool needs.
type Options struct {
	// Queue holds the Robots to sync.
	Queue Queue
	// Sync syncs one Robot.
	Sync SyncFunc
	// Parked, when set, sets aside the Robots whose syncs failed while the
	// API server was down.
	Parked *outage.Parked[cache.ObjectName]
	// SyncTimeout bounds one sync, all its API requests included.
	SyncTimeout time.Duration
	// ShutdownTimeout bounds how long Run lets in-flight syncs finish once
	// its context is done; zero cancels them at once.
	ShutdownTimeout time.Duration
	// Clock times the syncs.
	Clock clock.PassiveClock
	// Observe, when set, is told of each sync's result ("success" or
	// "error") and how long it took.
	Observe func(result string, took time.Duration)
}

// Pool is the workers of one Controller.
type Pool struct {
	Options
	// inflight maps each Robot being synced to when its sync started.
	inflight sync.Map
}

// New returns a Pool that runs opts.Sync on what opts.Queue holds.
func New(opts Options) *Pool {
	return &Pool{Options: opts}
}

// Run runs workers goroutines that sync Robots until ctx is done. Then it
// takes no new work, lets the syncs in flight finish for up to the shutdown
// timeout (cancelling them after that), and returns once every worker has
// stopped, so that the caller knows no write is still under way.
func (p *Pool) Run(ctx context.Context, workers int) {
	logger := klog.FromContext(ctx)
	// Syncs run under a context of their own, so that a shutdown does not
	// cut a Robot's writes off halfway unless they take too long.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { p.RunWorker(workCtx) })
	}
	logger.Info("Started workers", "count", workers)

	<-ctx.Done()
	logger.Info("Shutting down: finishing the syncs in flight", "timeout", p.ShutdownTimeout)
	p.Queue.ShutDown()
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(p.ShutdownTimeout):
		logger.Info("Shutdown timeout reached: cancelling the syncs in flight")
		cancelWork()
		<-stopped
	}
	logger.Info("Workers stopped")
}

// RunWorker processes work items until the queue shuts down.
func (p *Pool) RunWorker(ctx context.Context) {
	for p.ProcessNextWorkItem(ctx) {
	}
}

// ProcessNextWorkItem syncs one Robot from the queue. It returns false when
// the queue has shut down.
func (p *Pool) ProcessNextWorkItem(ctx context.Context) bool {
	key, shutdown := p.Queue.Get()
	if shutdown {
		return false
	}
	defer p.Queue.Done(key)
	if p.Queue.ShuttingDown() {
		// The queue still hands out what it holds after ShutDown: on the
		// way out, only the syncs already in flight finish.
		return false
	}
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "robot", klog.KRef(key.Namespace, key.Name))
	ctx = klog.NewContext(ctx, logger)

	start := p.Clock.Now()
	untrack := p.Track(key, start)
	// Each sync has a deadline, so that a request that never gets an
	// answer (a dead connection, a stuck API server) costs a retry with
	// backoff, not a worker. The clients have no timeout of their own: an
	// http.Client timeout would cut the informers' watches as well.
	syncCtx, cancel := context.WithTimeoutCause(ctx, p.SyncTimeout, &outcome.SyncTimeoutError{Key: types.NamespacedName(key), Timeout: p.SyncTimeout})
	requeueAfter, err := p.Sync(syncCtx, key)
	var timedOut *outcome.SyncTimeoutError
	if err != nil && errors.As(context.Cause(syncCtx), &timedOut) {
		// Whichever request the deadline cut short, one error says why.
		err = timedOut
	}
	cancel()
	untrack()
	result := "success"
	if err != nil {
		result = "error"
	}
	if p.Observe != nil {
		p.Observe(result, p.Clock.Since(start))
	}

	switch {
	case p.Parked.Failed(key, err):
		// The Robot is not at fault, and backing it off would delay it
		// well after the API server is back: it waits for the API server
		// instead.
		logger.V(2).Info("Syncing Robot failed while the API server was down; retrying when it answers", "err", err)
	case err != nil:
		// Back off, and try again.
		p.Queue.AddRateLimited(key)
		logger.Error(err, "Syncing Robot failed; retrying", "retries", p.Queue.NumRequeues(key))
	default:
		p.Queue.Forget(key)
		if requeueAfter > 0 {
			p.Queue.AddAfter(key, requeueAfter)
		}
	}
	return true
}

// Track counts key as being synced since started, until the returned
// function is called.
func (p *Pool) Track(key cache.ObjectName, started time.Time) (untrack func()) {
	p.inflight.Store(key, started)
	return func() { p.inflight.Delete(key) }
}

// Syncing reports whether the Robot named key is being synced.
func (p *Pool) Syncing(key cache.ObjectName) bool {
	_, syncing := p.inflight.Load(key)
	return syncing
}

// InFlight returns how many syncs are running.
func (p *Pool) InFlight() int {
	n := 0
	p.inflight.Range(func(any, any) bool { n++; return true })
	return n
}

// LongestSync returns the Robot whose sync has been running the longest, and
// for how long; zero when none is running.
func (p *Pool) LongestSync() (cache.ObjectName, time.Duration) {
	var longest cache.ObjectName
	var started time.Time
	p.inflight.Range(func(key, value any) bool {
		if t := value.(time.Time); started.IsZero() || t.Before(started) {
			longest, started = key.(cache.ObjectName), t
		}
		return true
	})
	if started.IsZero() {
		return longest, 0
	}
	return longest, p.Clock.Since(started)
}
