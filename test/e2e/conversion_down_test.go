//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestWebhookDown: with no replica serving the conversion webhook, what
// uses the stored version (v1beta1 clients, the garbage collector) goes on,
// v1alpha1 requests fail with the API server's message naming the webhook,
// and everything converges once a replica is back.
//
// It runs among the exclusive tests before upgrade_test.go's, which delete
// the Robot CRD and make it again: after that, Kubernetes 1.35's garbage
// collector was seen not to watch Robots for minutes, and deleted no
// Deployment of a deleted Robot in that time.
func TestWebhookDown(t *testing.T) {
	exclusive(t, "stops the shared operator, and with it the only conversion webhook")
	ctx := t.Context()
	ns := newNamespace(t)
	waitForConversion(t, ns)
	for _, name := range []string{"kept", "deleted"} {
		createRobot(t, newRobot(ns, name, 1))
		waitForRobotReady(t, ns, name)
	}
	deleted := getDeployment(t, ns, "deleted")

	pauseSharedOperator(t)

	// v1alpha1: refused, with a message that says why.
	_, err := env.robots.RobotV1alpha1().Robots(ns).Get(ctx, "kept", metav1.GetOptions{})
	if err == nil || !strings.Contains(err.Error(), "conversion webhook") {
		t.Errorf("a v1alpha1 read with no webhook: error %v, want the API server's about the conversion webhook", err)
	} else {
		t.Logf("v1alpha1 refused: %v", err)
	}

	// v1beta1: reads and writes go on.
	if _, err := env.robots.RobotV1beta1().Robots(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("a v1beta1 list with no webhook: %v", err)
	}
	if _, err := env.robots.RobotV1beta1().Robots(ns).Patch(ctx, "kept", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("a v1beta1 write with no webhook: %v", err)
	}
	createRobot(t, newRobot(ns, "new", 1))

	// The garbage collector deletes the Deployment of a deleted Robot: it
	// reads Robots as stored.
	if err := env.robots.RobotV1beta1().Robots(ns).Delete(ctx, "deleted", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatalf("deleting a Robot with no webhook: %v", err)
	}
	eventually(t, convergeTimeout, "the garbage collector deletes the deleted Robot's Deployment", func(ctx context.Context) (bool, string, error) {
		d, err := env.kube.AppsV1().Deployments(ns).Get(ctx, "deleted", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, err.Error(), nil
		}
		if d.UID != deleted.UID {
			return false, "another Deployment of that name", nil
		}
		return false, "still there", nil
	})

	// A replica returns: the writes made meanwhile converge, and v1alpha1
	// answers again.
	if err := env.operator.start(); err != nil {
		t.Fatalf("starting the operator again: %v", err)
	}
	waitForDeployment(t, ns, "kept", "has 2 replicas", func(d *appsv1.Deployment) bool { return ptr.Deref(d.Spec.Replicas, 1) == 2 })
	waitForRobotReady(t, ns, "kept")
	waitForRobotReady(t, ns, "new")
	waitForConversion(t, ns)
}
