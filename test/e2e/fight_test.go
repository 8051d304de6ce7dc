//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestFightWithAnotherWriter: another client sets the Deployment's replicas
// to 5 every second. The operator keeps putting back the Robot's 2, but
// backs off, so that the fight costs a few writes a minute; the Robot says
// who it fights with, in its Synced condition and one Warning event; and once
// the other writer stops, the Robot converges and is Synced by itself.
func TestFightWithAnotherWriter(t *testing.T) {
	parallel(t)
	const (
		fighter = "e2e-fighter"
		fight   = 75 * time.Second
	)
	ns := newNamespace(t)
	robot := createRobot(t, newRobot(ns, "web", 2))
	waitForRobotReady(t, ns, "web")

	start := time.Now()
	var fighterWrites int
	for time.Since(start) < fight {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := env.kube.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if ptr.Deref(d.Spec.Replicas, 1) == 5 {
				return nil
			}
			d.Spec.Replicas = ptr.To[int32](5)
			_, err = env.kube.AppsV1().Deployments(ns).Update(t.Context(), d, metav1.UpdateOptions{FieldManager: fighter})
			if err == nil {
				fighterWrites++
			}
			return err
		})
		if err != nil {
			t.Fatalf("the other writer: %v", err)
		}
		time.Sleep(time.Second)
	}
	stopped := time.Now()

	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: start, Before: stopped, Namespace: ns, Resource: "deployments", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("during %v of a writer that wrote %d times, the operator wrote the Deployment %d times:\n%v", fight, fighterWrites, len(writes), writes)
	// Three reverts find the fight; then after 15 s, 30 s and 60 s at most.
	if len(writes) > 6 {
		t.Errorf("%d operator writes to the Deployment during the fight, want at most 6", len(writes))
	}
	statusWrites, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: start, Before: stopped, Namespace: ns, Resource: "robots", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("and the Robot's status %d times", len(statusWrites))

	synced := meta.FindStatusCondition(getRobot(t, ns, "web").Status.Conditions, robotv1beta1.ConditionSynced)
	if synced == nil || synced.Status != metav1.ConditionFalse || synced.Reason != robotv1beta1.ReasonDeploymentContested ||
		!strings.Contains(synced.Message, fmt.Sprintf("field manager %q", fighter)) || !strings.Contains(synced.Message, "spec.replicas is 5") {
		t.Errorf("Synced at the end of the fight: %+v; want False, %s, naming %q and spec.replicas", synced, robotv1beta1.ReasonDeploymentContested, fighter)
	}

	// The writer stopped: the Robot's replicas come back, and it is Synced
	// again, with no help.
	waitForRobot(t, ns, "web", 2*time.Minute, "is Synced again after the fight", func(r *robotv1beta1.Robot) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, robotv1beta1.ConditionSynced)
		return c != nil && c.Status == metav1.ConditionTrue && robotConverged(r)
	})
	t.Logf("Synced again %v after the other writer stopped", time.Since(stopped).Round(time.Second))
	if got := ptr.Deref(getDeployment(t, ns, "web").Spec.Replicas, 1); got != 2 {
		t.Errorf("replicas %d after the fight, want 2", got)
	}

	events, err := robotEvents(context.Background(), ns, robot.UID, robotv1beta1.ReasonDeploymentContested)
	if err != nil {
		t.Fatal(err)
	}
	if n := eventCount(events); n != 1 || events[0].Type != corev1.EventTypeWarning || !strings.Contains(events[0].Message, fighter) {
		t.Errorf("%s events: %s; want one Warning naming %q", robotv1beta1.ReasonDeploymentContested, summarizeEvents(events), fighter)
	}
}
