package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// leaderElection configures the Lease that decides which replica writes.
type leaderElection struct {
	enabled       bool
	namespace     string
	id            string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
	// exit ends the process when the Lease is lost; os.Exit unless a test
	// needs to see the call.
	exit func(code int)
}

func (le leaderElection) exitProcess(code int) {
	if le.exit != nil {
		le.exit(code)
		return
	}
	os.Exit(code)
}

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// defaultLeaseNamespace is the pod's namespace in a cluster, "default"
// outside of one.
func defaultLeaseNamespace() string {
	if data, err := os.ReadFile(serviceAccountNamespace); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	return "default"
}

// errNotLeader: this process does not hold a fresh leader election Lease,
// so it must not write.
var errNotLeader = errors.New("not the leader: the leader election Lease is not held or was not renewed in time")

// runAsLeader runs lead only while this process holds the Lease, and
// returns when lead has returned and the Lease has been released. lead gets
// a check to call before each write: it fails once the Lease has gone
// unrenewed for the renew deadline, which is before any other replica can
// take the Lease over (the lease duration), even when this process was
// frozen (stopped, swapped out, starved) and has not noticed yet.
//
// On a signal (ctx done) lead finishes its syncs in flight first, and only
// then is the Lease released, so the next leader never writes alongside this
// one. A replica that fails to renew the Lease exits at once, with status 1,
// before the Lease expires for the others (the renew deadline is shorter
// than the lease duration), and Kubernetes restarts it as a follower.
func runAsLeader(ctx context.Context, client kubernetes.Interface, le leaderElection, identity string, lead func(ctx context.Context, mayWrite func() error) error) error {
	logger := klog.FromContext(ctx)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.namespace, Name: le.id},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}

	// The elector outlives ctx: it must keep the Lease while lead drains.
	electorCtx, cancelElector := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElector()
	var leading, finished atomic.Bool
	var leadErr error
	var elector *leaderelection.LeaderElector
	mayWrite := func() error {
		if !elector.IsLeader() || elector.Check(le.renewDeadline-le.leaseDuration) != nil {
			return errNotLeader
		}
		return nil
	}

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            le.id,
		LeaseDuration:   le.leaseDuration,
		RenewDeadline:   le.renewDeadline,
		RetryPeriod:     le.retryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leCtx context.Context) {
				leading.Store(true)
				logger.Info("Became the leader", "lease", klog.KRef(le.namespace, le.id), "identity", identity)
				go watchLease(leCtx, logger, le, mayWrite, finished.Load)
				leadErr = lead(ctx, mayWrite)
				finished.Store(true)
				cancelElector() // releases the Lease
			},
			OnStoppedLeading: func() {
				if !leading.Load() || finished.Load() {
					return
				}
				// Lost the Lease while writing: stop every write now.
				logger.Error(nil, "Lost the leader election Lease; exiting so that another replica takes over", "lease", klog.KRef(le.namespace, le.id))
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
	go func() {
		// A follower has nothing to finish: stop competing at once.
		<-ctx.Done()
		if !leading.Load() {
			cancelElector()
		}
	}()
	logger.Info("Waiting to become the leader", "lease", klog.KRef(le.namespace, le.id), "identity", identity)
	elector.Run(electorCtx)
	if finished.Load() {
		// ReleaseOnCancel has cleared the holder (client-go logs it if
		// that failed): a follower can take over at its next try.
		logger.Info("Released the leader election Lease", "lease", klog.KRef(le.namespace, le.id))
	}
	return leadErr
}

// watchLease exits the process as soon as the Lease goes unrenewed for the
// renew deadline, without waiting for the elector to give up: a process that
// was frozen past its Lease must stop at once, not after a renew deadline of
// failed retries.
func watchLease(ctx context.Context, logger klog.Logger, le leaderElection, mayWrite func() error, finished func() bool) {
	ticker := time.NewTicker(le.retryPeriod / 4)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if mayWrite() != nil && !finished() {
				logger.Error(nil, "Lost the leader election Lease: it was not renewed within the renew deadline; exiting so that another replica takes over",
					"lease", klog.KRef(le.namespace, le.id), "renewDeadline", le.renewDeadline)
				klog.Flush()
				le.exitProcess(1)
			}
		}
	}
}
