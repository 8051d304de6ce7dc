package status

import (
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// revisionOf is robot's current spec's revision, numbered revision.
func revisionOf(t *testing.T, robot *robotv1beta1.Robot, revision int64) *appsv1.ControllerRevision {
	t.Helper()
	r, err := workload.NewRevision(robot, revision)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReadyRevisionIsRemembered: the status that says Ready remembers the
// current spec's revision, and when; one already remembered keeps its
// time; a Robot not Ready, or whose newest revision is not its spec's,
// remembers nothing new.
func TestReadyRevisionIsRemembered(t *testing.T) {
	robot := robottest.NewRobot("web", 2)
	now := metav1.NewTime(robottest.FixtureNow)
	earlier := metav1.NewTime(robottest.FixtureNow.Add(-time.Hour))
	current := revisionOf(t, robot, 3)
	other := robot.DeepCopy()
	other.Spec.Image = "registry.example/robot:0.9"
	for _, tt := range []struct {
		name     string
		ready    bool
		current  *appsv1.ControllerRevision
		stored   *robotv1beta1.RobotReadyRevision
		want     *robotv1beta1.RobotReadyRevision
		wantTime metav1.Time
	}{
		{"ready", true, current, nil, &robotv1beta1.RobotReadyRevision{Name: current.Name, Revision: 3}, now},
		{"ready, remembered", true, current, &robotv1beta1.RobotReadyRevision{Name: current.Name, Revision: 3, ReadyTime: earlier},
			&robotv1beta1.RobotReadyRevision{Name: current.Name, Revision: 3}, earlier},
		{"ready, renumbered since", true, current, &robotv1beta1.RobotReadyRevision{Name: current.Name, Revision: 1, ReadyTime: earlier},
			&robotv1beta1.RobotReadyRevision{Name: current.Name, Revision: 3}, now},
		{"ready, an earlier one remembered", true, current, &robotv1beta1.RobotReadyRevision{Name: "web-0", Revision: 2, ReadyTime: earlier},
			&robotv1beta1.RobotReadyRevision{Name: current.Name, Revision: 3}, now},
		{"not ready", false, current, &robotv1beta1.RobotReadyRevision{Name: "web-0", Revision: 2, ReadyTime: earlier},
			&robotv1beta1.RobotReadyRevision{Name: "web-0", Revision: 2}, earlier},
		{"no revision yet", true, nil, nil, nil, metav1.Time{}},
		{"the newest revision is another spec's", true, revisionOf(t, other, 4), nil, nil, metav1.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			robot := robot.DeepCopy()
			robot.Status.LastReadyRevision = tt.stored
			deployment := liveDeployment(t, robot)
			if !tt.ready {
				deployment = unavailable(t, robot)
			}
			status := Compute(robot, deployment, nil, nil, now)
			if ReadyFor(status, robot.Generation) != tt.ready {
				t.Fatalf("the status says Ready %v, want %v", ReadyFor(status, robot.Generation), tt.ready)
			}
			WithReadyRevision(robot, &status, tt.current, now)
			got := status.LastReadyRevision
			switch {
			case tt.want == nil && got != nil:
				t.Errorf("remembered %+v, want none", got)
			case tt.want != nil && (got == nil || got.Name != tt.want.Name || got.Revision != tt.want.Revision || !got.ReadyTime.Equal(&tt.wantTime)):
				t.Errorf("remembered %+v, want %+v Ready at %v", got, tt.want, tt.wantTime)
			}
			if tt.stored != nil && tt.stored.Revision == 2 && status.LastReadyRevision == tt.stored {
				t.Errorf("the status shares the Robot's stored revision: it must be a copy")
			}
		})
	}
}

// TestReadyNamesTheChanges: a Robot Stalled after a change says, after the
// cause, what changed since its last Ready revision, in Ready's message
// and in Stalled's; one on its way to Ready, one whose spec is the Ready
// one, or one never Ready, has nothing to explain.
func TestReadyNamesTheChanges(t *testing.T) {
	ready := robottest.NewRobot("web", 2)
	now := metav1.NewTime(robottest.FixtureNow)
	last := &robotv1beta1.RobotReadyRevision{Name: revisionOf(t, ready, 6).Name, Revision: 6,
		ReadyTime: metav1.NewTime(time.Date(2026, 11, 28, 14, 2, 30, 0, time.UTC))}
	changed := ready.DeepCopy()
	changed.Generation = 2
	changed.Spec.Image = "registry.example/robot:1.1"
	changed.Spec.Env = append(changed.Spec.Env, corev1.EnvVar{Name: "LOG_LEVEL", Value: "debug"})
	changed.Status.LastReadyRevision = last

	stalled, pods := unschedulableStatus(t, changed, now.Time)
	for _, tt := range []struct {
		name    string
		robot   *robotv1beta1.Robot
		stalled bool
		current *appsv1.ControllerRevision
		explain bool
	}{
		{"stalled after a change", changed, true, revisionOf(t, changed, 7), true},
		{"on its way after a change", changed, false, revisionOf(t, changed, 7), false},
		{"stalled with the Ready spec", changed, true, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: last.Name}, Revision: 8}, false},
		{"never Ready", func() *robotv1beta1.Robot { r := changed.DeepCopy(); r.Status.LastReadyRevision = nil; return r }(), true, revisionOf(t, changed, 7), false},
		{"no revision yet", changed, true, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			deployment, podsOf := unavailable(t, tt.robot), []*corev1.Pod(nil)
			if tt.stalled {
				deployment, podsOf = stalled, pods
			}
			status, _ := Diagnosed(tt.robot, deployment, nil, replicaSetSummaries(t, robottest.ReplicaSet(deployment, "1")), summaries(t, podsOf...), nil, now)
			explain := ChangeToExplain(tt.robot, &status, tt.current)
			if (explain != nil) != tt.explain {
				t.Fatalf("explains a change since %v, want %v", explain, tt.explain)
			}
			if explain == nil {
				return
			}
			cause := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady).Message
			WithChanges(tt.robot, &status, explain, &ready.Spec, now)
			got := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
			want := cause + "; since revision 6, Ready at 2026-11-28 14:02 UTC: image registry.example/robot:1.0 → 1.1; env LOG_LEVEL added"
			if got.Message != want || got.Reason != robotv1beta1.ReasonUnschedulable {
				t.Errorf("Ready %s %q, want Unschedulable %q", got.Reason, got.Message, want)
			}
			if stalledCondition := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionStalled); stalledCondition == nil || stalledCondition.Message != got.Message {
				t.Errorf("Stalled %v, want Ready's message", stalledCondition)
			}
		})
	}
}

