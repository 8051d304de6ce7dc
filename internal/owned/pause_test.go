package owned

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/status"
	"github.com/robot-operator/robot-operator/internal/transform"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// pausedStatus is the status the operator writes for a paused robot whose
// Deployment and Service, as the caches hold them, are deployment and
// service.
func pausedStatus(robot *robotv1beta1.Robot, deployment *appsv1.Deployment, service *corev1.Service, now time.Time) robotv1beta1.RobotStatus {
	return status.Compute(robot, deployment, service, &outcome.PausedError{Deployment: workload.DeploymentName(robot)}, metav1.NewTime(now))
}

// onlyStatusWrite fails t unless a sync that returned objects and syncErr
// sent no request, to the API server or of the Robot, and the status of
// what it returned is want, which the Robot does not say yet: the status
// write is the sync's one request. It returns that status.
func (f *policyFixture) onlyStatusWrite(t *testing.T, robot *robotv1beta1.Robot, objects Objects, syncErr error, want robotv1beta1.RobotStatus) robotv1beta1.RobotStatus {
	t.Helper()
	f.check(t)
	robottest.CheckActions(t, "robot", nil, robottest.FilterInformerActions(f.robot.Actions()))
	written := f.statusOf(robot, objects, syncErr)
	if !apiequality.Semantic.DeepEqual(written, want) {
		t.Errorf("status (-want +got):\n%s", diff.Diff(want, written))
	}
	if apiequality.Semantic.DeepEqual(written, robot.Status) {
		t.Errorf("the status is what the Robot says already: no status write")
	}
	return written
}

// notRetried fails t unless the Controller retries nothing after a sync
// that returned err: the next change to the Robot queues it.
func notRetried(t *testing.T, err error) {
	t.Helper()
	if retry := outcome.Classify(err).Retry; retry != outcome.RetryOnChange {
		t.Errorf("sync error %v is retried (%v), want no retry until the Robot changes", err, retry)
	}
}

// ignoredWarned returns the Warnings the Controller records, each value
// once, for the annotations of robot and of the objects it owns that hold
// values the operator ignores.
func ignoredWarned(robot *robotv1beta1.Robot, objects Objects) []string {
	var warnings []string
	for _, ignored := range workload.IgnoredAnnotations(robot, objects.DisruptionBudget()) {
		warnings = append(warnings, corev1.EventTypeWarning+" "+robotv1beta1.ReasonAnnotationIgnored+" "+ignored.Message())
	}
	return warnings
}

// TestPausedNewRobotCreatesNothing: a new Robot created paused gets no
// Deployment and no Service; it says Synced=False with the reason Paused,
// and Ready=False for the same reason, since nothing runs. It is not
// retried: unpausing it queues it. "True", as people write it, pauses as
// "true" does.
func TestPausedNewRobotCreatesNothing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.Paused(robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeClusterIP), "True")
	f := newPolicyFixture(t, robot)

	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	notRetried(t, err)
	// No kube request at all: only the status write.
	written := f.onlyStatusWrite(t, robot, objects, err, pausedStatus(robot, nil, nil, robottest.FixtureNow))
	synced := meta.FindStatusCondition(written.Conditions, robotv1beta1.ConditionSynced)
	if synced.Status != metav1.ConditionFalse || synced.Reason != robotv1beta1.ReasonPaused ||
		!strings.Contains(synced.Message, workload.AnnotationPaused) || !strings.Contains(synced.Message, `Deployment "test"`) {
		t.Errorf("Synced %s %s %q, want False %s naming the annotation and the Deployment", synced.Status, synced.Reason, synced.Message, robotv1beta1.ReasonPaused)
	}
	if ready := meta.FindStatusCondition(written.Conditions, robotv1beta1.ConditionReady); ready.Status != metav1.ConditionFalse || ready.Reason != robotv1beta1.ReasonPaused {
		t.Errorf("Ready %s %s, want False %s", ready.Status, ready.Reason, robotv1beta1.ReasonPaused)
	}
	if written.ObservedGeneration != robot.Generation {
		t.Errorf("observedGeneration %d, want the generation %d", written.ObservedGeneration, robot.Generation)
	}
	// A person asked for it: nothing to warn about.
	if events := append(f.events(), warned(robot.Status, written)...); len(events) != 0 {
		t.Errorf("events %q, want none", events)
	}
}

