package leader

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

const (
	testLeaseNamespace = "default"
	testLeaseName      = "robot-operator"
	testIdentity       = "replica-a"
)

var leasesResource = coordinationv1.SchemeGroupVersion.WithResource("leases")

// exitRecorder stands in for os.Exit: it records the codes instead of
// ending the test binary.
type exitRecorder struct {
	mu     sync.Mutex
	codes  []int
	called chan struct{}
}

func newExitRecorder() *exitRecorder { return &exitRecorder{called: make(chan struct{})} }

func (r *exitRecorder) exit(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.codes = append(r.codes, code)
	if len(r.codes) == 1 {
		close(r.called)
	}
}

func (r *exitRecorder) calls() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.codes)
}

// testElection has durations that no test waits for: the Lease is acquired
// at the first try, and renewals never come near the deadline.
func testElection(exit *exitRecorder) Config {
	return Config{
		Enabled:       true,
		Namespace:     testLeaseNamespace,
		Id:            testLeaseName,
		LeaseDuration: 10 * time.Second,
		RenewDeadline: 5 * time.Second,
		RetryPeriod:   50 * time.Millisecond,
		exit:          exit.exit,
	}
}

// leadProbe is a lead function that records whether it runs.
type leadProbe struct {
	starts, returns atomic.Int32
	started         chan struct{}
	body            func(ctx context.Context, mayWrite func() error) error
}

func newLeadProbe(body func(ctx context.Context, mayWrite func() error) error) *leadProbe {
	return &leadProbe{started: make(chan struct{}), body: body}
}

func (p *leadProbe) lead(ctx context.Context, mayWrite func() error) error {
	if p.starts.Add(1) == 1 {
		close(p.started)
	}
	defer p.returns.Add(1)
	return p.body(ctx, mayWrite)
}

// drain is what the controller does on a signal: it waits for ctx, then
// takes a while to finish its syncs in flight.
func drain(ctx context.Context, _ func() error) error {
	<-ctx.Done()
	time.Sleep(20 * time.Millisecond)
	return nil
}

// startRunAsLeader runs Run in the background; the channel gets its
// result.
func startRunAsLeader(ctx context.Context, client *k8sfake.Clientset, le Config, lead *leadProbe) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- Run(ctx, client, le, testIdentity, lead.lead) }()
	return errc
}

func waitForRunAsLeader(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("runAsLeader did not return")
		return nil
	}
}

// leaseHolder is the identity that holds the Lease, "" when none does.
func leaseHolder(t *testing.T, client *k8sfake.Clientset) string {
	t.Helper()
	lease, err := client.CoordinationV1().Leases(testLeaseNamespace).Get(context.Background(), testLeaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatalf("reading the Lease: %v", err)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// leaseWrites counts the requests that created or changed the Lease.
func leaseWrites(client *k8sfake.Clientset) int {
	n := 0
	for _, action := range client.Actions() {
		if action.GetResource() == leasesResource && (action.GetVerb() == "create" || action.GetVerb() == "update" || action.GetVerb() == "patch") {
			n++
		}
	}
	return n
}

// checkCleanStop fails the test unless Run returned nil without
// exiting, left no lead running, and does not start one later.
func checkCleanStop(t *testing.T, err error, exit *exitRecorder, lead *leadProbe) {
	t.Helper()
	if err != nil {
		t.Errorf("runAsLeader returned %v, want nil on a signal", err)
	}
	starts, returns := lead.starts.Load(), lead.returns.Load()
	if starts != returns {
		t.Errorf("runAsLeader returned while lead was still running (%d started, %d returned)", starts, returns)
	}
	// A callback the elector started late must not begin leading after
	// Run has returned.
	time.Sleep(50 * time.Millisecond)
	if later := lead.starts.Load(); later != starts {
		t.Errorf("lead started after runAsLeader had returned")
	}
	if codes := exit.calls(); len(codes) > 0 {
		t.Errorf("exit called with %v on a signal, want no call (exit status 0)", codes)
	}
}

// TestLeaderSignalWhileFollowing: a follower stopped while another replica
// holds the Lease returns nil at once, never leads and never writes the
// Lease.
func TestLeaderSignalWhileFollowing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	now := metav1.NewMicroTime(time.Now())
	client := k8sfake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: testLeaseNamespace, Name: testLeaseName},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("replica-b"),
			LeaseDurationSeconds: ptr.To[int32](60),
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	})
	looked := make(chan struct{}, 1)
	client.PrependReactor("get", "leases", func(core.Action) (bool, runtime.Object, error) {
		select {
		case looked <- struct{}{}:
		default:
		}
		return false, nil, nil
	})
	exit := newExitRecorder()
	lead := newLeadProbe(drain)

	errc := startRunAsLeader(ctx, client, testElection(exit), lead)
	<-looked
	cancel()
	err := waitForRunAsLeader(t, errc)

	checkCleanStop(t, err, exit, lead)
	if n := lead.starts.Load(); n != 0 {
		t.Errorf("lead ran %d times while another replica held the Lease", n)
	}
	if holder := leaseHolder(t, client); holder != "replica-b" {
		t.Errorf("Lease holder %q after the follower stopped, want replica-b", holder)
	}
	if n := leaseWrites(client); n != 0 {
		t.Errorf("the follower wrote the Lease %d times", n)
	}
}

