package owned

import (
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/status"
	"github.com/robot-operator/robot-operator/internal/writer"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestConvergedRolloutRobotCostsNothing: a Robot with several ports, a
// rolling update strategy and minReadySeconds, whose Deployment and Service
// the API server holds with its defaults added, costs no write.
func TestConvergedRolloutRobotCostsNothing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.RolloutRobot()
	deployment, service := liveDeployment(t, robot), liveService(t, robot)
	robottest.APIServerDefaults(deployment)
	f := serviceFixture(t, robot, Objects{Deployment: deployment, Service: service})

	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	f.unchanged(t, robot, objects, err)
}

// TestRevertsDriftOfTheRollout: a change to the strategy, minReadySeconds
// or one of several ports that the Robot sets is put back by one apply.
func TestRevertsDriftOfTheRollout(t *testing.T) {
	for name, drift := range map[string]func(*appsv1.Deployment){
		"strategy": func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		},
		"maxSurge":        func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("25%")) },
		"minReadySeconds": func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 0 },
		"second port": func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Ports[1].ContainerPort = 8081
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			robot := robottest.RolloutRobot()
			deployment, service := liveDeployment(t, robot), liveService(t, robot)
			robottest.APIServerDefaults(deployment)
			converged(robot, Objects{Deployment: deployment, Service: service})
			drift(deployment)
			f := newPolicyFixture(t, robot)
			f.add(t, deployment, service)

			if _, err := f.paths(t, policy.Policy{}).Sync(ctx, robot); err != nil {
				t.Fatal(err)
			}
			f.check(t, applyDeployment(t, robot, deployment.UID))
			if events := f.events(); len(events) != 1 || !strings.HasPrefix(events[0], corev1.EventTypeNormal+" "+EventDeploymentUpdated) {
				t.Errorf("expected one %s event, got %q", EventDeploymentUpdated, events)
			}
		})
	}
}

// TestRecreateClearsTheRollingUpdate: a Robot that asks for Recreate, whose
// Deployment has the rollingUpdate the API server defaulted, has it removed
// by a patch before the apply, which the API server would refuse otherwise;
// once the Deployment is Recreate, that costs nothing more.
func TestRecreateClearsTheRollingUpdate(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 1)
	deployment := liveDeployment(t, robot)
	robottest.APIServerDefaults(deployment)
	deployment.ManagedFields = []metav1.ManagedFieldsEntry{robottest.Applied, robottest.StatusByOthers}
	converged(robot, Objects{Deployment: deployment})
	robot.Spec.Strategy = &robotv1beta1.RobotStrategy{Type: robotv1beta1.StrategyRecreate}
	robot.Generation = 2
	f := newPolicyFixture(t, robot)
	f.add(t, deployment)

	desired, err := (*Config)(nil).desiredDeployment(robot)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := writer.RecreatePatch(desired, deployment)
	if err != nil || patch == nil {
		t.Fatalf("RecreatePatch = %s, %v; want a patch", patch, err)
	}
	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	if err != nil {
		t.Fatal(err)
	}
	f.check(t, core.NewPatchAction(robottest.DeploymentsResource, deployment.Namespace, deployment.Name, types.JSONPatchType, patch),
		applyDeployment(t, robot, deployment.UID))
	want := status.Compute(robot, deployment, nil, nil, metav1.NewTime(robottest.FixtureNow))
	if got := f.statusOf(robot, objects, err); !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("status (-want +got):\n%s", diff.Diff(want, got))
	}
	if events := f.events(); len(events) != 1 || !strings.Contains(events[0], `spec.strategy.type is "RollingUpdate"; the Robot asks for "Recreate"`) {
		t.Errorf("events %q, want one saying the strategy changed", events)
	}
}

// someoneElsesDeployment is a Deployment that another tool made: no
// controller, labels of its own.
func someoneElsesDeployment(namespace, name string) *appsv1.Deployment {
	labels := map[string]string{"app": "someone-else"}
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, UID: "someone-elses-uid", ResourceVersion: "3", Generation: 1,
			Labels: labels,
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	}
}

