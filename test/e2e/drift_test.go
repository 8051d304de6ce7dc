//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestDriftIsReverted: changes someone makes to fields of a Robot's
// Deployment that the operator owns are reverted; what they add that the
// operator does not own stays.
func TestDriftIsReverted(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	robot := createRobot(t, newRobot(ns, "web", 2))
	waitForRobotReady(t, ns, "web")

	const note = "e2e.robot.dev/note"
	mustKubectl(t, "annotate", "deployment/web", note+"=keep-me", "-n", ns)

	mustKubectl(t, "scale", "deployment/web", "--replicas=5", "-n", ns)
	waitForDeployment(t, ns, "web", "is back at 2 replicas", func(d *appsv1.Deployment) bool { return ptr.Deref(d.Spec.Replicas, 1) == 2 })
	waitForEventMessage(t, ns, robot, "DeploymentUpdated", "spec.replicas is 5; the Robot asks for 2")

	mustKubectl(t, "set", "image", "deployment/web", containerName+"=nginx:1.27", "-n", ns)
	d := waitForDeployment(t, ns, "web", "runs "+image1+" again", func(d *appsv1.Deployment) bool { return robotContainer(t, d).Image == image1 })
	waitForEventMessage(t, ns, robot, "DeploymentUpdated", fmt.Sprintf(`containers[name=%q].image is %q; the Robot asks for %q`, containerName, "nginx:1.27", image1))

	if got := d.Annotations[note]; got != "keep-me" {
		t.Errorf("annotation %s = %q after the operator reverted the drift, want %q (annotations: %v)", note, got, "keep-me", d.Annotations)
	}
	robot = waitForRobotReady(t, ns, "web")
	waitForPods(t, ns, robot.Status.Selector, 2, image1)
	if got := getDeployment(t, ns, "web").Annotations[note]; got != "keep-me" {
		t.Errorf("annotation %s = %q once the Robot is Ready again, want %q", note, got, "keep-me")
	}
	events, err := robotEvents(t.Context(), ns, robot.UID, "DeploymentUpdated")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("DeploymentUpdated events: %s", summarizeEvents(events))
}

// waitForEventMessage waits for an event about the Robot with the given
// reason and a message that contains text.
func waitForEventMessage(t *testing.T, ns string, robot *robotv1beta1.Robot, reason, text string) {
	t.Helper()
	eventually(t, convergeTimeout, fmt.Sprintf("a %s event saying %q", reason, text), func(ctx context.Context) (bool, string, error) {
		events, err := robotEvents(ctx, ns, robot.UID, reason)
		if err != nil {
			return false, "", err
		}
		for _, e := range events {
			if strings.Contains(e.Message, text) {
				return true, summarizeEvents(events), nil
			}
		}
		return false, summarizeEvents(events), nil
	})
}

// TestDeploymentNameTaken: a Robot whose Deployment name is taken by a
// Deployment it does not control leaves that Deployment alone, says so once,
// and converges soon after the name is free.
func TestDeploymentNameTaken(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	labels := map[string]string{"app": "someone-else"}
	theirs, err := env.kube.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating someone else's Deployment %s/web: %v", ns, err)
	}
	// Let the Deployment controller finish with it, so that its
	// resourceVersion stays put unless someone else writes it.
	theirs = waitForDeployment(t, ns, "web", "of someone else has rolled out", deploymentSettled)

	start := time.Now()
	robot := createRobot(t, newRobot(ns, "web", 1))
	robot = waitForRobotReason(t, ns, "web", metav1.ConditionFalse, robotv1beta1.ReasonDeploymentNameTaken, convergeTimeout)
	if msg := readyCondition(robot).Message; !strings.Contains(msg, `Deployment "web"`) {
		t.Errorf("the Ready message does not name the Deployment: %q", msg)
	}
	waitForEvents(t, ns, robot.UID, robotv1beta1.ReasonDeploymentNameTaken, 1)

	// Some seconds on: the other Deployment is untouched, and the Robot has
	// said so once.
	time.Sleep(5 * time.Second)
	now := getDeployment(t, ns, "web")
	if now.ResourceVersion != theirs.ResourceVersion || !maps.Equal(now.Labels, theirs.Labels) || metav1.GetControllerOf(now) != nil {
		t.Errorf("someone else's Deployment changed: resourceVersion %s -> %s, labels %v -> %v, controller %s",
			theirs.ResourceVersion, now.ResourceVersion, theirs.Labels, now.Labels, describeOwner(metav1.GetControllerOf(now)))
	}
	for _, entry := range now.ManagedFields {
		if entry.Manager == fieldManager {
			t.Errorf("someone else's Deployment has fields managed by %s: %+v", fieldManager, entry)
		}
	}
	if env.audit.err != nil {
		t.Logf("not checking the audit log for writes to someone else's Deployment: %v", env.audit.err)
	} else {
		writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: start, Namespace: ns, Resource: "deployments", Name: "web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range writes {
			if !w.refusedCreate() {
				t.Errorf("the operator wrote someone else's Deployment: %s", &w)
			}
		}
	}
	events, err := robotEvents(t.Context(), ns, robot.UID, robotv1beta1.ReasonDeploymentNameTaken)
	if err != nil {
		t.Fatal(err)
	}
	if n := eventCount(events); n != 1 || len(events) != 1 || events[0].Type != corev1.EventTypeWarning {
		t.Errorf("want exactly one Warning event %s about the Robot, got %s", robotv1beta1.ReasonDeploymentNameTaken, summarizeEvents(events))
	}

	// Free the name: the Robot converges within its recheck period.
	if err := env.kube.AppsV1().Deployments(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting someone else's Deployment: %v", err)
	}
	waitForRobot(t, ns, "web", 60*time.Second, "is Ready once the name is free", robotConverged)
	checkControlledBy(t, getDeployment(t, ns, "web"), robot)
}

