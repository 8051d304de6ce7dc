package main

import (
	"context"
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

// runAsLeader runs lead only while this process holds the Lease, and
// returns when lead has returned and the Lease has been released.
//
// On a signal (ctx done) lead finishes its syncs in flight first, and only
// then is the Lease released, so the next leader never writes alongside this
// one. A replica that fails to renew the Lease exits at once, with status 1,
// before the Lease expires for the others (the renew deadline is shorter
// than the lease duration), and Kubernetes restarts it as a follower.
func runAsLeader(ctx context.Context, client kubernetes.Interface, le leaderElection, identity string, lead func(context.Context) error) error {
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

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            le.id,
		LeaseDuration:   le.leaseDuration,
		RenewDeadline:   le.renewDeadline,
		RetryPeriod:     le.retryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				leading.Store(true)
				logger.Info("Became the leader", "lease", klog.KRef(le.namespace, le.id), "identity", identity)
				leadErr = lead(ctx)
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
				os.Exit(1)
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
	if leading.Load() {
		logger.Info("Released the leader election Lease")
	}
	return leadErr
}
