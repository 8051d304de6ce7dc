//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// poolNode creates a fake node of the test's own, labelled and tainted with
// pool so that only the pods that ask for it run there, and deletes it when
// the test ends. It can then be cordoned without holding up any other test.
func poolNode(t *testing.T, pool string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pool,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels:      map[string]string{"type": "kwok", "e2e.robot.dev/drain-pool": pool, corev1.LabelHostname: pool},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "e2e.robot.dev/drain-pool", Value: pool, Effect: corev1.TaintEffectNoSchedule}}},
	}
	created, err := env.kube.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating node %s: %v", pool, err)
	}
	t.Cleanup(func() {
		if err := env.kube.CoreV1().Nodes().Delete(context.WithoutCancel(t.Context()), pool, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", pool, err)
		}
	})
	return created
}

// waitForBudget waits until the budget named name in ns satisfies done.
func waitForBudget(t *testing.T, ns, name, what string, done func(*policyv1.PodDisruptionBudget) bool) *policyv1.PodDisruptionBudget {
	t.Helper()
	var budget *policyv1.PodDisruptionBudget
	eventually(t, convergeTimeout, "PodDisruptionBudget "+name+" "+what, func(ctx context.Context) (bool, string, error) {
		b, err := env.kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "none", nil
		}
		if err != nil {
			return false, "", err
		}
		budget = b
		return done(b), fmt.Sprintf("maxUnavailable %v, disruptionsAllowed %d, observedGeneration %d of %d",
			b.Spec.MaxUnavailable, b.Status.DisruptionsAllowed, b.Status.ObservedGeneration, b.Generation), nil
	})
	return budget
}

