package preflight

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// fixture is a Checker over a fake API server, whose dry-run creates of
// pods answer with refuse's error, and the outcomes it counted.
type fixture struct {
	kube     *k8sfake.Clientset
	checker  *Checker
	outcomes []string
	refuse   error
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	f := &fixture{kube: k8sfake.NewClientset(objects...)}
	f.kube.PrependReactor("create", "pods", func(action core.Action) (bool, runtime.Object, error) {
		create := action.(core.CreateActionImpl)
		if len(create.CreateOptions.DryRun) != 1 || create.CreateOptions.DryRun[0] != metav1.DryRunAll {
			t.Errorf("a pod was created without a dry run: %+v", create.CreateOptions)
		}
		return true, create.Object, f.refuse
	})
	f.checker = New(f.kube, policy.Preflight{Enabled: true, QPS: 1000, Burst: 100}, func(outcome string) { f.outcomes = append(f.outcomes, outcome) })
	return f
}

// check checks robot's template as a change of its Deployment.
func (f *fixture) check(t *testing.T, robot *robotv1beta1.Robot) error {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	desired, err := workload.NewDeployment(robot)
	if err != nil {
		t.Fatal(err)
	}
	return f.checker.Check(ctx, robot, desired, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: *desired.Name, Namespace: robot.Namespace}})
}

// requests returns the requests the API server got since the last call,
// as "verb resource".
func (f *fixture) requests() []string {
	var requests []string
	for _, action := range f.kube.Actions() {
		requests = append(requests, action.GetVerb()+" "+action.GetResource().Resource)
	}
	f.kube.ClearActions()
	return requests
}

func rejectedWith(t *testing.T, err error, message string) {
	t.Helper()
	var rejected *outcome.ChangeRejectedError
	if !errors.As(err, &rejected) || !strings.Contains(rejected.Message, message) {
		t.Fatalf("check: %v; want a rejection saying %q", err, message)
	}
	if f := outcome.Classify(err); f.Reason != robotv1beta1.ReasonChangeRejected || f.Retry != outcome.RetryOnChange {
		t.Errorf("the rejection is classified %+v, want ChangeRejected, not retried", f)
	}
}

// TestRefusalIsRememberedPerTemplate: a template the API server refuses is
// refused with the API server's own message, once: the same template is
// not sent again, and a new one is.
func TestRefusalIsRememberedPerTemplate(t *testing.T) {
	f := newFixture(t)
	podSecurity := `pods "web-preflight-x" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true`
	f.refuse = apierrors.NewForbidden(podsResource, "web-preflight-x", errors.New(`violates PodSecurity "restricted:latest": runAsNonRoot != true`))
	robot := robottest.NewRobot("web", 2)

	rejectedWith(t, f.check(t, robot), podSecurity)
	if got := f.requests(); len(got) != 1 || got[0] != "create pods" {
		t.Fatalf("requests %q, want one dry-run create of a pod", got)
	}
	for range 3 {
		rejectedWith(t, f.check(t, robot), podSecurity)
	}
	if got := f.requests(); len(got) != 0 {
		t.Errorf("the same template was checked again: %q", got)
	}
	if f.checker.Len() != 1 {
		t.Errorf("the checker remembers %d Robots, want 1", f.checker.Len())
	}

	// A change of the Robot's template is checked: the fix goes through.
	f.refuse = nil
	robot.Spec.SecurityProfile = robotv1beta1.SecurityProfileRestricted
	if err := f.check(t, robot); err != nil {
		t.Fatal(err)
	}
	if got := f.requests(); len(got) != 1 {
		t.Errorf("requests %q, want one dry run of the new template", got)
	}
	if want := []string{Rejected, Passed}; strings.Join(f.outcomes, ",") != strings.Join(want, ",") {
		t.Errorf("outcomes %q, want %q", f.outcomes, want)
	}
	f.checker.ForgetRobot(robot.UID)
	if f.checker.Len() != 0 {
		t.Errorf("a deleted Robot is still remembered")
	}
}