// TestDeploymentCreatedAfterTheCacheMissIsLeftAlone: someone else creates a
// Deployment of the Robot's name after the sync found none in its cache and
// before it writes one. The operator must not write it (an apply would merge
// the Robot's fields into it and adopt it): the Robot reports the name taken.
func TestDeploymentCreatedAfterTheCacheMissIsLeftAlone(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 1)
	f := newPolicyFixture(t, robot)
	paths := f.paths(t, policy.Policy{})

	// The other Deployment appears once the sync has looked for the Robot's:
	// just after a read of it is answered, or just before a write of it is
	// carried out, whichever comes first.
	theirs := someoneElsesDeployment(robot.Namespace, robot.Name)
	tracker := f.kube.Tracker()
	appeared := false
	appear := func() {
		if !appeared {
			appeared = true
			if err := tracker.Add(theirs.DeepCopy()); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.kube.PrependReactor("*", "deployments", func(action core.Action) (bool, runtime.Object, error) {
		switch action.GetVerb() {
		case "get":
			obj, err := tracker.Get(robottest.DeploymentsResource, action.GetNamespace(), action.(core.GetAction).GetName())
			appear()
			return true, obj, err
		case "create", "update", "patch":
			appear()
		}
		return false, nil, nil
	})

	objects, err := paths.Sync(ctx, robot)
	if !appeared {
		t.Fatal("the sync never asked the API server about the Robot's Deployment")
	}
	now, getErr := tracker.Get(robottest.DeploymentsResource, theirs.Namespace, theirs.Name)
	if getErr != nil {
		t.Fatal(getErr)
	}
	if d := diff.Diff(theirs, now); d != "" {
		t.Errorf("the operator changed someone else's Deployment (-theirs +now):\n%s", d)
	}
	for _, action := range f.kube.Actions() {
		t.Logf("request: %s", robottest.Describe(action))
	}

	written := f.statusOf(robot, objects, err)
	if apiequality.Semantic.DeepEqual(written, robot.Status) {
		t.Fatal("no status to write, want the name taken reported")
	}
	if ready := meta.FindStatusCondition(written.Conditions, robotv1beta1.ConditionReady); ready.Reason != robotv1beta1.ReasonDeploymentNameTaken {
		t.Errorf("Ready %s %q, want reason %s", ready.Reason, ready.Message, robotv1beta1.ReasonDeploymentNameTaken)
	}
	if retry := outcome.Classify(err).Retry; retry != outcome.RecheckLater {
		t.Errorf("retry %v, want the name rechecked later", retry)
	}
	if events := append(f.events(), warned(robot.Status, written)...); len(events) != 1 || !strings.HasPrefix(events[0], corev1.EventTypeWarning+" "+robotv1beta1.ReasonDeploymentNameTaken) {
		t.Errorf("expected one %s warning, got %q", robotv1beta1.ReasonDeploymentNameTaken, events)
	}
}

func TestNameTakenOutsideTheCache(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 1)
	f := newPolicyFixture(t, robot)
	// Unlabelled, so the informer never sees it; only the API server has it.
	foreign := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: robot.Namespace, UID: "foreign"}}
	if err := f.kube.Tracker().Add(foreign); err != nil {
		t.Fatal(err)
	}

	// The create finds it there: whose is it?
	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	f.check(t, createDeployment(t, robot), getDeployment(robot.Namespace, robot.Name))
	want := status.Compute(robot, nil, nil, &outcome.NameTakenError{Name: foreign.Name, Owner: outcome.ControllerName(foreign)}, metav1.NewTime(robottest.FixtureNow))
	if got := f.statusOf(robot, objects, err); !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("status (-want +got):\n%s", diff.Diff(want, got))
	}
}

// TestRefusedWriteWaitsForANewGeneration: the API server refuses the
// Deployment's apply as invalid. A sync that an unrelated change brings (a
// Deployment status update, a resync) sends no write again: only a new
// generation of the Robot may make it pass.
func TestRefusedWriteWaitsForANewGeneration(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	converged(robot, Objects{Deployment: deployment})
	deployment.Spec.Replicas = ptr.To[int32](5)
	f := newPolicyFixture(t, robot)
	f.add(t, deployment)
	paths := f.paths(t, policy.Policy{})
	f.kube.PrependReactor("patch", "deployments", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "test", nil)
	})
	objects, err := paths.Sync(ctx, robot)
	applied := f.statusOf(robot, objects, err)
	if synced := meta.FindStatusCondition(applied.Conditions, robotv1beta1.ConditionSynced); synced.Reason != robotv1beta1.ReasonInvalidSpec {
		t.Fatalf("Synced reason %q, want %q", synced.Reason, robotv1beta1.ReasonInvalidSpec)
	}
	robot.Status = applied
	f.writes()
	f.events()

	// An unrelated change: the Deployment controller updates the status.
	d := deployment.DeepCopy()
	d.ResourceVersion = "2000"
	d.Status.ObservedGeneration = d.Generation
	if err := f.deployments.Update(d); err != nil {
		t.Fatal(err)
	}
	objects, err = paths.Sync(ctx, robot)
	f.unchanged(t, robot, objects, err)

	// A new generation of the Robot tries again.
	robot.Generation++
	if _, err := paths.Sync(ctx, robot); err == nil {
		t.Error("the new generation's apply passed the reactor that refuses it")
	}
	if writes := f.writes(); len(writes) == 0 {
		t.Errorf("no write for the Robot's new generation")
	}
}