// TestDisruptionBudget: a Robot of three replicas gets a budget that lets a
// drain evict one pod at a time. With its pods on a node of their own,
// cordoned so that an evicted pod stays down, the eviction API lets one pod
// go and refuses the second while the first is down. Loosened by hand, the
// budget is put back; at one replica it goes; a maxUnavailable the Robot
// sets brings it back whatever the replicas; a budget that would block
// every drain is refused.
func TestDisruptionBudget(t *testing.T) {
	parallel(t)
	// The node goes after the namespace: its cleanup, registered first,
	// runs last, so the pods are not left on a node that is gone.
	pool := "e2e-pool-" + rand.String(6)
	poolNode(t, pool)
	ns := newNamespace(t)
	robot := newRobot(ns, "drained", 3)
	robot.Spec.Placement.NodeSelector = map[string]string{"e2e.robot.dev/drain-pool": pool}
	robot.Spec.Placement.Tolerations = []corev1.Toleration{{Key: "e2e.robot.dev/drain-pool", Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}}
	robot = createRobot(t, robot)
	robot = waitForRobotReady(t, ns, "drained")
	pods := waitForPods(t, ns, robot.Status.Selector, 3, image1)

	budget := waitForBudget(t, ns, "drained", "lets one pod go", func(b *policyv1.PodDisruptionBudget) bool {
		return b.Status.ObservedGeneration == b.Generation && b.Status.DisruptionsAllowed == 1
	})
	if ref := metav1.GetControllerOf(budget); ref == nil || ref.UID != robot.UID {
		t.Errorf("budget controlled by %s, want the Robot", describeOwner(ref))
	}
	if mu := budget.Spec.MaxUnavailable; mu == nil || *mu != intstr.FromInt32(1) {
		t.Errorf("maxUnavailable %v, want 1", mu)
	}
	if p := budget.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
		t.Errorf("unhealthyPodEvictionPolicy %v, want AlwaysAllow", p)
	}

	// The drain: no pod replaces an evicted one on the cordoned node.
	mustKubectl(t, "cordon", pool)
	evict := func(pod corev1.Pod) error {
		return env.kube.PolicyV1().Evictions(ns).Evict(t.Context(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}})
	}
	if err := evict(pods[0]); err != nil {
		t.Fatalf("the first eviction: %v, want it let through", err)
	}
	err := evict(pods[1])
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "disruption budget") {
		t.Fatalf("the second eviction while the first pod is down: %v, want 429, refused by the disruption budget", err)
	}
	mustKubectl(t, "uncordon", pool)
	waitForPods(t, ns, robot.Status.Selector, 3, image1)

	// Loosened by hand, as kubectl edit would: put back.
	if _, err := env.kube.PolicyV1().PodDisruptionBudgets(ns).Patch(t.Context(), "drained", "application/merge-patch+json",
		[]byte(`{"spec":{"maxUnavailable":"100%"}}`), metav1.PatchOptions{FieldManager: "e2e-hand-edit"}); err != nil {
		t.Fatal(err)
	}
	waitForBudget(t, ns, "drained", "has maxUnavailable 1 back", func(b *policyv1.PodDisruptionBudget) bool {
		return b.Spec.MaxUnavailable != nil && *b.Spec.MaxUnavailable == intstr.FromInt32(1)
	})

	// One replica: a budget would block every drain, so there is none.
	patchRobot(t, ns, "drained", `{"spec":{"replicas":1}}`)
	eventually(t, convergeTimeout, "the budget of one replica is deleted", func(ctx context.Context) (bool, string, error) {
		_, err := env.kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "drained", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
	// Asked for, it comes back, with the Robot's figure.
	patchRobot(t, ns, "drained", `{"spec":{"disruptionBudget":{"maxUnavailable":"50%"}}}`)
	waitForBudget(t, ns, "drained", "has maxUnavailable 50%", func(b *policyv1.PodDisruptionBudget) bool {
		return b.Spec.MaxUnavailable != nil && *b.Spec.MaxUnavailable == intstr.FromString("50%")
	})

	// Budgets that would block every drain, or say two things, are refused.
	for _, tc := range []struct{ patch, message string }{
		{`{"spec":{"disruptionBudget":{"maxUnavailable":0}}}`, "a budget of 0 blocks every drain"},
		{`{"spec":{"disruptionBudget":{"maxUnavailable":"0%"}}}`, "a budget of 0 blocks every drain"},
		{`{"spec":{"disruptionBudget":{"maxUnavailable":1,"disabled":true}}}`, "set maxUnavailable, or disabled, not both"},
	} {
		_, err := env.robots.RobotV1beta1().Robots(ns).Patch(t.Context(), "drained", "application/merge-patch+json", []byte(tc.patch), metav1.PatchOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.message) {
			t.Errorf("patch %s: %v, want refused with %q", tc.patch, err, tc.message)
		}
	}
	robot = getRobot(t, ns, "drained")
	if got := robot.Spec.DisruptionBudget; got == nil || ptr.Deref(got.MaxUnavailable, intstr.IntOrString{}) != intstr.FromString("50%") {
		t.Errorf("after the refused patches the Robot asks for %+v, want maxUnavailable 50%%", got)
	}
}

// unmanagedAnnotation takes a Robot's PodDisruptionBudget out of the
// operator's hands.
const unmanagedAnnotation = `{"metadata":{"annotations":{"robot.dev/disruption-budget":"unmanaged"}}}`

// pinnedRobot creates a Robot of two replicas that can run only on a fake
// node of the test's own, one pod a node: one pod runs there, the other can
// never be scheduled. Its budget then allows no eviction, and the drain of
// that node waits forever.
func pinnedRobot(t *testing.T, ns, name string) {
	t.Helper()
	pool := "e2e-pin-" + rand.String(6)
	poolNode(t, pool)
	robot := newRobot(ns, name, 2)
	robot.Spec.Placement.NodeSelector = map[string]string{"e2e.robot.dev/drain-pool": pool}
	robot.Spec.Placement.Tolerations = []corev1.Toleration{{Key: "e2e.robot.dev/drain-pool", Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}}
	robot.Spec.Placement.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"robot.dev/name": name}},
		}},
	}}
	createRobot(t, robot)
}

// evictRunning tries to evict the Robot's pod that runs, and returns the
// eviction API's answer.
func evictRunning(t *testing.T, ns, selector string) error {
	t.Helper()
	pods, err := env.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		if podRunningAndReady(&pod) {
			return env.kube.PolicyV1().Evictions(ns).Evict(t.Context(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}})
		}
	}
	t.Fatalf("no pod of %s runs: %s", selector, summarizePods(pods.Items))
	return nil
}