// TestNotThePodsFaultLetsTheChangeThrough: a check that fails for a reason
// that is not the pod's lets the change through, counted by why, and is
// not made again for the template.
func TestNotThePodsFaultLetsTheChangeThrough(t *testing.T) {
	for name, tt := range map[string]struct {
		err     error
		outcome string
	}{
		"timeout":         {apierrors.NewTimeoutError("request did not complete within requested timeout", 0), Unavailable},
		"deadline":        {context.DeadlineExceeded, Unavailable},
		"too many":        {apierrors.NewTooManyRequests("slow down", 1), Unavailable},
		"internal":        {apierrors.NewInternalError(errors.New("etcdserver: leader changed")), Unavailable},
		"webhook failed":  {apierrors.NewInternalError(errors.New(`failed calling webhook "policy.example.com": context deadline exceeded`)), Unavailable},
		"no dry run":      {apierrors.NewBadRequest(`admission webhook "inject.example.com" does not support dry run`), Unsupported},
		"operator denied": {apierrors.NewForbidden(podsResource, "", errors.New(`User "system:serviceaccount:robot-operator:robot-operator" cannot create resource "pods" in API group "" in the namespace "default"`)), Forbidden},
		"network":         {errors.New("connection refused"), Unavailable},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.refuse = tt.err
			robot := robottest.NewRobot("web", 1)
			if err := f.check(t, robot); err != nil {
				t.Fatalf("check: %v; want the change let through", err)
			}
			if err := f.check(t, robot); err != nil {
				t.Fatal(err)
			}
			if got := f.requests(); len(got) != 1 {
				t.Errorf("requests %q, want one dry run, not a retry", got)
			}
			if len(f.outcomes) != 1 || f.outcomes[0] != tt.outcome {
				t.Errorf("outcomes %q, want [%s]", f.outcomes, tt.outcome)
			}
		})
	}
}

// TestAdmissionRefusalsReject: what admission says about the pod itself
// rejects the change.
func TestAdmissionRefusalsReject(t *testing.T) {
	for name, err := range map[string]error{
		"quota":      apierrors.NewForbidden(podsResource, "web-x", errors.New("exceeded quota: small, requested: requests.cpu=4, used: requests.cpu=0, limited: requests.cpu=1")),
		"limitrange": apierrors.NewForbidden(podsResource, "web-x", errors.New("maximum cpu usage per Container is 1, but limit is 4")),
		"invalid":    apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web-x", nil),
		"webhook":    apierrors.NewBadRequest(`admission webhook "policy.example.com" denied the request: images must come from registry.example.com`),
	} {
		if got := Classify(err); got != Rejected {
			t.Errorf("%s: %s, want %s", name, got, Rejected)
		}
	}
	if got := Classify(nil); got != Passed {
		t.Errorf("no error: %s", got)
	}
}

// TestMissingConfigMapKeyRejects: a key of a ConfigMap that the pods read
// and the ConfigMap lacks rejects the change, naming the key and who reads
// it; the ConfigMap's change checks again, and then the change goes.
func TestMissingConfigMapKeyRejects(t *testing.T) {
	configMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"}, Data: map[string]string{"other": "x"}}
	f := newFixture(t, configMap)
	robot := robottest.NewRobot("web", 1)
	robot.Spec.Env = []corev1.EnvVar{{Name: "LOG_LEVEL", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "level"}}}}

	rejectedWith(t, f.check(t, robot), `ConfigMap "settings" has no key "level", which env LOG_LEVEL of container`)
	if got := f.requests(); strings.Join(got, ",") != "create pods,get configmaps" {
		t.Errorf("requests %q, want the dry run and one GET", got)
	}
	rejectedWith(t, f.check(t, robot), `no key "level"`)
	if got := f.requests(); len(got) != 0 {
		t.Errorf("the same template was checked again: %q", got)
	}

	if queued := f.checker.ConfigMapChanged("default", "other"); len(queued) != 0 {
		t.Errorf("another ConfigMap's change queued %v", queued)
	}
	configMap.Data["level"] = "debug"
	if _, err := f.kube.CoreV1().ConfigMaps("default").Update(context.Background(), configMap, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.requests()
	queued := f.checker.ConfigMapChanged("default", "settings")
	if len(queued) != 1 || queued[0].Name != robot.Name {
		t.Fatalf("the ConfigMap's change queued %v, want the Robot", queued)
	}
	if err := f.check(t, robot); err != nil {
		t.Fatal(err)
	}
}

