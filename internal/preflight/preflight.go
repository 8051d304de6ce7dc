package preflight

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/workload"
	"golang.org/x/time/rate"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// The outcomes of a check, the label of its counter.
const (
	// Passed: the dry run and every lookup found nothing wrong.
	Passed = "passed"
	// Rejected: the API server refused the pod, or something it names
	// is missing; the change is not written.
	Rejected = "rejected"
	// Unavailable: the API server did not answer in time, was
	// overloaded or failed (a timeout, 429, 5xx); the change goes through.
	Unavailable = "unavailable"
	// Unsupported: an admission webhook cannot take a dry run; the change
	// goes through.
	Unsupported = "unsupported"
	// Forbidden: the operator may not create pods (nor dry-run them) in
	// the namespace; the change goes through.
	Forbidden = "forbidden"
	// Deferred: the rate limit's burst was spent, and the check waits for
	// its turn, the Robot queued again when its token is due; the change
	// is not written meanwhile. It is counted once, as it is put off, and
	// again with its outcome once made.
	Deferred = "deferred"
)

// Outcomes are the outcomes of a check, in the order the counter lists them.
var Outcomes = []string{Passed, Rejected, Unavailable, Unsupported, Forbidden, Deferred}

// Timeout bounds one check's requests: an admission webhook has 10 s by
// default, and a check that takes longer lets the change through.
const Timeout = 10 * time.Second

// FieldManager names the operator in the dry run's request.
const FieldManager = "robot-operator-preflight"

// Checker checks the changed pod templates of Robots. The nil Checker
// checks nothing.
type Checker struct {
	client  kubernetes.Interface
	limiter *rate.Limiter
	count   func(outcome string)
	// memo holds, per Robot UID, the digest of the last template checked
	// and what the check found.
	memo sync.Map
	// turns holds, per Robot UID, the turn of the template that waits for
	// its token.
	turns sync.Map
	// secrets remembers until when Secrets are not read: the operator
	// was forbidden to read them.
	secrets secretAccess
	// mayWrite, when set, is the write fence, asked before a check: a
	// dry run is a POST, and a process that may not write (its Lease may
	// be another's) does not act on a change.
	mayWrite func() error
}

// verdict is what a check of one template found: nil when it may be
// written; the ConfigMaps it found missing or short of a key, by
// namespace/name, so that their change checks again.
type verdict struct {
	robot      cache.ObjectName
	digest     string
	err        error
	configMaps []string
}

// turn is a token of the limiter reserved for one template of a Robot, due
// at a time: the sync that comes when it is due makes the check, and any
// sync before takes no other.
type turn struct {
	digest      string
	reservation *rate.Reservation
}

// New returns the Checker of allowed's Preflight, sending its requests
// through client, which should have no rate limiter of its own (the
// Checker has its own bucket); count is called with each check's outcome.
// It returns nil when the check is off or there is no client.
func New(client kubernetes.Interface, allowed policy.Preflight, count func(outcome string)) *Checker {
	if !allowed.Enabled || client == nil {
		return nil
	}
	if count == nil {
		count = func(string) {}
	}
	return &Checker{client: client, limiter: rate.NewLimiter(rate.Limit(allowed.QPS), allowed.Burst), count: count}
}

// Fenced makes c ask mayWrite, the write fence, before each check, and
// returns c: while the fence says no, a change is not checked (nor
// remembered as checked), and Check returns the fence's error, as the
// write it guards would.
func (c *Checker) Fenced(mayWrite func() error) *Checker {
	if c != nil {
		c.mayWrite = mayWrite
	}
	return c
}

// Check returns a *outcome.ChangeRejectedError when desired's pod template,
// which is to replace current's, would not run; nil when it may be written.
// It is called only when the Robot changed; a template checked before
// for the Robot is not checked again, and the same answer is returned.
// With the rate limit's burst spent, it returns at once a
// *outcome.CheckDeferredError that says when the template's turn comes:
// nothing is written before, and no worker waits for it.
func (c *Checker) Check(ctx context.Context, robot *robotv1beta1.Robot, desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) error {
	if c == nil || desired.Spec == nil || desired.Spec.Template == nil {
		return nil
	}
	digest, err := Digest(desired)
	if err != nil {
		return err
	}
	if last, ok := c.memo.Load(robot.UID); ok && last.(verdict).digest == digest {
		// Back to a template checked before: a turn for another is not
		// needed any more.
		c.giveBack(robot.UID, digest)
		return last.(verdict).err
	}
	if c.mayWrite != nil {
		if err := c.mayWrite(); err != nil {
			return err
		}
	}
	logger := klog.FromContext(ctx).WithValues("deployment", klog.KObj(current))
	if wait := c.take(robot.UID, digest); wait > 0 {
		logger.V(4).Info("The new pod template waits for its turn to be checked", "wait", wait)
		return &outcome.CheckDeferredError{After: wait}
	}
	result, how := c.check(ctx, robot.Namespace, desired)
	c.count(how)
	switch how {
	case Passed:
		logger.V(4).Info("The new pod template passed its check")
	case Rejected:
		logger.Info("The new pod template would not run: the Deployment keeps the last one", "reason", result.err)
	default:
		// The check could not tell: the change goes through.
		logger.Info("The new pod template could not be checked: writing it all the same", "outcome", how, "err", result.err)
		result.err = nil
	}
	result.digest, result.robot = digest, cache.MetaObjectToName(robot)
	c.memo.Store(robot.UID, result)
	return result.err
}

