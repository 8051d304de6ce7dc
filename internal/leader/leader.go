package leader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Config configures the Lease that decides which replica writes.
type Config struct {
	Enabled       bool
	Namespace     string
	Id            string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// exit ends the process when the Lease is lost; os.Exit unless a test
	// needs to see the call.
	exit func(code int)
}

func (le Config) exitProcess(code int) {
	if le.exit != nil {
		le.exit(code)
		return
	}
	os.Exit(code)
}

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// DefaultLeaseNamespace is the pod's namespace in a cluster, "default"
// outside of one.
func DefaultLeaseNamespace() string {
	if data, err := os.ReadFile(serviceAccountNamespace); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	return "default"
}

// ErrNotLeader: this process does not hold a fresh leader election Lease,
// so it must not write.
var ErrNotLeader = errors.New("not the leader: the leader election Lease is not held or was not renewed in time")

// Run runs lead only while this process holds the Lease, and returns when
// lead has returned and the Lease has been released. lead gets a check to
// call before each write: it fails once the Lease has gone unrenewed for the
// renew deadline, which is before any other replica can take the Lease over
// (the lease duration), even when this process was frozen (stopped, swapped
// out, starved) and has not noticed yet.
//
// On a signal (ctx done) lead finishes its syncs in flight first, and only
// then is the Lease released, so the next leader never writes alongside this
// one. A signal that comes before lead has started, even while the Lease is
// being acquired, means lead never starts: Run gives the Lease up if it got
// it and returns nil. A replica that fails to renew the Lease while lead runs
// exits at once, with status 1, before the Lease expires for the others (the
// renew deadline is shorter than the lease duration), and Kubernetes restarts
// it as a follower.
//
// The elector runs in a goroutine of its own and only reports: that it
// leads (a closed channel) and that it has stopped (another). Everything
// else, whether lead starts, when the elector is stopped, when the process
// exits, is decided here, in one goroutine, in order.
func Run(ctx context.Context, client kubernetes.Interface, le Config, identity string, lead func(ctx context.Context, mayWrite func() error) error) error {
	e, err := startElection(ctx, client, le, identity)
	if err != nil {
		return err
	}
	defer e.stop()
	select {
	case <-ctx.Done():
	case <-e.leading:
	case <-e.done:
	}
	switch {
	case ctx.Err() != nil:
		// A signal while following or acquiring: there is nothing to
		// finish, so stop competing and give up the Lease if it was got.
		e.stop()
		e.releaseIfHeld(ctx)
		return nil
	case isClosed(e.done):
		// Only a failed first renewal stops the elector without a signal
		// before lead starts.
		return fmt.Errorf("lost the leader election Lease %s before leading", e.lease)
	}
	return e.lead(ctx, lead)
}

// election is one run of the elector.
type election struct {
	le      Config
	logger  klog.Logger
	lease   klog.ObjectRef
	lock    *resourcelock.LeaseLock
	elector *leaderelection.LeaderElector
	// leading is closed once the elector holds the Lease, done once it
	// has stopped (and, if it held the Lease, released it).
	leading, done chan struct{}
	// cancel stops the elector; its context outlives the signal, so that
	// the Lease is kept while lead drains.
	cancel context.CancelFunc
}

// startElection starts competing for the Lease.
func startElection(ctx context.Context, client kubernetes.Interface, le Config, identity string) (*election, error) {
	logger := klog.FromContext(ctx)
	e := &election{
		le:     le,
		logger: logger,
		lease:  klog.KRef(le.Namespace, le.Id),
		lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Id},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
		},
		leading: make(chan struct{}),
		done:    make(chan struct{}),
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            e.lock,
		Name:            le.Id,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			// Called once, from a goroutine of the elector's, maybe after
			// Run has returned: it only reports.
			OnStartedLeading: func(context.Context) { close(e.leading) },
			// Run learns that the elector stopped from e.done.
			OnStoppedLeading: func() {},
			OnNewLeader: func(leader string) {
				if leader != identity {
					logger.Info("Following the leader", "leader", leader)
				}
			},
		},
	})
	if err != nil {
		return nil, err
	}
	e.elector = elector
	electorCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	logger.Info("Waiting to become the leader", "lease", e.lease, "identity", identity)
	go func() {
		defer close(e.done)
		elector.Run(electorCtx)
	}()
	return e, nil
}

