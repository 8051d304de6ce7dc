package owned

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/transform"
	"github.com/robot-operator/robot-operator/internal/workload"

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
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// stampDeployments makes the fake API server give each Deployment it writes
// a UID and a new status.ResourceVersion, as the real one does.
func stampDeployments(t *testing.T, client *k8sfake.Clientset) {
	react := core.ObjectReaction(client.Tracker())
	var last atomic.Int64
	last.Store(100)
	client.PrependReactor("*", "deployments", func(action core.Action) (bool, runtime.Object, error) {
		switch action.GetVerb() {
		case "create", "update", "patch":
		default:
			return false, nil, nil
		}
		handled, obj, err := react(action)
		deployment, ok := obj.(*appsv1.Deployment)
		if err != nil || !ok {
			return handled, obj, err
		}
		if deployment.UID == "" {
			deployment.UID = types.UID(deployment.Name + "-deployment-uid")
		}
		deployment.ResourceVersion = strconv.FormatInt(last.Add(1), 10)
		if err := client.Tracker().Update(robottest.DeploymentsResource, deployment, deployment.Namespace); err != nil {
			t.Errorf("stamping %s: %v", robottest.Describe(action), err)
		}
		return true, deployment, nil
	})
}

// TestFieldsTheRobotDropsLeaveTheDeployment: what a Robot asked for when its
// Deployment was created, and no longer asks for, is removed from the
// Deployment, whatever happened in between. The fake API server manages
// fields as the real one does (without its defaulting), so this is server-side
// apply's own removal of what an applier stops applying.
func TestFieldsTheRobotDropsLeaveTheDeployment(t *testing.T) {
	withArgs := func(r *robotv1beta1.Robot) { r.Spec.Args = []string{"--mode", "fast"} }
	// A step changes the Robot, or, as another writer, its Deployment; a
	// sync follows each.
	type step struct {
		robot func(*robotv1beta1.Robot)
		other func(*appsv1.Deployment)
	}
	for _, tc := range []struct {
		name    string
		created func(*robotv1beta1.Robot)
		steps   []step
		want    func(*appsv1.Deployment) string // what is wrong, or ""
	}{
		{
			name:    "args removed",
			created: withArgs,
			steps:   []step{{robot: func(r *robotv1beta1.Robot) { r.Spec.Args = nil }}},
			want:    noArgs,
		},
		{
			name: "env var removed",
			created: func(r *robotv1beta1.Robot) {
				r.Spec.Env = append(r.Spec.Env, corev1.EnvVar{Name: "EXTRA", Value: "1"})
			},
			steps: []step{{robot: func(r *robotv1beta1.Robot) { r.Spec.Env = r.Spec.Env[:1] }}},
			want: func(d *appsv1.Deployment) string {
				env := d.Spec.Template.Spec.Containers[0].Env
				if slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == "EXTRA" }) || len(env) != 1 {
					return "env " + robottest.MustString(env) + ", want only MODE"
				}
				return ""
			},
		},
		{
			name:    "port removed",
			created: func(*robotv1beta1.Robot) {},
			steps:   []step{{robot: func(r *robotv1beta1.Robot) { r.Spec.Ports = nil }}},
			want: func(d *appsv1.Deployment) string {
				if ports := d.Spec.Template.Spec.Containers[0].Ports; len(ports) > 0 {
					return "ports " + robottest.MustString(ports) + ", want none"
				}
				return ""
			},
		},
		{
			name: "a port of two removed",
			created: func(r *robotv1beta1.Robot) {
				r.Spec.Ports = append(r.Spec.Ports, robotv1beta1.RobotPort{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP})
			},
			steps: []step{{robot: func(r *robotv1beta1.Robot) { r.Spec.Ports = r.Spec.Ports[:1] }}},
			want: func(d *appsv1.Deployment) string {
				if ports := d.Spec.Template.Spec.Containers[0].Ports; len(ports) != 1 || ports[0].Name != "http" {
					return "ports " + robottest.MustString(ports) + ", want only http"
				}
				return ""
			},
		},
		{
			name: "strategy and minReadySeconds removed",
			created: func(r *robotv1beta1.Robot) {
				r.Spec.Strategy = &robotv1beta1.RobotStrategy{Type: robotv1beta1.StrategyRecreate}
				r.Spec.MinReadySeconds = 30
			},
			steps: []step{{robot: func(r *robotv1beta1.Robot) { r.Spec.Strategy, r.Spec.MinReadySeconds = nil, 0 }}},
			want: func(d *appsv1.Deployment) string {
				// The fake API server does not default: the type the
				// operator applied is gone, and the real one sets
				// RollingUpdate in its place.
				if d.Spec.Strategy.Type != "" || d.Spec.MinReadySeconds != 0 {
					return "strategy " + robottest.MustString(d.Spec.Strategy) + ", minReadySeconds " + strconv.Itoa(int(d.Spec.MinReadySeconds)) + "; want neither"
				}
				return ""
			},
		},
		{
			name: "rolling update bounds removed",
			created: func(r *robotv1beta1.Robot) {
				r.Spec.Strategy = &robotv1beta1.RobotStrategy{RollingUpdate: &robotv1beta1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(2))}}
			},
			steps: []step{{robot: func(r *robotv1beta1.Robot) { r.Spec.Strategy.RollingUpdate = nil }}},
			want: func(d *appsv1.Deployment) string {
				if d.Spec.Strategy.RollingUpdate != nil {
					return "rollingUpdate " + robottest.MustString(d.Spec.Strategy.RollingUpdate) + ", want none"
				}
				return ""
			},
		},
		{
			// The rollingUpdate is another writer's here, as the
			// API server's defaults are nobody's: the apply of
			// Recreate cannot remove it.
			name:    "Recreate after a rollingUpdate that is not the operator's",
			created: func(*robotv1beta1.Robot) {},
			steps: []step{
				{other: func(d *appsv1.Deployment) {
					d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
						MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromString("25%")),
					}}
				}},
				{robot: func(r *robotv1beta1.Robot) {
					r.Spec.Strategy = &robotv1beta1.RobotStrategy{Type: robotv1beta1.StrategyRecreate}
				}},
			},
			want: func(d *appsv1.Deployment) string {
				if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate != nil {
					return "strategy " + robottest.MustString(d.Spec.Strategy) + `, want {"type":"Recreate"}, which the API server admits`
				}
				return ""
			},
		},
		{
			name:    "args removed after an image change",
			created: withArgs,
			steps: []step{
				{robot: func(r *robotv1beta1.Robot) { r.Spec.Image = "registry.example/robot:2.0" }},
				{robot: func(r *robotv1beta1.Robot) { r.Spec.Args = nil }},
			},
			want: noArgs,
		},
		{
			name:    "args removed after another writer's change was reverted",
			created: withArgs,
			steps: []step{
				{other: func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }},
				{robot: func(r *robotv1beta1.Robot) { r.Spec.Args = nil }},
			},
			want: noArgs,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			robot := robottest.NewRobot("test", 1)
			tc.created(robot)
			f := newPolicyFixture(t, robot)
			paths := f.paths(t, policy.Policy{})
			stampDeployments(t, f.kube)

			// catchUp brings the cache up to date with the fake API server,
			// as the informer would.
			catchUp := func() {
				t.Helper()
				obj, err := f.kube.Tracker().Get(robottest.DeploymentsResource, robot.Namespace, robot.Name)
				if err != nil {
					t.Fatal(err)
				}
				// The Deployment informer's transform.
				cached, err := transform.TrimManagedFields(obj)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.deployments.Update(cached); err != nil {
					t.Fatal(err)
				}
			}
			sync := func() {
				t.Helper()
				objects, err := paths.Sync(ctx, robot)
				if err != nil {
					t.Fatalf("sync: %v", err)
				}
				robot.Status = f.statusOf(robot, objects, err)
				catchUp()
			}

			sync()
			for _, s := range tc.steps {
				if s.robot != nil {
					robot = robot.DeepCopy()
					s.robot(robot)
					robot.Generation++
					rv, _ := strconv.Atoi(robot.ResourceVersion)
					robot.ResourceVersion = strconv.Itoa(rv + 1)
					if err := f.robots.Update(robot); err != nil {
						t.Fatal(err)
					}
				}
				if s.other != nil {
					obj, err := f.kube.Tracker().Get(robottest.DeploymentsResource, robot.Namespace, robot.Name)
					if err != nil {
						t.Fatal(err)
					}
					deployment := obj.(*appsv1.Deployment)
					s.other(deployment)
					if _, err := f.kube.AppsV1().Deployments(robot.Namespace).Update(ctx, deployment, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
						t.Fatal(err)
					}
				}
				catchUp()
				sync()
			}

			obj, err := f.kube.Tracker().Get(robottest.DeploymentsResource, robot.Namespace, robot.Name)
			if err != nil {
				t.Fatal(err)
			}
			deployment := obj.(*appsv1.Deployment)
			var requests []string
			for _, action := range robottest.FilterInformerActions(f.kube.Actions()) {
				requests = append(requests, robottest.Describe(action))
			}
			if wrong := tc.want(deployment); wrong != "" {
				t.Errorf("the Deployment still has what the Robot no longer asks for: %s\nrequests: %q\nmanagedFields: %s", wrong, requests, robottest.MustString(deployment.ManagedFields))
			}
			desired, err := workload.NewDeployment(robot)
			if err != nil {
				t.Fatal(err)
			}
			if drift := drift.DeploymentDrift(desired, deployment); drift != "" {
				t.Errorf("the Deployment is not what the Robot asks for: %s", drift)
			}
		})
	}
}

