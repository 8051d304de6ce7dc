package owned

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/writer"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// preflightOn is the policy with the check of changed templates on.
var preflightOn = policy.Policy{Preflight: policy.Preflight{Enabled: true, QPS: 100, Burst: 10}}

// withPreflight gives f's paths a client for the checks, whose dry runs
// refuse says, and returns it.
func (f *policyFixture) withPreflight(refuse *error) *k8sfake.Clientset {
	client := k8sfake.NewClientset()
	client.PrependReactor("create", "pods", func(action core.Action) (bool, runtime.Object, error) {
		return true, action.(core.CreateAction).GetObject(), *refuse
	})
	f.sources.PreflightClient = client
	return client
}

// TestNewRobotIsNotChecked: a Robot's first Deployment is created with no
// check: nothing runs to protect, and its path to Ready keeps its writes.
func TestNewRobotIsNotChecked(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("web", 1)
	f := newPolicyFixture(t, robot)
	var refuse error = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota"))
	checks := f.withPreflight(&refuse)

	if _, err := f.paths(t, preflightOn).Sync(ctx, robot); err != nil {
		t.Fatal(err)
	}
	f.check(t, createDeployment(t, robot))
	if actions := checks.Actions(); len(actions) != 0 {
		t.Errorf("a new Robot was checked: %d requests", len(actions))
	}
}

// changedRobot returns a Robot whose image changed since its Deployment,
// cached, was made, and the fixture that holds them.
func changedRobot(t *testing.T) (*robotv1beta1.Robot, *appsv1.Deployment, *policyFixture) {
	t.Helper()
	robot := robottest.NewRobot("web", 1)
	deployment := liveDeployment(t, robot)
	converged(robot, Objects{Deployment: deployment})
	robot.Spec.Image = "registry.example/robot:2.0"
	robot.Generation++
	f := newPolicyFixture(t, robot)
	f.add(t, deployment)
	return robot, deployment, f
}

// TestRejectedChangeLeavesTheDeployment: a change of the template that the
// API server refuses is not written, and the Robot says ChangeRejected
// with the API server's message; syncing it again sends nothing; the fixed
// Robot's change is checked and applied.
func TestRejectedChangeLeavesTheDeployment(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot, deployment, f := changedRobot(t)
	var refuse error = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-preflight-x",
		errors.New("exceeded quota: small, requested: requests.cpu=4, used: requests.cpu=0, limited: requests.cpu=1"))
	checks := f.withPreflight(&refuse)
	paths := f.paths(t, preflightOn)

	for range 2 {
		objects, err := paths.Sync(ctx, robot)
		var rejected *outcome.ChangeRejectedError
		if !errors.As(err, &rejected) {
			t.Fatalf("sync: %v, want the change rejected", err)
		}
		if objects.Deployment == nil || objects.Deployment.ResourceVersion != deployment.ResourceVersion {
			t.Errorf("the Deployment reported is not the one that runs: %v", objects.Deployment)
		}
		f.check(t)
		synced := meta.FindStatusCondition(f.statusOf(robot, objects, err).Conditions, robotv1beta1.ConditionSynced)
		if synced.Reason != robotv1beta1.ReasonChangeRejected || !strings.Contains(synced.Message, "exceeded quota: small") {
			t.Errorf("Synced %s: %q", synced.Reason, synced.Message)
		}
	}
	if n := len(checks.Actions()); n != 1 {
		t.Errorf("%d checks of one template, want 1", n)
	}

	refuse = nil
	robot.Spec.Image = "registry.example/robot:2.1"
	robot.Generation++
	if _, err := paths.Sync(ctx, robot); err != nil {
		t.Fatal(err)
	}
	var requests []string
	for _, action := range robottest.FilterInformerActions(f.kube.Actions()) {
		requests = append(requests, action.GetVerb()+" "+action.GetResource().Resource)
	}
	if !slices.Contains(requests, "patch deployments") {
		t.Errorf("requests %q: the fixed change was not applied", requests)
	}
	if n := len(checks.Actions()); n != 2 {
		t.Errorf("%d checks, want 2: one per template", n)
	}
}

// TestDeposedLeaderChecksNothing: a process the write fence stops (its
// Lease may be another's) sends no dry run for a change, as it writes
// nothing else: the check is a POST, and only the leader acts on a change.
// Once it may write again, the change is checked.
func TestDeposedLeaderChecksNothing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot, _, f := changedRobot(t)
	var refuse error
	checks := f.withPreflight(&refuse)
	deposed := errors.New("not the leader")
	fenceErr := deposed
	f.deps.Writer = writer.New(f.robot, f.recorder, func() error { return fenceErr })
	paths := f.paths(t, preflightOn)

	if _, err := paths.Sync(ctx, robot); !errors.Is(err, deposed) {
		t.Errorf("sync by a deposed leader: %v, want the fence's error", err)
	}
	if actions := checks.Actions(); len(actions) != 0 {
		t.Errorf("a deposed leader sent %d requests for the check, the first %s %s", len(actions), actions[0].GetVerb(), actions[0].GetResource().Resource)
	}
	if writes := f.writes(); len(writes) != 0 {
		t.Errorf("a deposed leader wrote %v", writes)
	}

	fenceErr = nil
	if _, err := paths.Sync(ctx, robot); err != nil {
		t.Fatal(err)
	}
	if actions := checks.Actions(); len(actions) == 0 {
		t.Error("the leader's sync of the change made no check")
	}
}
