package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/transform"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

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
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	f.addRobot(robot)
	c := f.newController(ctx)

	// The other Deployment appears once the sync has looked for the Robot's:
	// just after a read of it is answered, or just before a write of it is
	// carried out, whichever comes first.
	theirs := someoneElsesDeployment(robot.Namespace, robot.Name)
	tracker := f.kubeClient.Tracker()
	appeared := false
	appear := func() {
		if !appeared {
			appeared = true
			if err := tracker.Add(theirs.DeepCopy()); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.kubeClient.PrependReactor("*", "deployments", func(action core.Action) (bool, runtime.Object, error) {
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

	requeueAfter, err := c.syncHandler(ctx, cache.MetaObjectToName(robot))
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if !appeared {
		t.Fatal("the sync never asked the API server about the Robot's Deployment")
	}
	now, err := tracker.Get(robottest.DeploymentsResource, theirs.Namespace, theirs.Name)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff.Diff(theirs, now); d != "" {
		t.Errorf("the operator changed someone else's Deployment (-theirs +now):\n%s", d)
	}
	for _, action := range f.kubeClient.Actions() {
		t.Logf("request: %s", describe(action))
	}

	var statuses []robotv1alpha1.Robot
	for _, action := range filterInformerActions(f.robotClient.Actions()) {
		var applied robotv1alpha1.Robot
		if err := json.Unmarshal(action.(core.PatchAction).GetPatch(), &applied); err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, applied)
	}
	if len(statuses) != 1 {
		t.Fatalf("%d status writes, want 1", len(statuses))
	}
	if ready := robottest.FindCondition(statuses[0].Status, robotv1alpha1.ConditionReady); ready.Reason != robotv1alpha1.ReasonDeploymentNameTaken {
		t.Errorf("Ready %s %q, want reason %s", ready.Reason, ready.Message, robotv1alpha1.ReasonDeploymentNameTaken)
	}
	if requeueAfter != nameTakenRecheck {
		t.Errorf("requeue after %v, want %v", requeueAfter, nameTakenRecheck)
	}
	if events := f.events(); len(events) != 1 || !hasPrefix(events[0], corev1.EventTypeWarning+" "+robotv1alpha1.ReasonDeploymentNameTaken) {
		t.Errorf("expected one %s warning, got %q", robotv1alpha1.ReasonDeploymentNameTaken, events)
	}
}

// TestNewRobotCostsOneRequest: the sync of a new Robot makes one request
// about its Deployment, the create: no read before it to confirm that the
// cache is right not to have it.
func TestNewRobotCostsOneRequest(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 2)
	f.addRobot(robot)
	c := f.newController(ctx)

	if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
		t.Fatalf("sync: %v", err)
	}
	var requests []string
	for _, action := range filterInformerActions(f.kubeClient.Actions()) {
		if action.GetResource() == robottest.DeploymentsResource {
			requests = append(requests, describe(action))
		}
	}
	if len(requests) != 1 || !strings.HasPrefix(requests[0], "create deployments ") {
		t.Errorf("requests about the Deployment: %q; want one, a create", requests)
	}
	obj, err := f.kubeClient.Tracker().Get(robottest.DeploymentsResource, robot.Namespace, robot.Name)
	if err != nil {
		t.Fatalf("the Deployment was not created: %v", err)
	}
	desired, err := workload.NewDeployment(robot)
	if err != nil {
		t.Fatal(err)
	}
	if drift := drift.DeploymentDrift(desired, obj.(*appsv1.Deployment)); drift != "" {
		t.Errorf("the created Deployment is not what the Robot asks for: %s", drift)
	}
}

