package owned

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/fleet"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// configApply is the apply of robot's Deployment, with the digest of its
// config as config sees it now, onto the one of uid; marked as rolled under
// the fleet budget when budgeted.
func configApply(t *testing.T, config *Config, robot *robotv1beta1.Robot, uid types.UID, budgeted bool) core.Action {
	desired, err := config.desiredDeployment(robot)
	if err != nil {
		t.Fatal(err)
	}
	if budgeted {
		workload.MarkBudgeted(desired)
	}
	desired.WithUID(uid)
	return core.NewPatchAction(robottest.DeploymentsResource, robot.Namespace, *desired.Name, types.ApplyPatchType, robottest.MustJSON(t, desired))
}

// TestFleetBudgetHoldsConfigChanges: a shared ConfigMap's change gives two
// Robots that roll on it, neither spec changed, a new config digest; with a
// budget of one, the first rolls it, marked as budgeted, and the second
// waits: Synced=False WaitingForFleetBudget, no write, its Deployment
// keeping the template of the old digest. A change of the waiting Robot's
// own spec then goes through at once.
func TestFleetBudgetHoldsConfigChanges(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	first, second := configRobot("first", "shared", "", ptr.To(true)), configRobot("second", "shared", "", ptr.To(true))
	first.UID, second.UID = "uid-first", "uid-second"
	f := newPolicyFixture(t, first)
	if err := f.robots.AddIndexers(cache.Indexers{ConfigIndex: ConfigIndexFunc}); err != nil {
		t.Fatal(err)
	}
	if err := f.robots.Add(second); err != nil {
		t.Fatal(err)
	}
	source := fcache.NewFakeControllerSource()
	defer source.Shutdown()
	shared := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shared", UID: "cm-shared"}}
	source.Add(shared.DeepCopy())
	configMaps := cache.NewSharedIndexInformer(source, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	f.sources.ConfigMaps, f.sources.RobotIndexer = configMaps, f.robots
	budget := fleet.New(1, func(fleet.Robot) {})
	f.sources.Fleet = budget
	paths := f.paths(t, policy.Policy{})
	f.syncCaches(t, configMaps)

	// Both Robots converged on the ConfigMap's first version.
	var deployments [2]*appsv1.Deployment
	for i, robot := range []*robotv1beta1.Robot{first, second} {
		desired, err := paths.config.desiredDeployment(robot)
		deployments[i] = robottest.LiveDeploymentOf(t, desired, err)
		deployments[i].ManagedFields = []metav1.ManagedFieldsEntry{robottest.Applied, robottest.StatusByOthers}
		converged(robot, Objects{Deployment: deployments[i]})
	}
	before := deployments[1].Spec.Template.Annotations[workload.AnnotationConfigDigest]
	if before == "" {
		t.Fatalf("the Deployment's template has no config digest: %v", deployments[1].Spec.Template.Annotations)
	}
	addRolling(t, f, deployments[0], deployments[1])
	for _, robot := range []*robotv1beta1.Robot{first, second} {
		if _, err := paths.Sync(ctx, robot); err != nil {
			t.Fatalf("a converged Robot's sync: %v", err)
		}
	}
	f.check(t)

	source.Modify(shared.DeepCopy())
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		digest, _ := paths.config.Digest(second)
		return digest != before, nil
	}); err != nil {
		t.Fatal("the digest did not follow the ConfigMap's change")
	}

	objects, err := paths.Sync(ctx, first)
	if err != nil {
		t.Fatalf("the first Robot's sync after the ConfigMap changed: %v; want it applied", err)
	}
	f.check(t, configApply(t, paths.config, first, deployments[0].UID, true))
	f.cacheOnly(t, objects.Deployment)

	objects, err = paths.Sync(ctx, second)
	var waiting *outcome.FleetBudgetError
	if !errors.As(err, &waiting) {
		t.Fatalf("the second Robot's sync after the ConfigMap changed: %v; want it waiting for the budget", err)
	}
	f.check(t)
	got := f.statusOf(second, objects, err)
	if synced := meta.FindStatusCondition(got.Conditions, robotv1beta1.ConditionSynced); synced == nil ||
		synced.Status != metav1.ConditionFalse || synced.Reason != robotv1beta1.ReasonWaitingForFleetBudget {
		t.Errorf("Synced = %v; want False, %s", synced, robotv1beta1.ReasonWaitingForFleetBudget)
	}
	stored, err := f.kube.AppsV1().Deployments(second.Namespace).Get(ctx, second.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if digest := stored.Spec.Template.Annotations[workload.AnnotationConfigDigest]; digest != before {
		t.Errorf("the waiting Robot's Deployment has the config digest %q; want the old one, %q", digest, before)
	}
	if rolling, waitingCount := budget.Counts(); rolling != 1 || waitingCount != 1 {
		t.Errorf("budget: %d rolling, %d waiting; want 1, 1", rolling, waitingCount)
	}
	f.kube.ClearActions()
	second.Status = got

	second.Spec.Image = "registry.example/other:2"
	second.Generation = 2
	if _, err := paths.Sync(ctx, second); err != nil {
		t.Fatalf("a waiting Robot whose spec changed: %v; want it applied", err)
	}
	f.check(t, configApply(t, paths.config, second, deployments[1].UID, false))
	if rolling, waitingCount := budget.Counts(); rolling != 1 || waitingCount != 0 {
		t.Errorf("budget: %d rolling, %d waiting once the waiting Robot's spec changed; want the first rolling, none waiting", rolling, waitingCount)
	}
}