func noArgs(d *appsv1.Deployment) string {
	if args := d.Spec.Template.Spec.Containers[0].Args; len(args) > 0 {
		return "args " + robottest.MustString(args) + ", want none"
	}
	return ""
}

// TestCreatedFieldsAreClaimedOnce: the first apply after the create that may
// drop a field of the create, because the Robot changed, first makes the
// create's fields the apply's; no other apply does.
func TestCreatedFieldsAreClaimedOnce(t *testing.T) {
	changeImage := func(r *robotv1beta1.Robot) { r.Spec.Image = "registry.example/robot:2.0" }
	for _, tc := range []struct {
		name          string
		managedFields []metav1.ManagedFieldsEntry
		robotChange   func(*robotv1beta1.Robot)
		otherChange   func(*appsv1.Deployment)
		wantClaim     bool
	}{
		{"the Robot changed after the create", []metav1.ManagedFieldsEntry{robottest.StatusByOthers, robottest.Created}, changeImage, nil, true},
		{"the Robot changed after an apply that undid another writer's change", []metav1.ManagedFieldsEntry{robottest.Applied, robottest.StatusByOthers, robottest.Created}, changeImage, nil, true},
		{"another writer changed the Deployment after the create", []metav1.ManagedFieldsEntry{robottest.StatusByOthers, robottest.Created},
			nil, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }, false},
		{"the Robot changed, its Deployment was created by an apply", []metav1.ManagedFieldsEntry{robottest.Applied, robottest.StatusByOthers}, changeImage, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			robot := robottest.NewRobot("test", 1)
			deployment := liveDeployment(t, robot)
			converged(robot, Objects{Deployment: deployment})
			deployment.ManagedFields = tc.managedFields
			if tc.otherChange != nil {
				tc.otherChange(deployment)
			}
			if tc.robotChange != nil {
				tc.robotChange(robot)
				robot.Generation++
			}
			f := newPolicyFixture(t, robot)
			if err := f.kube.Tracker().Add(deployment); err != nil {
				t.Fatal(err)
			}
			cached, err := transform.TrimManagedFields(deployment.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			f.cacheOnly(t, cached.(*appsv1.Deployment))

			var expected []core.Action
			if tc.wantClaim {
				expected = append(expected, claimCreatedFields(t, cached.(*appsv1.Deployment)))
			}
			expected = append(expected, applyDeployment(t, robot, deployment.UID))
			if _, err := f.paths(t, policy.Policy{}).Sync(ctx, robot); err != nil {
				t.Fatalf("sync: %v", err)
			}
			f.check(t, expected...)
			if !tc.wantClaim {
				return
			}
			obj, err := f.kube.Tracker().Get(robottest.DeploymentsResource, robot.Namespace, robot.Name)
			if err != nil {
				t.Fatal(err)
			}
			entries := obj.(*appsv1.Deployment).ManagedFields
			if drift.CreatedFieldsEntry(entries) >= 0 || !drift.HasAppliedEntry(entries) {
				t.Errorf("managedFields after the sync: %s; want the operator's Apply entry and no Update entry of its own", robottest.MustString(entries))
			}
		})
	}
}