// stampDeployments makes the fake API server give each Deployment it writes
// a UID and a new resourceVersion, as the real one does.
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
			t.Errorf("stamping %s: %v", describe(action), err)
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
	withArgs := func(r *robotv1alpha1.Robot) { r.Spec.Args = []string{"--mode", "fast"} }
	// A step changes the Robot, or, as another writer, its Deployment; a
	// sync follows each.
	type step struct {
		robot func(*robotv1alpha1.Robot)
		other func(*appsv1.Deployment)
	}
	for _, tc := range []struct {
		name    string
		created func(*robotv1alpha1.Robot)
		steps   []step
		want    func(*appsv1.Deployment) string // what is wrong, or ""
	}{
		{
			name:    "args removed",
			created: withArgs,
			steps:   []step{{robot: func(r *robotv1alpha1.Robot) { r.Spec.Args = nil }}},
			want:    noArgs,
		},
		{
			name: "env var removed",
			created: func(r *robotv1alpha1.Robot) {
				r.Spec.Env = append(r.Spec.Env, corev1.EnvVar{Name: "EXTRA", Value: "1"})
			},
			steps: []step{{robot: func(r *robotv1alpha1.Robot) { r.Spec.Env = r.Spec.Env[:1] }}},
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
			created: func(*robotv1alpha1.Robot) {},
			steps:   []step{{robot: func(r *robotv1alpha1.Robot) { r.Spec.Port = nil }}},
			want: func(d *appsv1.Deployment) string {
				if ports := d.Spec.Template.Spec.Containers[0].Ports; len(ports) > 0 {
					return "ports " + robottest.MustString(ports) + ", want none"
				}
				return ""
			},
		},
		{
			name:    "args removed after an image change",
			created: withArgs,
			steps: []step{
				{robot: func(r *robotv1alpha1.Robot) { r.Spec.Image = "registry.example/robot:2.0" }},
				{robot: func(r *robotv1alpha1.Robot) { r.Spec.Args = nil }},
			},
			want: noArgs,
		},
		{
			name:    "args removed after another writer's change was reverted",
			created: withArgs,
			steps: []step{
				{other: func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }},
				{robot: func(r *robotv1alpha1.Robot) { r.Spec.Args = nil }},
			},
			want: noArgs,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			robot := robottest.NewRobot("test", 1)
			tc.created(robot)
			f.addRobot(robot)
			c := f.newController(ctx)
			stampDeployments(t, f.kubeClient)
			key := cache.MetaObjectToName(robot)

			// catchUp brings the caches up to date with the fake API server,
			// as the informers would.
			catchUp := func() {
				t.Helper()
				obj, err := f.kubeClient.Tracker().Get(robottest.DeploymentsResource, robot.Namespace, robot.Name)
				if err != nil {
					t.Fatal(err)
				}
				// The Deployment informer's transform.
				cached, err := transform.TrimManagedFields(obj)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.deploymentIndexer.Update(cached); err != nil {
					t.Fatal(err)
				}
				if obj, err = f.robotClient.Tracker().Get(robottest.RobotsResource, robot.Namespace, robot.Name); err != nil {
					t.Fatal(err)
				}
				if err := f.robotIndexer.Update(obj); err != nil {
					t.Fatal(err)
				}
			}
			sync := func() {
				t.Helper()
				if _, err := c.syncHandler(ctx, key); err != nil {
					t.Fatalf("sync: %v", err)
				}
				catchUp()
			}

			sync()
			for _, s := range tc.steps {
				if s.robot != nil {
					obj, err := f.robotClient.Tracker().Get(robottest.RobotsResource, robot.Namespace, robot.Name)
					if err != nil {
						t.Fatal(err)
					}
					robot = obj.(*robotv1alpha1.Robot)
					s.robot(robot)
					robot.Generation++
					rv, _ := strconv.Atoi(robot.ResourceVersion)
					robot.ResourceVersion = strconv.Itoa(rv + 1)
					if err := f.robotClient.Tracker().Update(robottest.RobotsResource, robot, robot.Namespace); err != nil {
						t.Fatal(err)
					}
				}
				if s.other != nil {
					obj, err := f.kubeClient.Tracker().Get(robottest.DeploymentsResource, robot.Namespace, robot.Name)
					if err != nil {
						t.Fatal(err)
					}
					deployment := obj.(*appsv1.Deployment)
					s.other(deployment)
					if _, err := f.kubeClient.AppsV1().Deployments(robot.Namespace).Update(ctx, deployment, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
						t.Fatal(err)
					}
				}
				catchUp()
				sync()
			}

			obj, err := f.kubeClient.Tracker().Get(robottest.DeploymentsResource, robot.Namespace, robot.Name)
			if err != nil {
				t.Fatal(err)
			}
			deployment := obj.(*appsv1.Deployment)
			var requests []string
			for _, action := range filterInformerActions(f.kubeClient.Actions()) {
				requests = append(requests, describe(action))
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
	changeImage := func(r *robotv1alpha1.Robot) { r.Spec.Image = "registry.example/robot:2.0" }
	for _, tc := range []struct {
		name          string
		managedFields []metav1.ManagedFieldsEntry
		robotChange   func(*robotv1alpha1.Robot)
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
			f := newFixture(t)
			robot := robottest.NewRobot("test", 1)
			deployment := liveDeployment(t, robot)
			converged(robot, deployment)
			deployment.ManagedFields = tc.managedFields
			if tc.otherChange != nil {
				tc.otherChange(deployment)
			}
			if tc.robotChange != nil {
				tc.robotChange(robot)
				robot.Generation++
			}
			f.addRobot(robot)
			f.kubeObjects = append(f.kubeObjects, deployment)
			cached, err := transform.TrimManagedFields(deployment.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			f.deploymentLister = append(f.deploymentLister, cached.(*appsv1.Deployment))
			c := f.newController(ctx)

			if tc.wantClaim {
				f.expectClaimCreatedFields(cached.(*appsv1.Deployment))
			}
			f.expectApplyDeployment(robot)
			if _, err := c.syncHandler(ctx, cache.MetaObjectToName(robot)); err != nil {
				t.Fatalf("sync: %v", err)
			}
			f.checkActions("kube", f.kubeActions, filterInformerActions(f.kubeClient.Actions()))
			if !tc.wantClaim {
				return
			}
			obj, err := f.kubeClient.Tracker().Get(robottest.DeploymentsResource, robot.Namespace, robot.Name)
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
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	deployment := liveDeployment(t, robot)
	converged(robot, deployment)
	delete(deployment.Labels, workload.LabelManagedBy)
	f.addRobot(robot)
	f.kubeObjects = append(f.kubeObjects, deployment)

	// Gone from the cache of a Robot that had it, as if deleted: the
	// Robot is asked for first, lest it be gone too.
	f.robotActions = append(f.robotActions, core.NewGetAction(robottest.RobotsResource, robot.Namespace, robot.Name))
	f.expectCreateDeployment(robot)
	f.expectGetDeployment(robot.Namespace, robot.Name)
	f.expectApplyDeployment(robot)
	f.run(ctx, cache.MetaObjectToName(robot))
	if events := f.events(); len(events) != 1 || !hasPrefix(events[0], corev1.EventTypeNormal+" "+writer.EventDeploymentUpdated) {
		t.Errorf("expected one %s event, got %q", writer.EventDeploymentUpdated, events)
	}
}

// TestFailedClaimIsRetried: the claim's patch fails its test when the
// Deployment changed since it was read; the API server says 422, as for an
// invalid object, but this is no invalid spec: an ordinary failure, retried.
func TestFailedClaimIsRetried(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	deployment := liveDeployment(t, robot)
	converged(robot, deployment)
	deployment.ManagedFields = []metav1.ManagedFieldsEntry{robottest.StatusByOthers, robottest.Created}
	robot.Spec.Image = "registry.example/robot:2.0"
	robot.Generation++
	f.addRobot(robot)
	f.addDeployment(deployment)
	c := f.newController(ctx)
	f.kubeClient.PrependReactor("patch", "deployments", func(action core.Action) (bool, runtime.Object, error) {
		if action.(core.PatchAction).GetPatchType() != types.JSONPatchType {
			return false, nil, nil
		}
		return true, nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "",
			"testing value /metadata/resourceVersion failed: test failed", 0, false)
	})

	_, err := c.syncHandler(ctx, cache.MetaObjectToName(robot))
	var invalid *outcome.InvalidSpecError
	if err == nil || errors.As(err, &invalid) {
		t.Fatalf("sync returned %v; want an error to retry with backoff", err)
	}
	var requests []string
	for _, action := range filterInformerActions(f.kubeClient.Actions()) {
		requests = append(requests, describe(action))
	}
	if want := []string{"patch deployments default/test"}; !slices.Equal(requests, want) {
		t.Errorf("requests %q, want %q: no apply once the claim failed", requests, want)
	}
	applied := f.onlyStatusWrite()
	if ready := robottest.FindCondition(applied.Status, robotv1alpha1.ConditionReady); ready.Reason != robotv1alpha1.ReasonSyncFailed {
		t.Errorf("Ready reason %q, want %q", ready.Reason, robotv1alpha1.ReasonSyncFailed)
	}
}
