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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
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
	// RateLimited: no token came within the sync's deadline; the change
	// goes through.
	RateLimited = "rate_limited"
)

// Outcomes are the outcomes of a check, in the order the counter lists them.
var Outcomes = []string{Passed, Rejected, Unavailable, Unsupported, Forbidden, RateLimited}

// Timeout bounds one check's requests: an admission webhook has 10 s by
// default, and a check that takes longer lets the change through.
const Timeout = 10 * time.Second

// FieldManager names the operator in the dry run's request.
const FieldManager = "robot-operator-preflight"

// Checker checks the changed pod templates of Robots. The nil Checker
// checks nothing.
type Checker struct {
	client  kubernetes.Interface
	limiter flowcontrol.RateLimiter
	count   func(outcome string)
	// memo holds, per Robot UID, the digest of the last template checked
	// and what the check found.
	memo sync.Map
	// secrets remembers until when Secrets are not read: the operator
	// was forbidden to read them.
	secrets secretAccess
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
	return &Checker{client: client, limiter: flowcontrol.NewTokenBucketRateLimiter(float32(allowed.QPS), allowed.Burst), count: count}
}

// Check returns a *outcome.ChangeRejectedError when desired's pod template,
// which is to replace current's, would not run; nil when it may be written.
// It is called only when the Robot changed; a template checked before
// for the Robot is not checked again, and the same answer is returned.
func (c *Checker) Check(ctx context.Context, robot *robotv1beta1.Robot, desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) error {
	if c == nil || desired.Spec == nil || desired.Spec.Template == nil {
		return nil
	}
	digest, err := Digest(desired)
	if err != nil {
		return err
	}
	if last, ok := c.memo.Load(robot.UID); ok && last.(verdict).digest == digest {
		return last.(verdict).err
	}
	logger := klog.FromContext(ctx).WithValues("deployment", klog.KObj(current))
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
	// The wait is bounded by the sync's deadline, the requests by Timeout.
	if err := c.limiter.Wait(ctx); err != nil {
		return verdict{err: err}, RateLimited
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

// ForgetRobot drops what the Checker remembers of the Robot uid, deleted.
func (c *Checker) ForgetRobot(uid types.UID) {
	if c != nil {
		c.memo.Delete(uid)
	}
}

// Len is how many Robots the Checker remembers a check of.
func (c *Checker) Len() int {
	n := 0
	if c != nil {
		c.memo.Range(func(any, any) bool { n++; return true })
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