// TestOwnDeploymentOutsideTheCacheIsApplied: a Robot's Deployment whose
// managed-by label someone removed is out of the cache. The create finds it;
// it is the Robot's, so the apply puts the label back.
func TestOwnDeploymentOutsideTheCacheIsApplied(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 1)
	deployment := liveDeployment(t, robot)
	converged(robot, Objects{Deployment: deployment})
	delete(deployment.Labels, workload.LabelManagedBy)
	f := newPolicyFixture(t, robot)
	if err := f.kube.Tracker().Add(deployment); err != nil {
		t.Fatal(err)
	}

	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	if err != nil {
		t.Fatal(err)
	}
	// Gone from the cache of a Robot that had it, as if deleted: the
	// Robot is asked for first, lest it be gone too.
	robottest.CheckActions(t, "robot", []core.Action{core.NewGetAction(robottest.RobotsResource, robot.Namespace, robot.Name)},
		robottest.FilterInformerActions(f.robot.Actions()))
	f.check(t, createDeployment(t, robot), getDeployment(robot.Namespace, robot.Name), applyDeployment(t, robot, deployment.UID))
	if got := f.statusOf(robot, objects, err); !apiequality.Semantic.DeepEqual(got, robot.Status) {
		t.Errorf("the status changed (-was +now):\n%s", diff.Diff(robot.Status, got))
	}
	if events := f.events(); len(events) != 1 || !strings.HasPrefix(events[0], corev1.EventTypeNormal+" "+EventDeploymentUpdated) {
		t.Errorf("expected one %s event, got %q", EventDeploymentUpdated, events)
	}
}