// TestPausedRobotIsNotReverted: whatever happened to a paused Robot's
// Deployment or Service, and whatever the Robot asks for since, the operator
// writes neither: no apply, no create (not even the read that precedes the
// recreation of a deleted Deployment), no delete. The status reports the
// Deployment as it is.
func TestPausedRobotIsNotReverted(t *testing.T) {
	for name, change := range map[string]func(t *testing.T, robot *robotv1beta1.Robot, deployment **appsv1.Deployment, service **corev1.Service){
		"Deployment scaled": func(_ *testing.T, _ *robotv1beta1.Robot, d **appsv1.Deployment, _ **corev1.Service) {
			(*d).Spec.Replicas = ptr.To[int32](5)
		},
		"Deployment image changed": func(_ *testing.T, _ *robotv1beta1.Robot, d **appsv1.Deployment, _ **corev1.Service) {
			(*d).Spec.Template.Spec.Containers[0].Image = "nginx:latest"
		},
		"Deployment deleted": func(_ *testing.T, _ *robotv1beta1.Robot, d **appsv1.Deployment, _ **corev1.Service) { *d = nil },
		"Service deleted":    func(_ *testing.T, _ *robotv1beta1.Robot, _ **appsv1.Deployment, s **corev1.Service) { *s = nil },
		"Service type changed": func(_ *testing.T, _ *robotv1beta1.Robot, _ **appsv1.Deployment, s **corev1.Service) {
			(*s).Spec.Type = corev1.ServiceTypeNodePort
		},
		"Robot scaled": func(_ *testing.T, r *robotv1beta1.Robot, _ **appsv1.Deployment, _ **corev1.Service) {
			r.Spec.Replicas, r.Generation = ptr.To[int32](3), 2
		},
		"Robot's port removed": func(_ *testing.T, r *robotv1beta1.Robot, _ **appsv1.Deployment, _ **corev1.Service) {
			r.Spec.Ports, r.Generation = nil, 2
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			robot := robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeClusterIP)
			deployment, service := liveDeployment(t, robot), liveService(t, robot)
			converged(robot, Objects{Deployment: deployment, Service: service})
			robot = robottest.Paused(robot, "true")
			change(t, robot, &deployment, &service)
			f := newPolicyFixture(t, robot)
			if deployment != nil {
				f.add(t, deployment)
			}
			if service != nil {
				f.add(t, service)
			}
			if !workload.WantsService(robot) {
				service = nil // not the Robot's to report any more
			}

			objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
			notRetried(t, err)
			written := f.onlyStatusWrite(t, robot, objects, err, pausedStatus(robot, deployment, service, robottest.FixtureNow))
			if events := append(f.events(), warned(robot.Status, written)...); len(events) != 0 {
				t.Errorf("events %q, want none", events)
			}
		})
	}
}