// TestLeaderSignalWhileAcquiring: a signal that arrives while the Lease is
// being taken, before the elector calls back, stops the process cleanly:
// Run returns nil without exiting, lead never starts (the process
// was told to stop before it led), and the Lease is released.
func TestLeaderSignalWhileAcquiring(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := k8sfake.NewClientset()
	client.PrependReactor("create", "leases", func(core.Action) (bool, runtime.Object, error) {
		cancel() // SIGTERM
		return false, nil, nil
	})
	exit := newExitRecorder()
	lead := newLeadProbe(drain)

	err := waitForRunAsLeader(t, startRunAsLeader(ctx, client, testElection(exit), lead))

	checkCleanStop(t, err, exit, lead)
	if n := lead.starts.Load(); n != 0 {
		t.Errorf("lead ran %d times after the signal", n)
	}
	if holder := leaseHolder(t, client); holder != "" {
		t.Errorf("Lease still held by %q after a clean stop, want it released", holder)
	}
}

// TestLeaderSignalCancelsTheAcquiringWrite: when the signal cancels the
// request that takes the Lease after the API server has applied it, the
// elector believes it never acquired the Lease; the process must still
// release it, not leave followers waiting for the lease duration.
func TestLeaderSignalCancelsTheAcquiringWrite(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := k8sfake.NewClientset()
	client.PrependReactor("create", "leases", func(action core.Action) (bool, runtime.Object, error) {
		cancel() // SIGTERM
		create := action.(core.CreateAction)
		if err := client.Tracker().Create(leasesResource, create.GetObject(), create.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, nil, context.Canceled
	})
	exit := newExitRecorder()
	lead := newLeadProbe(drain)

	err := waitForRunAsLeader(t, startRunAsLeader(ctx, client, testElection(exit), lead))

	checkCleanStop(t, err, exit, lead)
	if n := lead.starts.Load(); n != 0 {
		t.Errorf("lead ran %d times after the signal", n)
	}
	if holder := leaseHolder(t, client); holder != "" {
		t.Errorf("Lease still held by %q after a clean stop, want it released", holder)
	}
}

// TestLeaderSignalWhileLeading: on a signal the leader keeps the Lease, and
// may write, while lead drains, and releases it only once lead has
// returned; Run then returns nil.
func TestLeaderSignalWhileLeading(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := k8sfake.NewClientset()
	exit := newExitRecorder()
	lead := newLeadProbe(func(ctx context.Context, mayWrite func() error) error {
		<-ctx.Done()
		for range 3 {
			if err := mayWrite(); err != nil {
				t.Errorf("mayWrite while draining: %v", err)
			}
			if holder := leaseHolder(t, client); holder != testIdentity {
				t.Errorf("Lease held by %q while the leader drains, want %s", holder, testIdentity)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	})

	errc := startRunAsLeader(ctx, client, testElection(exit), lead)
	<-lead.started
	cancel()
	err := waitForRunAsLeader(t, errc)

	checkCleanStop(t, err, exit, lead)
	if holder := leaseHolder(t, client); holder != "" {
		t.Errorf("Lease still held by %q after a clean stop, want it released", holder)
	}
}

// TestLeaderReturnsLeadError: when lead fails on its own, Run
// releases the Lease and returns lead's error, without exiting.
func TestLeaderReturnsLeadError(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	client := k8sfake.NewClientset()
	exit := newExitRecorder()
	errLead := errors.New("lead failed")
	lead := newLeadProbe(func(context.Context, func() error) error { return errLead })

	err := waitForRunAsLeader(t, startRunAsLeader(ctx, client, testElection(exit), lead))

	if !errors.Is(err, errLead) {
		t.Errorf("runAsLeader returned %v, want lead's error %v", err, errLead)
	}
	if starts, returns := lead.starts.Load(), lead.returns.Load(); starts != 1 || returns != 1 {
		t.Errorf("lead started %d times and returned %d times, want once each", starts, returns)
	}
	if codes := exit.calls(); len(codes) > 0 {
		t.Errorf("exit called with %v, want no call", codes)
	}
	if holder := leaseHolder(t, client); holder != "" {
		t.Errorf("Lease still held by %q after lead returned, want it released", holder)
	}
}

// TestLeaderLostLeaseExits: a leader whose renewals fail exits with status
// 1 while lead is still running, and from then on mayWrite refuses writes.
func TestLeaderLostLeaseExits(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := k8sfake.NewClientset()
	var failRenewals atomic.Bool
	client.PrependReactor("update", "leases", func(core.Action) (bool, runtime.Object, error) {
		if failRenewals.Load() {
			return true, nil, errors.New("the API server is unreachable")
		}
		return false, nil, nil
	})
	exit := newExitRecorder()
	le := testElection(exit)
	le.LeaseDuration, le.RenewDeadline, le.RetryPeriod = time.Second, 300*time.Millisecond, 50*time.Millisecond
	var exitedWhileLeading, refusedWrites bool
	leadDone := make(chan struct{})
	lead := newLeadProbe(func(ctx context.Context, mayWrite func() error) error {
		defer close(leadDone)
		failRenewals.Store(true)
		select {
		case <-exit.called:
			exitedWhileLeading = true
		case <-time.After(10 * time.Second):
			return nil
		}
		// The elector may give up a little before mayWrite does: both
		// count from their own last look at the Lease.
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if mayWrite() != nil {
				refusedWrites = true
				break
			}
		}
		return nil
	})

	_ = waitForRunAsLeader(t, startRunAsLeader(ctx, client, le, lead)) // moot: the process has exited
	select {
	case <-leadDone:
	case <-time.After(30 * time.Second):
		t.Fatal("lead did not return")
	}

	if !exitedWhileLeading {
		t.Error("no exit while leading after the Lease went unrenewed past the renew deadline")
	}
	if codes := exit.calls(); len(codes) == 0 || slices.ContainsFunc(codes, func(code int) bool { return code != 1 }) {
		t.Errorf("exit calls %v, want status 1", codes)
	}
	if !refusedWrites {
		t.Error("mayWrite still allows writes 2s after the Lease was lost")
	}
}