// TestMissingReferences: each kind of reference the pods need, missing,
// rejects the change; an optional one does not.
func TestMissingReferences(t *testing.T) {
	for name, tt := range map[string]struct {
		change func(*robotv1beta1.Robot)
		says   string
	}{
		"configmap volume": {func(r *robotv1beta1.Robot) {
			r.Spec.Volumes = []robotv1beta1.RobotVolume{{Name: "conf", ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}}}}
		}, `ConfigMap "gone", named by volume conf, is not found`},
		"envFrom": {func(r *robotv1beta1.Robot) {
			r.Spec.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}}}}
		}, `ConfigMap "gone", named by envFrom of container`},
		"service account": {func(r *robotv1beta1.Robot) { r.Spec.ServiceAccountName = "runner" }, `ServiceAccount "runner", named by serviceAccountName, is not found`},
		"priority class":  {func(r *robotv1beta1.Robot) { r.Spec.Placement.PriorityClassName = "urgent" }, `PriorityClass "urgent", named by priorityClassName, is not found`},
		"pull secret": {func(r *robotv1beta1.Robot) {
			r.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
		}, `Secret "registry", named by imagePullSecrets, is not found`},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			robot := robottest.NewRobot("web", 1)
			tt.change(robot)
			rejectedWith(t, f.check(t, robot), tt.says)
		})
	}
	f := newFixture(t)
	robot := robottest.NewRobot("web", 1)
	robot.Spec.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Optional: new(true)}}}
	if err := f.check(t, robot); err != nil {
		t.Errorf("an optional ConfigMap missing: %v", err)
	}
}

// TestSecretsSkippedWhenForbidden: without the RBAC to read Secrets, the
// check skips them, and asks again only after SecretsRetry.
func TestSecretsSkippedWhenForbidden(t *testing.T) {
	f := newFixture(t)
	f.kube.PrependReactor("get", "secrets", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "registry", errors.New("cannot get resource"))
	})
	robot := robottest.NewRobot("web", 1)
	robot.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
	if err := f.check(t, robot); err != nil {
		t.Fatalf("a Secret the operator may not read: %v", err)
	}
	robot.Spec.Image = "web:2"
	if err := f.check(t, robot); err != nil {
		t.Fatal(err)
	}
	if got := f.requests(); strings.Join(got, ",") != "create pods,get secrets,create pods" {
		t.Errorf("requests %q, want the Secret asked for once", got)
	}
}

// TestOffChecksNothing: -preflight=false, or no client, makes no Checker,
// and the nil Checker lets every change through.
func TestOffChecksNothing(t *testing.T) {
	if c := New(k8sfake.NewClientset(), policy.Preflight{}, nil); c != nil {
		t.Fatal("a Checker with the check off")
	}
	var c *Checker
	robot := robottest.NewRobot("web", 1)
	desired, _ := workload.NewDeployment(robot)
	if err := c.Check(context.Background(), robot, desired, &appsv1.Deployment{}); err != nil || c.Len() != 0 {
		t.Errorf("the nil Checker: %v", err)
	}
}

// TestPodIsTheTemplates: the dry-run pod is the template's, in the Robot's
// namespace.
func TestPodIsTheTemplates(t *testing.T) {
	robot := robottest.NewRobot("web", 1)
	robot.Spec.SecurityProfile = robotv1beta1.SecurityProfileRestricted
	desired, err := workload.NewDeployment(robot)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := Pod(robot.Namespace, desired)
	if err != nil {
		t.Fatal(err)
	}
	var template corev1.PodTemplateSpec
	if err := workload.RoundTrip(desired.Spec.Template, &template); err != nil {
		t.Fatal(err)
	}
	if pod.Namespace != robot.Namespace || !strings.HasPrefix(pod.GenerateName, "web-") || len(pod.Labels) == 0 || pod.Labels["app.kubernetes.io/instance"] != template.Labels["app.kubernetes.io/instance"] {
		t.Errorf("pod %+v", pod.ObjectMeta)
	}
	if sc := pod.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("the restricted template's security context is not the pod's: %+v", sc)
	}
}