// TestFailedClaimIsRetried: the claim's patch fails its test when the
// Deployment changed since it was read; the API server says 422, as for an
// invalid object, but this is no invalid spec: an ordinary failure, retried.
func TestFailedClaimIsRetried(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("test", 1)
	deployment := liveDeployment(t, robot)
	converged(robot, Objects{Deployment: deployment})
	deployment.ManagedFields = []metav1.ManagedFieldsEntry{robottest.StatusByOthers, robottest.Created}
	robot.Spec.Image = "registry.example/robot:2.0"
	robot.Generation++
	f := newPolicyFixture(t, robot)
	f.add(t, deployment)
	f.kube.PrependReactor("patch", "deployments", func(action core.Action) (bool, runtime.Object, error) {
		if action.(core.PatchAction).GetPatchType() != types.JSONPatchType {
			return false, nil, nil
		}
		return true, nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "",
			"testing value /metadata/resourceVersion failed: test failed", 0, false)
	})

	objects, err := f.paths(t, policy.Policy{}).Sync(ctx, robot)
	var invalid *outcome.InvalidSpecError
	if err == nil || errors.As(err, &invalid) || outcome.Classify(err).Retry != outcome.RetryWithBackoff {
		t.Fatalf("sync returned %v; want an error to retry with backoff", err)
	}
	var requests []string
	for _, action := range robottest.FilterInformerActions(f.kube.Actions()) {
		requests = append(requests, robottest.Describe(action))
	}
	if want := []string{"patch deployments default/test"}; !slices.Equal(requests, want) {
		t.Errorf("requests %q, want %q: no apply once the claim failed", requests, want)
	}
	applied := f.statusOf(robot, objects, err)
	if ready := meta.FindStatusCondition(applied.Conditions, robotv1beta1.ConditionReady); ready.Reason != robotv1beta1.ReasonSyncFailed {
		t.Errorf("Ready reason %q, want %q", ready.Reason, robotv1beta1.ReasonSyncFailed)
	}
}