// TestChangesFitTheMessage: a long cause is cut so that the changes, cut
// themselves to their own share with "and N more", fit the message.
func TestChangesFitTheMessage(t *testing.T) {
	ready := robottest.NewRobot("web", 2)
	now := metav1.NewTime(robottest.FixtureNow)
	changed := ready.DeepCopy()
	for i := range 100 {
		changed.Spec.Env = append(changed.Spec.Env, corev1.EnvVar{Name: strings.Repeat("V", 20) + string(rune('A'+i%26)) + strings.Repeat("X", i/26), Value: "1"})
	}
	last := &robotv1beta1.RobotReadyRevision{Name: "web-0", Revision: 1, ReadyTime: now}
	changed.Status.LastReadyRevision = last
	deployment, pods := unschedulableStatus(t, changed, now.Time)
	pods[0].Status.Conditions[0].Message = strings.Repeat("é", maxMessageLength)
	status, _ := Diagnosed(changed, deployment, nil, replicaSetSummaries(t, robottest.ReplicaSet(deployment, "1")), summaries(t, pods...), nil, now)
	WithChanges(changed, &status, last, &ready.Spec, now)
	message := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady).Message
	if len(message) > maxMessageLength {
		t.Errorf("Ready's message is %d bytes, over %d", len(message), maxMessageLength)
	}
	if !strings.Contains(message, "...; since revision 1, Ready at ") || !strings.HasSuffix(message, " more") {
		t.Errorf("Ready's message ends %q, want the cause cut, then the changes, then how many more", message[max(0, len(message)-200):])
	}
}
