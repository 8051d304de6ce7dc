package status

import (
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// A cause comes and goes: one Warning when it is new, none when only the
// kubelet's message changes, none on the way back.
func TestNewWarningOncePerCause(t *testing.T) {
	robot := robottest.NewRobot("test", 1)
	deployment := unavailable(t, robot)
	at := func(status robotv1beta1.RobotStatus, pods ...*corev1.Pod) robotv1beta1.RobotStatus {
		r := robot.DeepCopy()
		r.Status = status
		s, _ := Diagnosed(r, deployment, nil, firstReplicaSet(t, deployment), summaries(t, pods...), nil, metav1.NewTime(robottest.FixtureNow))
		return s
	}
	slow := at(robotv1beta1.RobotStatus{})
	pulling := at(slow, robottest.Pod(robot, "test-a", robottest.Waiting("ErrImagePull", "not found")))
	backingOff := at(pulling, robottest.Pod(robot, "test-a", robottest.Waiting("ImagePullBackOff", `Back-off pulling image`)))
	crashing := at(backingOff, robottest.Pod(robot, "test-a", robottest.Waiting("CrashLoopBackOff", "")))
	for _, step := range []struct {
		name          string
		before, after robotv1beta1.RobotStatus
		want          string
	}{
		{"new cause", slow, pulling, robotv1beta1.ReasonImagePullFailed},
		{"same cause, another message", pulling, backingOff, ""},
		{"another cause", backingOff, crashing, robotv1beta1.ReasonCrashLoop},
		{"cause gone", crashing, slow, ""},
	} {
		got := ""
		if w := NewWarning(step.before, step.after); w != nil {
			got = w.Reason
		}
		if got != step.want {
			t.Errorf("%s: warning %q, want %q", step.name, got, step.want)
		}
	}
}

// A field conflict is one Warning however its message changes while it
// lasts: the message carries the API server's answer and the fields the
// other writer holds at each retry, which change as that writer takes them
// back.
func TestNewWarningOncePerFieldConflict(t *testing.T) {
	synced := func(reason, message string) robotv1beta1.RobotStatus {
		status := metav1.ConditionFalse
		if reason == robotv1beta1.ReasonSynced {
			status = metav1.ConditionTrue
		}
		return robotv1beta1.RobotStatus{Conditions: []metav1.Condition{{Type: robotv1beta1.ConditionSynced, Status: status, Reason: reason, Message: message}}}
	}
	ok := synced(robotv1beta1.ReasonSynced, "")
	both := synced(robotv1beta1.ReasonFieldConflict, `because of allowPrivilegeEscalation and privileged, set by "other"`)
	one := synced(robotv1beta1.ReasonFieldConflict, `because of allowPrivilegeEscalation, set by "other"`)
	invalid := synced(robotv1beta1.ReasonInvalidSpec, "spec.image: one mistake")
	otherInvalid := synced(robotv1beta1.ReasonInvalidSpec, "spec.image: another mistake")
	for _, step := range []struct {
		name          string
		before, after robotv1beta1.RobotStatus
		want          string
	}{
		{"a conflict", ok, both, robotv1beta1.ReasonFieldConflict},
		{"the same conflict, fewer fields", both, one, ""},
		{"converged", one, ok, ""},
		{"another invalid spec is a new mistake", invalid, otherInvalid, robotv1beta1.ReasonInvalidSpec},
	} {
		got := ""
		if w := NewWarning(step.before, step.after); w != nil {
			got = w.Reason
		}
		if got != step.want {
			t.Errorf("%s: warning %q, want %q", step.name, got, step.want)
		}
	}
}