// TestPausedRobotIsWrittenOnce: the status of a paused Robot is written
// once; the next sync, with the cache holding that status, writes nothing,
// so a paused Robot costs no request however often its Deployment's events
// queue it.
func TestPausedRobotIsWrittenOnce(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	converged(robot, Objects{Deployment: deployment})
	robot = robottest.Paused(robot, "true")
	deployment.Spec.Replicas = ptr.To[int32](5) // someone scaled it
	f := newPolicyFixture(t, robot)
	f.add(t, deployment)
	paths := f.paths(t, policy.Policy{})
	before := robot.Status

	objects, err := paths.Sync(ctx, robot)
	written := f.onlyStatusWrite(t, robot, objects, err, pausedStatus(robot, deployment, nil, robottest.FixtureNow))
	if synced := meta.FindStatusCondition(written.Conditions, robotv1beta1.ConditionSynced); synced.Reason != robotv1beta1.ReasonPaused {
		t.Fatalf("Synced reason %q, want %q", synced.Reason, robotv1beta1.ReasonPaused)
	}
	// The cache catches up with the write.
	robot.Status = written

	for range 2 {
		objects, err := paths.Sync(ctx, robot)
		notRetried(t, err)
		f.statusUnchanged(t, robot, objects, err)
	}
	f.check(t)
	robottest.CheckActions(t, "robot", nil, robottest.FilterInformerActions(f.robot.Actions()))
	if events := append(f.events(), warned(before, written)...); len(events) != 0 {
		t.Errorf("events %q, want none", events)
	}
}

// TestPauseNeedsTrue: a value of the annotation other than "true" (in any
// case) pauses nothing: the Robot's Deployment is created as for any Robot.
// "false" in any case says so; any other value is ignored, and a Warning
// names it and the values read.
func TestPauseNeedsTrue(t *testing.T) {
	for _, value := range []string{"false", "FALSE", "yes", "1", ""} {
		t.Run(strconv.Quote(value), func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			robot := robottest.Paused(robottest.NewRobot("test", 2), value)
			f := newPolicyFixture(t, robot)

			objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
			if err != nil {
				t.Fatalf("sync: %v", err)
			}
			f.check(t, createDeployment(t, robot))
			created := liveDeployment(t, robot)
			created.Generation, created.Status = 0, appsv1.DeploymentStatus{}
			want := status.Compute(robot, created, nil, nil, metav1.NewTime(robottest.FixtureNow))
			written := f.statusOf(robot, objects, err)
			if !apiequality.Semantic.DeepEqual(written, want) {
				t.Errorf("status (-want +got):\n%s", diff.Diff(want, written))
			}

			events := []string{corev1.EventTypeNormal + " " + writer.EventCreated + ` Created Deployment "test"`}
			if !strings.EqualFold(value, "false") {
				events = append(events, corev1.EventTypeWarning+" "+robotv1beta1.ReasonAnnotationIgnored+" "+workload.IgnoredAnnotations(robot, nil)[0].Message())
			}
			got := append(append(f.events(), ignoredWarned(robot, objects)...), warned(robot.Status, written)...)
			if strings.Join(got, "\n") != strings.Join(events, "\n") {
				t.Errorf("events: got %q, want %q", got, events)
			}
		})
	}
}

// TestPausedRobotLeavesItsBudget: the pause covers the PodDisruptionBudget
// as it does the Deployment: a budget loosened by hand is not put back, and
// one the Robot no longer asks for is not deleted, while the annotation
// stays. (The HTTPRoute goes through the same path, owned.Paths.Own.)
func TestPausedRobotLeavesItsBudget(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	for name, robot := range map[string]*robotv1beta1.Robot{
		"loosened": robottest.NewRobot("test", 2),
		"not asked": func() *robotv1beta1.Robot {
			robot := robottest.NewRobot("test", 2)
			robot.Spec.DisruptionBudget = &robotv1beta1.RobotDisruptionBudget{Disabled: true}
			return robot
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			budget := liveBudget(t, robottest.NewRobot("test", 2))
			budget.Spec.MaxUnavailable = ptr.To(intstr.FromString("100%"))
			robot := robottest.Paused(robot, "true")
			deployment := liveDeployment(t, robot)
			converged(robot, Objects{Deployment: deployment})
			f := newPolicyFixture(t, robot).withBudgets()
			f.add(t, deployment, budget)
			if _, err := f.paths(t, policy.Policy{DisruptionBudgets: policy.DisruptionBudgetsDefault}).Sync(ctx, robot); !errors.As(err, new(*outcome.PausedError)) {
				t.Fatalf("sync: %v, want the pause", err)
			}
			for _, action := range robottest.FilterInformerActions(f.kube.Actions()) {
				t.Errorf("%s while the Robot is paused", robottest.Describe(action))
			}
		})
	}
}