// stop stops the elector, which releases the Lease if it holds it, and
// waits until it has.
func (e *election) stop() {
	e.cancel()
	<-e.done
}

// mayWrite is the write fence's check: nil only while this process holds
// the Lease and has renewed it within the renew deadline.
func (e *election) mayWrite() error {
	if !e.elector.IsLeader() || e.elector.Check(e.le.RenewDeadline-e.le.LeaseDuration) != nil {
		return ErrNotLeader
	}
	return nil
}

// lead runs lead while the Lease is held, and releases the Lease only once
// lead has returned. The Lease is watched until then: a loss ends the
// process.
func (e *election) lead(ctx context.Context, lead func(ctx context.Context, mayWrite func() error) error) error {
	e.logger.Info("Became the leader", "lease", e.lease, "identity", e.lock.Identity())
	leadErr := make(chan error, 1)
	go func() { leadErr <- lead(ctx, e.mayWrite) }()
	// The elector only notices a loss after a renew deadline of failed
	// retries; a process that was frozen past its Lease must stop at once.
	watch := time.NewTicker(e.le.RetryPeriod / 4)
	defer watch.Stop()
	for {
		select {
		case err := <-leadErr:
			// No sync is in flight any more: the next leader may start.
			e.stop()
			e.logger.Info("Released the leader election Lease", "lease", e.lease)
			return err
		case <-e.done:
			e.exit("Lost the leader election Lease; exiting so that another replica takes over")
			return <-leadErr
		case <-watch.C:
			if e.mayWrite() != nil {
				e.exit("Lost the leader election Lease: it was not renewed within the renew deadline; exiting so that another replica takes over",
					"renewDeadline", e.le.RenewDeadline)
				// Only a test's exit returns: Run still must not return
				// while lead writes.
				return <-leadErr
			}
		}
	}
}

// exit ends the process with status 1 after losing the Lease.
func (e *election) exit(msg string, keysAndValues ...any) {
	e.logger.Error(nil, msg, append([]any{"lease", e.lease}, keysAndValues...)...)
	klog.Flush()
	e.le.exitProcess(1)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// releaseIfHeld clears the Lease's holder if it is this process. The elector
// releases a Lease it knows it holds, but when a signal cancels the request
// that takes the Lease, the API server may have applied it all the same, and
// the followers would wait out the lease duration.
func (e *election) releaseIfHeld(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.le.RenewDeadline)
	defer cancel()
	logger, lease, lock := e.logger, e.lease, e.lock
	record, _, err := lock.Get(ctx)
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		logger.Error(err, "Reading the leader election Lease to release it", "lease", lease)
		return
	}
	if record.HolderIdentity != lock.Identity() {
		return
	}
	// What the elector writes when it releases: no holder, and a lease
	// that expires at once.
	now := metav1.Now()
	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions:    record.LeaderTransitions,
		LeaseDurationSeconds: 1,
		AcquireTime:          now,
		RenewTime:            now,
	}); err != nil {
		logger.Error(err, "Releasing the leader election Lease", "lease", lease)
		return
	}
	logger.Info("Released the leader election Lease", "lease", lease)
}

// Fence is the write fence: every write asks Check first. It lets every
// write through until Arm gives it the check of a leader, which fails once
// this process may no longer be the leader.
type Fence struct {
	check atomic.Pointer[func() error]
}

// Check returns nil when this process may write, ErrNotLeader otherwise.
func (f *Fence) Check() error {
	if check := f.check.Load(); check != nil {
		return (*check)()
	}
	return nil
}

// Arm makes check decide from now on.
func (f *Fence) Arm(check func() error) {
	f.check.Store(&check)
}
