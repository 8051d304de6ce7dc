package status

import (
	"fmt"

	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// maxChangesLength bounds what Ready's message says of the changes since
// the last Ready revision, so that the cause of the failure, which comes
// first, keeps most of the message.
const maxChangesLength = 400

// WithReadyRevision makes status, computed for robot, remember current
// (the revision of the Robot's current spec, nil when it has none yet) as
// the last Ready revision once status says Ready for the Robot's
// generation: the status write that says Ready carries it, and no other
// write is made for it. A revision already remembered keeps the time it
// became Ready.
func WithReadyRevision(robot *robotv1beta1.Robot, status *robotv1beta1.RobotStatus, current *appsv1.ControllerRevision, now metav1.Time) {
	if current == nil || !ReadyFor(*status, robot.Generation) {
		return
	}
	if last := status.LastReadyRevision; last != nil && last.Name == current.Name && last.Revision == current.Revision {
		return
	}
	// The newest revision the cache holds may not be the current spec's,
	// when the history was not synced (a paused Robot).
	data, err := workload.RevisionData(robot)
	if err != nil || workload.RevisionName(robot, data) != current.Name {
		return
	}
	status.LastReadyRevision = &robotv1beta1.RobotReadyRevision{Name: current.Name, Revision: current.Revision, ReadyTime: now}
}

// ChangeToExplain returns the last Ready revision that status, computed
// for robot whose current revision is current, should name the changes
// since: when Ready is False for a reason other than a rollout under way
// (which needs no explaining), and the Robot's spec is not the one that
// was Ready. Nil otherwise: then nothing needs the last Ready spec.
func ChangeToExplain(robot *robotv1beta1.Robot, status *robotv1beta1.RobotStatus, current *appsv1.ControllerRevision) *robotv1beta1.RobotReadyRevision {
	last := status.LastReadyRevision
	if last == nil || current == nil || last.Name == current.Name {
		return nil
	}
	ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason == robotv1beta1.ReasonRolloutInProgress ||
		ready.ObservedGeneration != robot.Generation {
		return nil
	}
	return last
}

// WithChanges makes Ready's message in status, computed for robot, say
// what changed since last, the last Ready revision (ChangeToExplain),
// whose spec was lastSpec: "since revision 6, Ready at ...: image
// nginx:1.27 → 1.28; env LOG_LEVEL added", after the cause, all of it
// within the message's size. Stalled, which repeats Ready's message, says
// it too.
func WithChanges(robot *robotv1beta1.Robot, status *robotv1beta1.RobotStatus, last *robotv1beta1.RobotReadyRevision, lastSpec *robotv1beta1.RobotSpec, now metav1.Time) {
	changes := workload.SpecChanges(lastSpec, &robot.Spec)
	ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
	if len(changes) == 0 || ready == nil {
		return
	}
	suffix := fmt.Sprintf("; since revision %d, Ready at %s: %s", last.Revision,
		last.ReadyTime.UTC().Format("2006-01-02 15:04 MST"), workload.DescribeChanges(changes, maxChangesLength))
	if len(ready.Message)+len(suffix) > maxMessageLength {
		ready.Message = truncate(ready.Message, maxMessageLength-len(suffix)-3) + "..."
	}
	ready.Message += suffix
	// Only the messages change: the conditions keep their transition times.
	setProgress(status, robot.Status.Conditions, robot.Generation, now)
}