// TestDisruptionBudgetLeftToAnAdministrator: a Robot with a pod that can
// never be scheduled holds its node's drain, since its budget allows no
// eviction. An administrator who annotates the budget unmanaged and loosens
// it keeps it loosened: the operator neither puts it back nor deletes it
// when the Robot stops asking for one, and the drain goes on. Without the
// annotation the budget is the operator's again. While the budget holds the
// drain, the Robot says so.
func TestDisruptionBudgetLeftToAnAdministrator(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	pinnedRobot(t, ns, "pinned")
	budgets := env.kube.PolicyV1().PodDisruptionBudgets(ns)
	waitForBudget(t, ns, "pinned", "allows no eviction, one pod healthy", func(b *policyv1.PodDisruptionBudget) bool {
		return b.Status.ObservedGeneration == b.Generation && b.Status.CurrentHealthy == 1 && b.Status.DisruptionsAllowed == 0
	})
	selector := "robot.dev/name=pinned"
	if err := evictRunning(t, ns, selector); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting the pod that runs: %v, want 429, refused by the disruption budget", err)
	}
	// The Robot says why it is not Ready, and that its budget holds drains;
	// Stalled says the same, so kstatus reads it as Failed, as before.
	const blocks = `PodDisruptionBudget "pinned" allows no eviction (1 of 2 pods healthy, 1 must stay)`
	waitForRobot(t, ns, "pinned", convergeTimeout, "says its budget blocks evictions", func(r *robotv1beta1.Robot) bool {
		ready, stalled := readyCondition(r), meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionStalled)
		return ready != nil && ready.Reason == robotv1beta1.ReasonUnschedulable && strings.Contains(ready.Message, blocks) &&
			stalled != nil && stalled.Status == metav1.ConditionTrue && stalled.Message == ready.Message
	})

	// The administrator takes the budget over, and loosens it.
	if _, err := budgets.Patch(t.Context(), "pinned", types.MergePatchType, []byte(unmanagedAnnotation), metav1.PatchOptions{FieldManager: "e2e-admin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := budgets.Patch(t.Context(), "pinned", types.MergePatchType, []byte(`{"spec":{"maxUnavailable":2}}`), metav1.PatchOptions{FieldManager: "e2e-admin"}); err != nil {
		t.Fatal(err)
	}
	// The operator put an edit back within 4 s: give it three times that.
	holds(t, 12*time.Second, "the loosened budget", func(ctx context.Context) (bool, string, error) {
		b, err := budgets.Get(ctx, "pinned", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return b.Spec.MaxUnavailable != nil && *b.Spec.MaxUnavailable == intstr.FromInt32(2), fmt.Sprintf("maxUnavailable %v", b.Spec.MaxUnavailable), nil
	})
	waitForBudget(t, ns, "pinned", "allows an eviction", func(b *policyv1.PodDisruptionBudget) bool {
		return b.Status.ObservedGeneration == b.Generation && b.Status.DisruptionsAllowed >= 1
	})
	waitForRobot(t, ns, "pinned", convergeTimeout, "no longer says its budget blocks evictions", func(r *robotv1beta1.Robot) bool {
		ready := readyCondition(r)
		return ready != nil && ready.Reason == robotv1beta1.ReasonUnschedulable && !strings.Contains(ready.Message, "allows no eviction")
	})
	if err := evictRunning(t, ns, selector); err != nil {
		t.Fatalf("evicting the pod that runs, under the loosened budget: %v", err)
	}

	// The Robot asks for no budget: the administrator's stays.
	robot := patchRobot(t, ns, "pinned", `{"spec":{"disruptionBudget":{"disabled":true}}}`)
	waitForRobot(t, ns, "pinned", convergeTimeout, "observes the generation that asks for no budget", func(r *robotv1beta1.Robot) bool {
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return r.Status.ObservedGeneration == robot.Generation && synced != nil && synced.ObservedGeneration == robot.Generation
	})
	if _, err := budgets.Get(t.Context(), "pinned", metav1.GetOptions{}); err != nil {
		t.Fatalf("the unmanaged budget, once the Robot asks for none: %v, want it left", err)
	}

	// Handed back: the operator deletes it, as the Robot asks.
	if _, err := budgets.Patch(t.Context(), "pinned", types.MergePatchType, []byte(`{"metadata":{"annotations":{"robot.dev/disruption-budget":null}}}`), metav1.PatchOptions{FieldManager: "e2e-admin"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, convergeTimeout, "the budget handed back is deleted", func(ctx context.Context) (bool, string, error) {
		_, err := budgets.Get(ctx, "pinned", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
}

// holds checks, for d, that check keeps saying true.
func holds(t *testing.T, d time.Duration, what string, check func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, seen, err := check(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !ok {
			t.Fatalf("%s did not hold for %v: %s", what, d, seen)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(pollInterval)
	}
}
