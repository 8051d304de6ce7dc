//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestFleetBudgetConfigChange: one ConfigMap is read (envFrom) by 50 Robots
// that roll on config changes and 5 that do not. An operator started with
// -fleet-rollout-budget=5 sees the ConfigMap change: never more than 5 of
// the 50 Deployments roll the new config digest at once (watched as
// TestFleetBudget watches them), the Robots waiting say
// WaitingForFleetBudget, all 50 end Ready with the new digest, and the
// Deployments of the 5 are never written.
func TestFleetBudgetConfigChange(t *testing.T) {
	exclusive(t, "pauses the shared operator and runs one of its own with a fleet budget")
	const n, optedOut, budget = 50, 5, 5
	ctx := t.Context()
	ns := newNamespace(t)
	if _, err := env.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: ns}, Data: map[string]string{"setting": "one"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stays := map[string]bool{}
	for i := range n {
		createRobot(t, configRobot(ns, fmt.Sprintf("rolls-%02d", i), "shared", "", ptr.To(true)))
	}
	for i := range optedOut {
		name := fmt.Sprintf("stays-%d", i)
		stays[name] = true
		createRobot(t, configRobot(ns, name, "shared", "", nil))
	}
	waitForSettledRobots(t, ns, n+optedOut, false)

	pauseSharedOperator(t)
	list, err := env.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]*appsv1.Deployment{}
	for i := range list.Items {
		d := &list.Items[i]
		before[d.Name] = d
		if digest := d.Spec.Template.Annotations[configDigestAnnotation]; stays[d.Name] != (digest == "") {
			t.Fatalf("Deployment %s has the config digest %q; want one only for the Robots that roll on config changes", d.Name, digest)
		}
	}
	if len(before) != n+optedOut {
		t.Fatalf("%d Deployments; want %d", len(before), n+optedOut)
	}
	w := &fleetWatch{deployments: map[string]*appsv1.Deployment{}, exempt: map[string]bool{}, changed: func(d *appsv1.Deployment) bool {
		digest := d.Spec.Template.Annotations[configDigestAnnotation]
		return digest != "" && digest != before[d.Name].Spec.Template.Annotations[configDigestAnnotation]
	}}
	for _, d := range before {
		w.observe(d)
	}
	watchFleet(t, ns, list.ResourceVersion, w)
	said := watchWaiting(t, ns)

	o := extraOperator(t, "fleet-config", sharedArgs(fmt.Sprintf("-fleet-rollout-budget=%d", budget)))
	if err := o.start(); err != nil {
		t.Fatalf("starting the operator with a fleet budget: %v", err)
	}
	changeConfigMap(t, ns, "shared", "two")

	eventually(t, 5*time.Minute, fmt.Sprintf("the %d Deployments rolled out with the new config digest", n), func(ctx context.Context) (bool, string, error) {
		list, err := env.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		rolled := 0
		for i := range list.Items {
			if d := &list.Items[i]; !stays[d.Name] && w.hasChange(d) && deploymentSettled(d) {
				rolled++
			}
		}
		return rolled == n, fmt.Sprintf("%d rolled out", rolled), nil
	})
	// Those that waited said Synced=False: Synced again, they caught up.
	waitForSettledRobots(t, ns, n+optedOut, true)

	w.mu.Lock()
	maxRolling, maxAt := w.maxRolling, w.maxAt
	w.mu.Unlock()
	t.Logf("at most %d Deployments rolled the new config digest at once: %v", maxRolling, maxAt)
	if maxRolling > budget {
		t.Errorf("%d Deployments rolled the new config digest at once, %v; the budget is %d", maxRolling, maxAt, budget)
	}
	if maxRolling == 0 {
		t.Error("no Deployment was seen rolling the new config digest: the watch saw nothing")
	}
	checkWaitersSaid(t, said, stays, n-2*budget)
	for name := range stays {
		after := getDeployment(t, ns, name)
		if after.Generation != before[name].Generation || after.ResourceVersion != before[name].ResourceVersion ||
			!equality.Semantic.DeepEqual(after.Spec.Template, before[name].Spec.Template) {
			t.Errorf("the Deployment of %s, which does not roll on config changes, was written: generation %d → %d, resourceVersion %s → %s, template annotations %v",
				name, before[name].Generation, after.Generation, before[name].ResourceVersion, after.ResourceVersion, after.Spec.Template.Annotations)
		}
	}
}

// waitForSettledRobots waits until the count Robots of ns are settled; and
// Synced, when synced is set.
func waitForSettledRobots(t *testing.T, ns string, count int, synced bool) {
	t.Helper()
	eventually(t, 5*time.Minute, fmt.Sprintf("the %d Robots are Ready", count), func(ctx context.Context) (bool, string, error) {
		robots, err := env.robots.RobotV1beta1().Robots(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		settled, last := 0, ""
		for i := range robots.Items {
			robot := &robots.Items[i]
			if robotSettled(robot) && (!synced || meta.IsStatusConditionTrue(robot.Status.Conditions, robotv1beta1.ConditionSynced)) {
				settled++
			} else {
				last = summarizeRobot(robot)
			}
		}
		return settled == count, fmt.Sprintf("%d of %d settled; not yet: %s", settled, len(robots.Items), last), nil
	})
}

// watchFleet feeds w the Deployments of ns from resourceVersion on, until
// the test ends.
func watchFleet(t *testing.T, ns, resourceVersion string, w *fleetWatch) {
	t.Helper()
	deployments, err := env.kube.AppsV1().Deployments(ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: resourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(deployments.Stop)
	go func() {
		for event := range deployments.ResultChan() {
			if d, ok := event.Object.(*appsv1.Deployment); ok && event.Type != watch.Deleted {
				w.observe(d)
			}
		}
	}()
}

// watchWaiting returns the Robots of ns that said they wait for the fleet
// budget, by name, with what they said, until the test ends.
func watchWaiting(t *testing.T, ns string) *sync.Map {
	t.Helper()
	var said sync.Map
	robots, err := env.robots.RobotV1beta1().Robots(ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(robots.Stop)
	go func() {
		for event := range robots.ResultChan() {
			if robot, ok := event.Object.(*robotv1beta1.Robot); ok {
				if synced := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced); synced != nil && synced.Reason == robotv1beta1.ReasonWaitingForFleetBudget {
					said.Store(robot.Name, synced.Message)
				}
			}
		}
	}()
	return &said
}

// checkWaitersSaid fails t unless at least atLeast Robots said they waited
// for the fleet budget, none of them one of stays.
func checkWaitersSaid(t *testing.T, said *sync.Map, stays map[string]bool, atLeast int) {
	t.Helper()
	var names []string
	var message any
	said.Range(func(name, m any) bool {
		names = append(names, name.(string))
		message = m
		if stays[name.(string)] {
			t.Errorf("Robot %s, which does not roll on config changes, said it waited for the fleet budget: %s", name, m)
		}
		return true
	})
	t.Logf("%d Robots said they waited; one said: %v", len(names), message)
	if len(names) < atLeast {
		t.Errorf("%d Robots said they waited for the fleet budget (%s); want at least %d", len(names), strings.Join(names, ", "), atLeast)
	}
}
