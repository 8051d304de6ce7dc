package leader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
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

// Run runs lead only while this process holds the Lease, and
// returns when lead has returned and the Lease has been released. lead gets
// a check to call before each write: it fails once the Lease has gone
// unrenewed for the renew deadline, which is before any other replica can
// take the Lease over (the lease duration), even when this process was
// frozen (stopped, swapped out, starved) and has not noticed yet.
//
// On a signal (ctx done) lead finishes its syncs in flight first, and only
// then is the Lease released, so the next leader never writes alongside this
// one. A signal that comes before lead has started, even while the Lease is
// being acquired, means lead never starts: Run gives the Lease up if
// it got it and returns nil. A replica that fails to renew the Lease while
// lead runs exits at once, with status 1, before the Lease expires for the
// others (the renew deadline is shorter than the lease duration), and
// Kubernetes restarts it as a follower.
func Run(ctx context.Context, client kubernetes.Interface, le Config, identity string, lead func(ctx context.Context, mayWrite func() error) error) error {
	logger := klog.FromContext(ctx)
	lease := klog.KRef(le.Namespace, le.Id)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Id},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}

	// The elector outlives ctx: it must keep the Lease while lead drains.
	electorCtx, cancelElector := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElector()

	// The elector calls OnStartedLeading from a goroutine of its own, which
	// may run only after a signal, or after Run has returned; and it calls
	// OnStoppedLeading whenever Run returns, led or not. Whether lead runs
	// is decided once, under mu, so that a signal and the callback cannot
	// both believe the other will stop the elector.
	var (
		mu       sync.Mutex
		stopped  bool // lead must not start any more
		leading  bool // lead has started
		finished bool // lead has returned
	)
	leadDone := make(chan struct{})
	var leadErr error // read only after leadDone is closed

	var elector *leaderelection.LeaderElector
	mayWrite := func() error {
		if !elector.IsLeader() || elector.Check(le.RenewDeadline-le.LeaseDuration) != nil {
			return ErrNotLeader
		}
		return nil
	}

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            le.Id,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leCtx context.Context) {
				mu.Lock()
				if stopped || ctx.Err() != nil {
					// The signal came while the Lease was being acquired:
					// there is nothing to finish, so give it up at once.
					stopped = true
					mu.Unlock()
					cancelElector()
					return
				}
				leading = true
				mu.Unlock()
				logger.Info("Became the leader", "lease", lease, "identity", identity)
				watchCtx, stopWatch := context.WithCancel(leCtx)
				watchDone := make(chan struct{})
				go func() {
					defer close(watchDone)
					watchLease(watchCtx, logger, le, mayWrite)
				}()
				leadErr = lead(ctx, mayWrite)
				mu.Lock()
				finished = true
				mu.Unlock()
				// Releasing the Lease makes mayWrite fail: the watch must
				// be over by then, or it would take the release for a loss.
				stopWatch()
				<-watchDone
				close(leadDone)
				cancelElector() // releases the Lease
			},
			OnStoppedLeading: func() {
				mu.Lock()
				lost := leading && !finished
				mu.Unlock()
				if !lost {
					return
				}
				// Lost the Lease while writing: stop every write now.
				logger.Error(nil, "Lost the leader election Lease; exiting so that another replica takes over", "lease", lease)
				klog.Flush()
				le.exitProcess(1)
			},
			OnNewLeader: func(leader string) {
				if leader != identity {
					logger.Info("Following the leader", "leader", leader)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	stopFollowing := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		// A follower has nothing to finish: stop competing at once. A
		// leader stops the elector itself once lead has returned.
		if !leading {
			stopped = true
			cancelElector()
		}
	})
	defer stopFollowing()
	logger.Info("Waiting to become the leader", "lease", lease, "identity", identity)
	elector.Run(electorCtx)

	mu.Lock()
	// The elector renews the Lease no more: a callback still on its way
	// must not start lead.
	stopped = true
	led, released := leading, finished
	mu.Unlock()
	if led {
		// Run returns while lead still runs only after the Lease was lost,
		// which has ended the process; should exit return, Run
		// still must not return while lead writes.
		<-leadDone
		if released {
			// ReleaseOnCancel has cleared the holder (client-go logs it if
			// that failed): a follower can take over at its next try.
			logger.Info("Released the leader election Lease", "lease", lease)
		}
		return leadErr
	}
	if ctx.Err() == nil {
		// Only a failed first renewal ends Run without a signal before
		// lead starts.
		return fmt.Errorf("lost the leader election Lease %s before leading", lease)
	}
	releaseIfHeld(ctx, logger, lock, identity, le.RenewDeadline)
	return nil
}

// releaseIfHeld clears the Lease's holder if it is identity. The elector
// releases a Lease it knows it holds, but when a signal cancels the request
// that takes the Lease, the API server may have applied it all the same, and
// the followers would wait out the lease duration.
func releaseIfHeld(ctx context.Context, logger klog.Logger, lock *resourcelock.LeaseLock, identity string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	lease := klog.KRef(lock.LeaseMeta.Namespace, lock.LeaseMeta.Name)
	record, _, err := lock.Get(ctx)
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		logger.Error(err, "Reading the leader election Lease to release it", "lease", lease)
		return
	}
	if record.HolderIdentity != identity {
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

// watchLease exits the process as soon as the Lease goes unrenewed for the
// renew deadline, without waiting for the elector to give up: a process that
// was frozen past its Lease must stop at once, not after a renew deadline of
// failed retries.
func watchLease(ctx context.Context, logger klog.Logger, le Config, mayWrite func() error) {
	ticker := time.NewTicker(le.RetryPeriod / 4)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if mayWrite() != nil {
				logger.Error(nil, "Lost the leader election Lease: it was not renewed within the renew deadline; exiting so that another replica takes over",
					"lease", klog.KRef(le.Namespace, le.Id), "renewDeadline", le.RenewDeadline)
				klog.Flush()
				le.exitProcess(1)
				return
			}
		}
	}
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
