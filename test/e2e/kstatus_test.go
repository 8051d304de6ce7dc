//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	robotac "github.com/robot-operator/robot-operator/pkg/generated/applyconfiguration/robot/v1beta1"
)

// getUnstructured reads a Robot as the API server returns it, as JSON, the
// way Flux and kpt read it: the typed client would drop fields at their
// zero value (observedGeneration: 0).
func getUnstructured(ctx context.Context, ns, name string) (*unstructured.Unstructured, *robotv1beta1.Robot, error) {
	body, err := env.robots.RobotV1beta1().RESTClient().Get().Namespace(ns).Resource("robots").Name(name).DoRaw(ctx)
	if err != nil {
		return nil, nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(body); err != nil {
		return nil, nil, err
	}
	robot := &robotv1beta1.Robot{}
	if err := json.Unmarshal(body, robot); err != nil {
		return nil, nil, err
	}
	return u, robot, nil
}

// kstatusOf computes what kstatus, the library Flux and kpt judge health
// with, says of a Robot as the API server returns it.
func kstatusOf(t *testing.T, u *unstructured.Unstructured) *status.Result {
	t.Helper()
	result, err := status.Compute(u)
	if err != nil {
		t.Fatalf("kstatus: %v", err)
	}
	return result
}

// followKstatus reads the Robot every poll until until says stop, and
// fails the test at the first read where kstatus says Current while the
// Robot is not Ready for its generation. It returns the statuses seen, in
// order, without repeats.
func followKstatus(t *testing.T, ns, name string, timeout time.Duration, until func(*status.Result) bool) []status.Status {
	t.Helper()
	var seen []status.Status
	eventually(t, timeout, "kstatus of Robot "+ns+"/"+name+" settles", func(ctx context.Context) (bool, string, error) {
		u, robot, err := getUnstructured(ctx, ns, name)
		if err != nil {
			return false, err.Error(), nil
		}
		result := kstatusOf(t, u)
		if len(seen) == 0 || seen[len(seen)-1] != result.Status {
			seen = append(seen, result.Status)
		}
		ready := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionReady)
		readyNow := ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == robot.Generation &&
			robot.Status.ObservedGeneration == robot.Generation
		if result.Status == status.CurrentStatus && !readyNow {
			t.Fatalf("kstatus says Current (%s) of a Robot that is not Ready for generation %d: %+v", result.Message, robot.Generation, robot.Status)
		}
		if c := falseProgressCondition(robot); c != nil {
			t.Fatalf("the Robot holds %s=%s: Reconciling and Stalled are there only while True: %+v", c.Type, c.Status, robot.Status.Conditions)
		}
		if readyNow && result.Status == status.CurrentStatus {
			if c := progressCondition(robot); c != nil {
				t.Fatalf("a Ready Robot holds %s=%s: %+v", c.Type, c.Status, robot.Status.Conditions)
			}
		}
		return until(result), fmt.Sprintf("%s: %s", result.Status, result.Message), nil
	})
	return seen
}

// progressCondition returns robot's Reconciling or Stalled condition, nil
// when it has neither.
func progressCondition(robot *robotv1beta1.Robot) *metav1.Condition {
	for _, conditionType := range []string{robotv1beta1.ConditionReconciling, robotv1beta1.ConditionStalled} {
		if c := meta.FindStatusCondition(robot.Status.Conditions, conditionType); c != nil {
			return c
		}
	}
	return nil
}

// falseProgressCondition returns robot's Reconciling or Stalled condition
// that is not True, nil when there is none: the operator keeps them only
// while True, as Flux does.
func falseProgressCondition(robot *robotv1beta1.Robot) *metav1.Condition {
	for _, conditionType := range []string{robotv1beta1.ConditionReconciling, robotv1beta1.ConditionStalled} {
		if c := meta.FindStatusCondition(robot.Status.Conditions, conditionType); c != nil && c.Status != metav1.ConditionTrue {
			return c
		}
	}
	return nil
}

// TestKstatusRollout: a new Robot is InProgress, from the first read, until
// it is Ready, then Current; a change of its spec is InProgress again until
// the rollout ends.
func TestKstatusRollout(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "web", 2))
	seen := followKstatus(t, ns, "web", convergeTimeout, func(r *status.Result) bool { return r.Status == status.CurrentStatus })
	if seen[0] != status.InProgressStatus {
		t.Errorf("kstatus of the new Robot, first read: %s, want InProgress (statuses seen: %v)", seen[0], seen)
	}
	patchRobot(t, ns, "web", `{"spec":{"replicas":3}}`)
	seen = followKstatus(t, ns, "web", convergeTimeout, func(r *status.Result) bool { return r.Status == status.CurrentStatus })
	t.Logf("kstatus after the change: %v", seen)
}

// TestKstatusImagePullFailed: a Robot whose image cannot be pulled is never
// Current: InProgress, then Failed with the reason once the kubelet says so.
func TestKstatusImagePullFailed(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	robot := newRobot(ns, "web", 1)
	robot.Spec.Image = pullFailsImage
	createRobot(t, robot)
	var last *status.Result
	seen := followKstatus(t, ns, "web", convergeTimeout, func(r *status.Result) bool {
		last = r
		return r.Status == status.FailedStatus
	})
	if !strings.Contains(last.Message, pullFailsImage) {
		t.Errorf("kstatus Failed with message %q, want the image named", last.Message)
	}
	var stalled bool
	for _, c := range last.Conditions {
		stalled = stalled || (c.Type == status.ConditionStalled && c.Reason == robotv1beta1.ReasonImagePullFailed)
	}
	if !stalled {
		t.Errorf("kstatus conditions %+v, want Stalled with reason %s", last.Conditions, robotv1beta1.ReasonImagePullFailed)
	}
	t.Logf("kstatus: %v", seen)
}

