//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// outageRecovery is how soon after the API server answers again the
// operator must have acted on what changed while it could not be reached
// (docs/reliability.md).
const outageRecovery = 10 * time.Second

// TestOutageRecovery: after 30 s in which the operator cannot reach the API
// server (its connections refused, as while the API server is down), the
// operator acts on the Robots created and changed meanwhile within
// outageRecovery of the API server answering again. Its informers must not
// wait out a relist back-off built up during the outage, nor its workers a
// per-Robot one.
func TestOutageRecovery(t *testing.T) {
	exclusive(t, "it pauses the shared operator and runs one of its own through a proxy it cuts")
	pauseSharedOperator(t)
	args, proxy := cuttableAPIServerArgs(t, sharedArgs())
	o := extraOperator(t, "outage", args)
	if err := o.start(); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "before", 1))
	waitForRobotReady(t, ns, "before")

	proxy.cut()
	cutAt := time.Now()
	t.Logf("cut the operator off the API server")
	createRobot(t, newRobot(ns, "during", 1))
	patchRobot(t, ns, "before", `{"spec":{"replicas":2}}`)
	time.Sleep(30*time.Second - time.Since(cutAt))
	proxy.restore()
	restored := time.Now()
	t.Logf("let the operator reach the API server again after %v", restored.Sub(cutAt).Round(time.Millisecond))

	var created, scaled time.Time
	eventually(t, convergeTimeout, "the operator acts on what changed during the outage", func(ctx context.Context) (bool, string, error) {
		if created.IsZero() {
			_, err := env.kube.AppsV1().Deployments(ns).Get(ctx, "during", metav1.GetOptions{})
			switch {
			case err == nil:
				created = time.Now()
			case !apierrors.IsNotFound(err):
				return false, "", err
			}
		}
		if scaled.IsZero() {
			d, err := env.kube.AppsV1().Deployments(ns).Get(ctx, "before", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			if ptr.Deref(d.Spec.Replicas, 1) == 2 {
				scaled = time.Now()
			}
		}
		return !created.IsZero() && !scaled.IsZero(), fmt.Sprintf("Deployment during created: %v, Deployment before scaled to 2: %v", !created.IsZero(), !scaled.IsZero()), nil
	})
	t.Logf("after the API server answered again: Deployment during created in %v, Deployment before scaled in %v",
		created.Sub(restored).Round(time.Millisecond), scaled.Sub(restored).Round(time.Millisecond))
	for what, at := range map[string]time.Time{"created Deployment during": created, "scaled Deployment before": scaled} {
		if took := at.Sub(restored); took > outageRecovery {
			t.Errorf("the operator %s %v after the API server answered again, want within %v", what, took.Round(time.Millisecond), outageRecovery)
		}
	}
	waitForRobotReady(t, ns, "during")
	waitForRobotReady(t, ns, "before")
}