// check runs the dry run, then looks up what the pods name, and says what
// it found and its outcome.
func (c *Checker) check(ctx context.Context, namespace string, desired *appsv1ac.DeploymentApplyConfiguration) (verdict, string) {
	pod, err := Pod(namespace, desired)
	if err != nil {
		return verdict{err: err}, Unavailable
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	_, err = c.client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: FieldManager})
	switch how := Classify(err); how {
	case Passed:
		return c.lookUp(ctx, namespace, &pod.Spec)
	case Rejected:
		return verdict{err: rejected(Message(err))}, Rejected
	default:
		return verdict{err: err}, how
	}
}

// take takes the token of the Robot uid's template digest, and returns 0
// when it may be checked now; else how long until its turn. A Robot's first
// sync of a template reserves the limiter's next token, so that the Robots
// are checked in the order they asked; its syncs until then keep that
// turn, and a template that replaces it gives it back.
func (c *Checker) take(uid types.UID, digest string) time.Duration {
	now := time.Now()
	if held, ok := c.turns.Load(uid); ok && held.(turn).digest == digest {
		if wait := held.(turn).reservation.DelayFrom(now); wait > 0 {
			return wait
		}
		c.turns.Delete(uid)
		return 0
	}
	c.giveBack(uid, digest)
	// A burst of at least 1 (internal/policy) makes every reservation OK.
	reservation := c.limiter.ReserveN(now, 1)
	wait := reservation.DelayFrom(now)
	if wait > 0 {
		c.turns.Store(uid, turn{digest: digest, reservation: reservation})
		c.count(Deferred)
	}
	return wait
}

// giveBack cancels the turn the Robot uid holds for a template other than
// digest's, if any: its token goes back to the bucket when no later turn
// was reserved after it.
func (c *Checker) giveBack(uid types.UID, digest string) {
	if held, ok := c.turns.Load(uid); ok && held.(turn).digest != digest {
		held.(turn).reservation.CancelAt(time.Now())
		c.turns.Delete(uid)
	}
}

// Digest is the digest of desired's pod template: what the Checker
// remembers a check by.
func Digest(desired *appsv1ac.DeploymentApplyConfiguration) (string, error) {
	data, err := json.Marshal(desired.Spec.Template)
	if err != nil {
		return "", fmt.Errorf("digesting the pod template: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}

// Pod returns one pod of desired's template in namespace, as the
// Deployment's ReplicaSet would make it, for the dry run.
func Pod(namespace string, desired *appsv1ac.DeploymentApplyConfiguration) (*corev1.Pod, error) {
	var template corev1.PodTemplateSpec
	if err := workload.RoundTrip(desired.Spec.Template, &template); err != nil {
		return nil, fmt.Errorf("reading the pod template: %w", err)
	}
	name := ""
	if desired.Name != nil {
		name = *desired.Name
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-preflight-", Namespace: namespace,
			Labels: template.Labels, Annotations: template.Annotations},
		Spec: template.Spec,
	}, nil
}

// ForgetRobot drops what the Checker remembers of the Robot uid, deleted,
// and gives back the turn it waited for.
func (c *Checker) ForgetRobot(uid types.UID) {
	if c != nil {
		c.memo.Delete(uid)
		if held, ok := c.turns.LoadAndDelete(uid); ok {
			held.(turn).reservation.CancelAt(time.Now())
		}
	}
}

// Len is how many Robots the Checker remembers a check of, or holds a turn
// for.
func (c *Checker) Len() int {
	n := 0
	if c != nil {
		count := func(any, any) bool { n++; return true }
		c.memo.Range(count)
		c.turns.Range(count)
	}
	return n
}

// ConfigMapChanged forgets the refusals that a ConfigMap, namespace/name,
// missing or short of a key, caused, and returns the Robots they were of:
// their next sync checks their template again.
func (c *Checker) ConfigMapChanged(namespace, name string) []cache.ObjectName {
	if c == nil {
		return nil
	}
	key := namespace + "/" + name
	var robots []cache.ObjectName
	c.memo.Range(func(uid, value any) bool {
		for _, configMap := range value.(verdict).configMaps {
			if configMap == key {
				c.memo.Delete(uid)
				robots = append(robots, value.(verdict).robot)
				break
			}
		}
		return true
	})
	return robots
}

// rejected returns the refusal of a change, saying message.
func rejected(message string) error { return &outcome.ChangeRejectedError{Message: message} }
