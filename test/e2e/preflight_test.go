//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// The tests of this file change a running Robot into something the cluster
// refuses (Pod Security, a ResourceQuota, a missing ConfigMap key), and
// check that the change never reaches the Deployment: its template and
// generation stay, the old pods keep running, and the Robot says
// Synced=False, ChangeRejected, with the API server's message and one
// Warning event. Then the Robot is fixed, and the change goes through.

// expectRejected waits until the Robot says its change was rejected with
// a message holding says, and checks that the Deployment is still before,
// its pods still running image1, and that one Warning was recorded.
func expectRejected(t *testing.T, ns, name string, before *appsv1.Deployment, says string) {
	t.Helper()
	robot := waitForRobot(t, ns, name, convergeTimeout, "says ChangeRejected", func(r *robotv1beta1.Robot) bool {
		synced := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return synced != nil && synced.Status == metav1.ConditionFalse && synced.Reason == robotv1beta1.ReasonChangeRejected &&
			synced.ObservedGeneration == r.Generation
	})
	synced := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced)
	if !strings.Contains(synced.Message, says) {
		t.Errorf("Synced says %q; want it to hold %q", synced.Message, says)
	}
	// A sync that wrote the Deployment would do so before the status:
	// give a late one a moment all the same.
	time.Sleep(2 * time.Second)
	after := getDeployment(t, ns, before.Name)
	if after.Generation != before.Generation || !apiequality.Semantic.DeepEqual(after.Spec.Template, before.Spec.Template) {
		t.Errorf("the rejected change reached the Deployment: generation %d, was %d; image %s", after.Generation, before.Generation,
			after.Spec.Template.Spec.Containers[0].Image)
	}
	waitForPods(t, ns, robot.Status.Selector, 1, image1)
	events := waitForEvents(t, ns, robot.UID, robotv1beta1.ReasonChangeRejected, 1)
	if n := eventCount(events); n != 1 || events[0].Type != corev1.EventTypeWarning {
		t.Errorf("want one Warning %s, got %s", robotv1beta1.ReasonChangeRejected, summarizeEvents(events))
	}
}

// expectThrough waits until the fixed change runs: the Robot Ready with
// its pods on image2.
func expectThrough(t *testing.T, ns, name string) {
	t.Helper()
	robot := waitForRobotReady(t, ns, name)
	waitForPods(t, ns, robot.Status.Selector, 1, image2)
}

// runningRobot creates robot, waits until it is Ready, and returns its
// Deployment.
func runningRobot(t *testing.T, robot *robotv1beta1.Robot) *appsv1.Deployment {
	t.Helper()
	createRobot(t, robot)
	stored := waitForRobotReady(t, robot.Namespace, robot.Name)
	waitForPods(t, robot.Namespace, stored.Status.Selector, 1, image1)
	return getDeployment(t, robot.Namespace, robot.Name)
}

func TestChangeRejectedByPodSecurity(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	robot := newRobot(ns, "web", 1)
	robot.Spec.SecurityProfile = robotv1beta1.SecurityProfileRestricted
	before := runningRobot(t, robot)
	patch := `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`
	if _, err := env.kube.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	patchRobot(t, ns, "web", fmt.Sprintf(`{"spec":{"image":%q,"securityProfile":"baseline"}}`, image2))
	expectRejected(t, ns, "web", before, `violates PodSecurity "restricted:latest"`)

	patchRobot(t, ns, "web", `{"spec":{"securityProfile":"restricted"}}`)
	expectThrough(t, ns, "web")
}

func TestChangeRejectedByQuota(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "cpu", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")}}}
	if _, err := env.kube.CoreV1().ResourceQuotas(ns).Create(t.Context(), quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, convergeTimeout, "the ResourceQuota counted", func(ctx context.Context) (bool, string, error) {
		q, err := env.kube.CoreV1().ResourceQuotas(ns).Get(ctx, "cpu", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		_, counted := q.Status.Hard[corev1.ResourceRequestsCPU]
		return counted, fmt.Sprintf("status %v", q.Status), nil
	})
	robot := newRobot(ns, "web", 1)
	robot.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	before := runningRobot(t, robot)

	patchRobot(t, ns, "web", fmt.Sprintf(`{"spec":{"image":%q,"resources":{"requests":{"cpu":"2"}}}}`, image2))
	expectRejected(t, ns, "web", before, "exceeded quota: cpu")

	patchRobot(t, ns, "web", `{"spec":{"resources":{"requests":{"cpu":"200m"}}}}`)
	expectThrough(t, ns, "web")
}

func TestChangeRejectedByMissingConfigMapKey(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns},
		Data: map[string]string{"level": "info", "mode": "quiet"}}
	if _, err := env.kube.CoreV1().ConfigMaps(ns).Create(t.Context(), settings, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fromKey := func(key string) string {
		return fmt.Sprintf(`[{"name":"SETTING","valueFrom":{"configMapKeyRef":{"name":"settings","key":%q}}}]`, key)
	}
	robot := newRobot(ns, "web", 1)
	robot.Spec.Env = []corev1.EnvVar{{Name: "SETTING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "level"}}}}
	before := runningRobot(t, robot)

	patchRobot(t, ns, "web", fmt.Sprintf(`{"spec":{"image":%q,"env":%s}}`, image2, fromKey("levels")))
	expectRejected(t, ns, "web", before, `ConfigMap "settings" has no key "levels"`)

	patchRobot(t, ns, "web", fmt.Sprintf(`{"spec":{"env":%s}}`, fromKey("mode")))
	expectThrough(t, ns, "web")
}