// TestForeignFieldConflict: another writer sets privileged: true on the
// Robot's container (and allowPrivilegeEscalation: true, which privileged
// requires). The operator's apply puts allowPrivilegeEscalation: false
// back, which the API server refuses next to privileged: true. That is not
// the Robot's spec being invalid: the Robot says which field, set by whom,
// warns once, retries with backoff, and converges by itself once the other
// writer takes its field back.
func TestForeignFieldConflict(t *testing.T) {
	parallel(t)
	requireAuditLog(t)
	ns := newNamespace(t)
	robot := createRobot(t, newRobot(ns, "web", 1))
	waitForRobot(t, ns, "web", convergeTimeout, "is settled", robotSettled)

	const otherWriter = "e2e-privileged-writer"
	setPrivileged := func(privileged bool) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := env.kube.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			c := robotContainer(t, d)
			if c.SecurityContext == nil {
				c.SecurityContext = &corev1.SecurityContext{}
			}
			if privileged {
				c.SecurityContext.Privileged = ptr.To(true)
				c.SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
			} else {
				c.SecurityContext.Privileged = nil
			}
			_, err = env.kube.AppsV1().Deployments(ns).Update(t.Context(), d, metav1.UpdateOptions{FieldManager: otherWriter})
			return err
		})
		if err != nil {
			t.Fatalf("setting privileged=%v on Deployment %s/web as %s: %v", privileged, ns, otherWriter, err)
		}
	}

	start := time.Now()
	setPrivileged(true)
	robot = waitForRobot(t, ns, "web", convergeTimeout, "reports the conflict with the other writer's field", func(r *robotv1beta1.Robot) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == robotv1beta1.ReasonFieldConflict
	})
	synced := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced)
	for _, want := range []string{otherWriter, "securityContext.privileged"} {
		if !strings.Contains(synced.Message, want) {
			t.Errorf("the Synced message does not name %q: %q", want, synced.Message)
		}
	}
	if ready := readyCondition(robot); ready == nil || ready.Reason == robotv1beta1.ReasonInvalidSpec {
		t.Errorf("Ready blames the Robot's spec: %s", summarizeRobot(robot))
	}

	// It keeps trying, with backoff: a few attempts, not a storm.
	time.Sleep(15 * time.Second)
	attempts, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: start, Namespace: ns, Resource: "deployments", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the operator tried %d times in %v", len(attempts), time.Since(start).Round(time.Second))
	if len(attempts) < 2 || len(attempts) > 20 {
		t.Errorf("%d attempts to apply in %v, want a few retries with backoff (2 to 20)", len(attempts), time.Since(start).Round(time.Second))
	}
	// The operator writes its Events after the sync that recorded them, and
	// on a busy cluster that can take a while.
	events := waitForEvents(t, ns, robot.UID, robotv1beta1.ReasonFieldConflict, 1)
	if n := eventCount(events); n != 1 || events[0].Type != corev1.EventTypeWarning {
		t.Errorf("want exactly one Warning %s, got %s", robotv1beta1.ReasonFieldConflict, summarizeEvents(events))
	}

	// The other writer takes its field back: the Robot converges.
	setPrivileged(false)
	robot = waitForRobot(t, ns, "web", convergeTimeout, "is synced and settled again", func(r *robotv1beta1.Robot) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return robotSettled(r) && c != nil && c.Status == metav1.ConditionTrue
	})
	if sc := robotContainer(t, getDeployment(t, ns, "web")).SecurityContext; sc == nil || !ptr.Equal(sc.AllowPrivilegeEscalation, ptr.To(false)) {
		t.Errorf("allowPrivilegeEscalation was not put back to false: %+v", sc)
	}
	// Still one Warning, every retry of the conflict counted.
	events, err = robotEvents(t.Context(), ns, robot.UID, robotv1beta1.ReasonFieldConflict)
	if err != nil {
		t.Fatal(err)
	}
	if n := eventCount(events); n != 1 {
		t.Errorf("once converged: want exactly one Warning %s, got %s", robotv1beta1.ReasonFieldConflict, summarizeEvents(events))
	}
}