// requeue is a check put off to its turn of the rate limit: it asks for
// the Robot to be synced again after RequeueAfter.
type requeue interface{ RequeueAfter() time.Duration }

// deferred checks robot's template with the burst spent: the check returns
// at once, sends nothing and asks for the Robot again when its token is
// due, without a failure to back off from.
func (f *fixture) deferred(t *testing.T, robot *robotv1beta1.Robot) time.Duration {
	t.Helper()
	start := time.Now()
	err := f.check(t, robot)
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("the check of %s waited %v for its token", robot.Name, took)
	}
	var turn requeue
	if !errors.As(err, &turn) || turn.RequeueAfter() <= 0 {
		t.Fatalf("check of %s: %v; want it put off to its turn", robot.Name, err)
	}
	if f := outcome.Classify(err); f.Retry == outcome.RetryWithBackoff || f.Retry == outcome.RetryOnChange {
		t.Errorf("a check put off is classified %+v: want a requeue at its turn, neither backed off nor dropped", f)
	}
	if got := f.requests(); len(got) != 0 {
		t.Errorf("a check put off sent %q", got)
	}
	return turn.RequeueAfter()
}

// TestSpentBurstWaitsItsTurnWithoutBlocking: with the burst spent, a check
// does not hold its worker: it asks for the Robot to be synced when its
// token is due, and keeps its turn: the Robots that asked first are
// checked first, a second sync before the turn takes no second token, and
// a Robot changed again or forgotten gives its turn back.
func TestSpentBurstWaitsItsTurnWithoutBlocking(t *testing.T) {
	const every = 500 * time.Millisecond // a token each, at 2 a second
	f := newFixture(t)
	f.checker = New(f.kube, policy.Preflight{Enabled: true, QPS: 2, Burst: 1}, func(outcome string) { f.outcomes = append(f.outcomes, outcome) })
	robots := map[string]*robotv1beta1.Robot{}
	for _, name := range []string{"first", "second", "third", "fourth"} {
		robots[name] = robottest.NewRobot(name, 1)
		robots[name].UID = types.UID(name + "-uid")
	}

	if err := f.check(t, robots["first"]); err != nil {
		t.Fatal(err)
	}
	f.requests()
	second := f.deferred(t, robots["second"])
	third := f.deferred(t, robots["third"])
	if second > every+50*time.Millisecond || third < second+every-50*time.Millisecond {
		t.Errorf("turns in %v and %v, want the second's token in about %v and the third's %v after it", second, third, every, every)
	}
	// A sync before its turn keeps the turn it has: it reserves no other.
	if again := f.deferred(t, robots["second"]); again > second {
		t.Errorf("the second Robot's turn moved from %v to %v", second, again)
	}
	fourth := f.deferred(t, robots["fourth"])
	if fourth < third+every-50*time.Millisecond {
		t.Errorf("the fourth Robot's turn in %v, before the third's %v is past", fourth, third)
	}

	// A Robot changed again gives its turn back before it takes another
	// (the last one reserved, its token is the bucket's again), and a
	// Robot forgotten holds none.
	robots["fourth"].Spec.Image = "web:2"
	if again := f.deferred(t, robots["fourth"]); again > fourth+50*time.Millisecond {
		t.Errorf("the fourth Robot's new template waits %v, behind its own old turn in %v", again, fourth)
	}
	remembered := f.checker.Len()
	f.checker.ForgetRobot(robots["third"].UID)
	if f.checker.Len() != remembered-1 {
		t.Errorf("the forgotten Robot's turn is still held: %d remembered, then %d", remembered, f.checker.Len())
	}

	time.Sleep(second)
	if err := f.check(t, robots["second"]); err != nil {
		t.Fatal(err)
	}
	if got := f.requests(); len(got) != 1 || got[0] != "create pods" {
		t.Errorf("at its turn, requests %q, want one dry run", got)
	}
	if passed := slices.DeleteFunc(slices.Clone(f.outcomes), func(o string) bool { return o != Passed }); len(passed) != 2 {
		t.Errorf("outcomes %q, want two checks passed", f.outcomes)
	}
}
