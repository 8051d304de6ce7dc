//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestApplyNeverLandsOnAReplacedDeployment: an apply that the operator sends
// from its cache's copy of a Robot's Deployment never lands on another
// Deployment of that name, created by someone else after the first was
// deleted: the apply names the UID it expects, and the API server refuses it
// for another object. Without that, the forced apply would make the Robot the
// other Deployment's controller, and the garbage collector would delete it
// with the Robot. A proxy holds the operator's apply (a revert of a scale)
// while the Deployment is deleted and replaced.
func TestApplyNeverLandsOnAReplacedDeployment(t *testing.T) {
	exclusive(t, "it pauses the shared operator and runs one of its own through a proxy")
	o, proxy := startOperatorThroughProxy(t, "apply-replaced")
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "web", 1))
	waitForRobot(t, ns, "web", convergeTimeout, "is settled", robotSettled)
	first := getDeployment(t, ns, "web")

	// Hold the operator's next server-side apply of Deployment web.
	path := "/apis/apps/v1/namespaces/" + ns + "/deployments/web"
	proxy.hold(func(r *http.Request) bool {
		return r.Method == http.MethodPatch && r.URL.Path == path && strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch")
	})
	// Another writer scales the Deployment: the operator reverts it with an
	// apply, which the proxy holds.
	scaled := first.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](3)
	if _, err := env.kube.AppsV1().Deployments(ns).Update(t.Context(), scaled, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("scaling Deployment %s/web: %v", ns, err)
	}
	eventually(t, convergeTimeout, "the operator's apply of Deployment web is held", func(context.Context) (bool, string, error) {
		held := proxy.heldRequests()
		return len(held) > 0, fmt.Sprint(held), nil
	})

	// Meanwhile the Deployment is deleted, and someone else creates one of
	// the same name.
	if err := env.kube.AppsV1().Deployments(ns).Delete(t.Context(), "web",
		metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(first.UID))}); err != nil {
		t.Fatalf("deleting Deployment %s/web: %v", ns, err)
	}
	waitForDeploymentGone(t, ns, "web")
	theirs, err := env.kube.AppsV1().Deployments(ns).Create(t.Context(), someoneElsesDeployment(ns, "web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating someone else's Deployment %s/web: %v", ns, err)
	}
	proxy.release()
	t.Logf("held, then let through: %v", proxy.heldRequests())

	// The Robot reports the name taken; theirs stays as they made it.
	waitForRobotReason(t, ns, "web", metav1.ConditionFalse, robotv1beta1.ReasonDeploymentNameTaken, convergeTimeout)
	time.Sleep(3 * time.Second)
	now := getDeployment(t, ns, "web")
	if now.UID != theirs.UID || !maps.Equal(now.Labels, theirs.Labels) || metav1.GetControllerOf(now) != nil ||
		len(now.Spec.Template.Spec.Containers) != 1 || now.Spec.Template.Spec.Containers[0].Name != "app" {
		t.Errorf("someone else's Deployment changed: labels %v -> %v, controller %s, containers %s",
			theirs.Labels, now.Labels, describeOwner(metav1.GetControllerOf(now)), summarizeDeployment(now))
	}
	for _, entry := range now.ManagedFields {
		if entry.Manager == fieldManager {
			t.Errorf("someone else's Deployment has fields managed by %s: %s %s", fieldManager, entry.Operation, entry.FieldsV1)
		}
	}
	// The refused apply is an ordinary retry, not a spec the API server
	// refuses: no InvalidSpec Warning.
	robot := getRobot(t, ns, "web")
	if events, err := robotEvents(t.Context(), ns, robot.UID, robotv1beta1.ReasonInvalidSpec); err != nil {
		t.Fatal(err)
	} else if len(events) > 0 {
		t.Errorf("the refused apply was reported as an invalid spec: %s", summarizeEvents(events))
	}
	terminate(t, o)
	waitExitedCleanly(t, o, 40*time.Second)
}