// TestKstatusServiceNameTaken: a Robot whose Service name someone else
// holds waits on a person: kstatus says Failed with the reason, not Current
// as if all were well, and Current once the name is free and the Robot has
// its Service.
func TestKstatusServiceNameTaken(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	if _, err := env.kube.CoreV1().Services(ns).Create(t.Context(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "someone-else"}, Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	robot := newRobot(ns, "web", 1)
	robot.Spec.Ports = httpPorts(8080)
	createRobot(t, robot)
	var last *status.Result
	followKstatus(t, ns, "web", convergeTimeout, func(r *status.Result) bool {
		last = r
		return r.Status == status.FailedStatus
	})
	var stalled bool
	for _, c := range last.Conditions {
		stalled = stalled || (c.Type == status.ConditionStalled && c.Reason == robotv1beta1.ReasonServiceNameTaken)
	}
	if !stalled {
		t.Errorf("kstatus conditions %+v, want Stalled with reason %s", last.Conditions, robotv1beta1.ReasonServiceNameTaken)
	}
	if err := env.kube.CoreV1().Services(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Robot looks again within its recheck period (30s).
	followKstatus(t, ns, "web", 2*convergeTimeout, func(r *status.Result) bool { return r.Status == status.CurrentStatus })
	// Stalled is gone from the API server's copy, not set to False: the
	// status apply that leaves it out removes it.
	_, robot, err := getUnstructured(t.Context(), ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if c := progressCondition(robot); c != nil {
		t.Errorf("the recovered Robot holds %s=%s %s: want neither Reconciling nor Stalled", c.Type, c.Status, c.Reason)
	}
}

// TestKstatusConditionsOfAnEarlierRelease: a Robot whose status an earlier
// release wrote, with Reconciling=False and Stalled=False, loses them in
// one status write once the operator looks at it again, then is written no
// more; kstatus says Current throughout.
func TestKstatusConditionsOfAnEarlierRelease(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "web", 1))
	followKstatus(t, ns, "web", convergeTimeout, func(r *status.Result) bool { return r.Status == status.CurrentStatus })
	robot := waitForRobot(t, ns, "web", convergeTimeout, "settled", robotSettled)

	// The earlier release applied all six conditions with the operator's
	// field manager.
	ac := robotac.RobotStatus().WithObservedGeneration(robot.Status.ObservedGeneration)
	conditions := append([]metav1.Condition(nil), robot.Status.Conditions...)
	ready := readyCondition(robot)
	for _, conditionType := range []string{robotv1beta1.ConditionReconciling, robotv1beta1.ConditionStalled} {
		conditions = append(conditions, metav1.Condition{Type: conditionType, Status: metav1.ConditionFalse, ObservedGeneration: robot.Generation,
			LastTransitionTime: ready.LastTransitionTime, Reason: ready.Reason, Message: ready.Message})
	}
	for _, c := range conditions {
		ac.WithConditions(metav1ac.Condition().WithType(c.Type).WithStatus(c.Status).WithObservedGeneration(c.ObservedGeneration).
			WithLastTransitionTime(c.LastTransitionTime).WithReason(c.Reason).WithMessage(c.Message))
	}
	written, err := env.robots.RobotV1beta1().Robots(ns).ApplyStatus(t.Context(), robotac.Robot("web", ns).WithStatus(ac),
		metav1.ApplyOptions{FieldManager: "robot-operator", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if c := falseProgressCondition(written); c == nil {
		t.Fatalf("the earlier release's status was not stored: %+v", written.Status.Conditions)
	}
	if u, _, err := getUnstructured(t.Context(), ns, "web"); err != nil {
		t.Fatal(err)
	} else if r := kstatusOf(t, u); r.Status != status.CurrentStatus {
		t.Fatalf("kstatus of the earlier release's status: %s (%s), want Current", r.Status, r.Message)
	}

	// The status write queues the Robot: the operator removes both.
	cleaned := waitForRobot(t, ns, "web", convergeTimeout, "without Reconciling and Stalled", func(r *robotv1beta1.Robot) bool {
		return progressCondition(r) == nil
	})
	if ready := readyCondition(cleaned); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v after the cleanup, want True", ready)
	}
	// Then nothing more is written.
	time.Sleep(3 * time.Second)
	if again := getRobot(t, ns, "web"); again.ResourceVersion != cleaned.ResourceVersion {
		t.Errorf("the Robot was written again after the cleanup: resourceVersion %s, then %s: %+v", cleaned.ResourceVersion, again.ResourceVersion, again.Status.Conditions)
	}
	if u, _, err := getUnstructured(t.Context(), ns, "web"); err != nil {
		t.Fatal(err)
	} else if r := kstatusOf(t, u); r.Status != status.CurrentStatus {
		t.Errorf("kstatus after the cleanup: %s (%s), want Current", r.Status, r.Message)
	}
}