// newerRobot is robot as a newer release's CRD let a client write it: its
// managedFields name a spec field this binary's types do not have, which the
// decoding dropped.
func newerRobot(robot *robotv1beta1.Robot) *robotv1beta1.Robot {
	robot.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
		APIVersion: "robot.dev/v1beta1", FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:image":{},"f:replicas":{},"f:debugPort":{}}}`)}}}
	return robot
}

// TestNewerFieldsAreNotWritten: a Robot that holds fields this release
// cannot read (a newer release's, after a rollback) gets no write to its
// Deployment, which was built from the whole spec, even when it drifted:
// the apply would remove what this release cannot see. Its status says why
// (Synced=False, NewerAPI, naming the field), with one Warning Event, and
// nothing is retried until the Robot changes.
func TestNewerFieldsAreNotWritten(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	newer := &transform.NewerFields{}
	obj, err := newer.Transform(newerRobot(robottest.NewRobot("test", 2)))
	if err != nil {
		t.Fatal(err)
	}
	robot := obj.(*robotv1beta1.Robot)
	deployment := liveDeployment(t, robot)
	deployment.Spec.Replicas = ptr.To[int32](5) // drift the operator would revert
	f := newPolicyFixture(t, robot)
	f.add(t, deployment)
	f.sources.NewerFields = newer

	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	notRetried(t, err)
	refusal := &outcome.NewerFieldsError{Fields: newer.Of(robot.UID)}
	written := f.onlyStatusWrite(t, robot, objects, err, status.Compute(robot, deployment, nil, refusal, metav1.NewTime(robottest.FixtureNow)))
	synced := meta.FindStatusCondition(written.Conditions, robotv1beta1.ConditionSynced)
	if synced == nil || synced.Status != metav1.ConditionFalse || synced.Reason != robotv1beta1.ReasonNewerAPI || !strings.Contains(synced.Message, "spec.debugPort") {
		t.Errorf("Synced %+v, want False %s naming spec.debugPort", synced, robotv1beta1.ReasonNewerAPI)
	}
	events := append(f.events(), warned(robot.Status, written)...)
	if len(events) != 1 || !strings.HasPrefix(events[0], corev1.EventTypeWarning+" "+robotv1beta1.ReasonNewerAPI+" ") || !strings.Contains(events[0], "spec.debugPort") {
		t.Errorf("events %q, want one Warning %s naming spec.debugPort", events, robotv1beta1.ReasonNewerAPI)
	}
}

// TestNewerFieldsGoneSyncsAgain: once the Robot no longer holds fields this
// release cannot read, it is synced as any other.
func TestNewerFieldsGoneSyncsAgain(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	newer := &transform.NewerFields{}
	if _, err := newer.Transform(newerRobot(robottest.NewRobot("test", 2))); err != nil {
		t.Fatal(err)
	}
	// The writer stopped setting the field: managedFields no longer list
	// it.
	known := robottest.NewRobot("test", 2)
	known.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
		APIVersion: "robot.dev/v1beta1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:image":{},"f:replicas":{}}}`)}}}
	obj, err := newer.Transform(known)
	if err != nil {
		t.Fatal(err)
	}
	robot := obj.(*robotv1beta1.Robot)
	f := newPolicyFixture(t, robot)
	f.sources.NewerFields = newer

	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	f.check(t, createDeployment(t, robot))
	created := liveDeployment(t, robot)
	created.Generation, created.Status = 0, appsv1.DeploymentStatus{}
	want := status.Compute(robot, created, nil, nil, metav1.NewTime(robottest.FixtureNow))
	if got := f.statusOf(robot, objects, err); !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("status (-want +got):\n%s", diff.Diff(want, got))
	}
}
