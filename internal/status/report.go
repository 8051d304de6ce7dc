package status

import (
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1 "k8s.io/api/apps/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// ProgressOnly reports whether after, a status to write over before, says
// nothing new but how far a rollout got: the replica counts, the
// Deployment's Available and Progressing conditions, the messages of Ready
// and of Reconciling. Whether the Robot is Ready, Synced, Reconciling or
// Stalled, and why (the reasons), what it is called and where it is
// reached, stay as they were, and no Warning is due. It is what kstatus,
// Flux's and Argo CD's health checks and `kubectl wait` read that has not
// moved: such a write can wait.
func ProgressOnly(before, after robotv1beta1.RobotStatus) bool {
	return apiequality.Semantic.DeepEqual(withoutProgress(before), withoutProgress(after)) && NewWarning(before, after) == nil
}

// withoutProgress returns status without what a rollout's progress
// changes.
func withoutProgress(status robotv1beta1.RobotStatus) robotv1beta1.RobotStatus {
	status.Replicas, status.UpdatedReplicas, status.ReadyReplicas, status.AvailableReplicas = 0, 0, 0, 0
	conditions := make([]metav1.Condition, 0, len(status.Conditions))
	for _, c := range status.Conditions {
		switch c.Type {
		case string(appsv1.DeploymentAvailable), string(appsv1.DeploymentProgressing):
			continue
		case robotv1beta1.ConditionReady, robotv1beta1.ConditionReconciling:
			c.Message = ""
		}
		conditions = append(conditions, c)
	}
	status.Conditions = conditions
	return status
}

// FirstReportDelay is how long the first status of a new Robot may wait
// for its workload, counted from its Deployment's creation: a rollout that
// is Available by then is told in one write, Ready, not in two (Synced and
// a rollout in progress, then Ready). A Robot whose rollout takes longer
// says it is in progress at the end of the wait; one that has anything
// else to say (a sync that failed, a cause, a warning) says it at once.
const FirstReportDelay = 3 * time.Second

// FirstReportWait returns how long the status after, which the Robot has
// never had one before, may still wait for its rollout (at most
// FirstReportDelay), or 0 when it is to be written now: the Robot was
// reported on before, what after says is more than a rollout under way
// with the sync done, or its Deployment was not created in the last
// FirstReportDelay. A Deployment's creationTimestamp is in whole seconds,
// rounded down, so the wait ends up to a second early, never late; a
// clock ahead of or behind the API server's shortens it or is bounded.
func FirstReportWait(robot *robotv1beta1.Robot, after robotv1beta1.RobotStatus, deployment *appsv1.Deployment, now time.Time) time.Duration {
	if !NeverReported(robot.Status) {
		return 0
	}
	if deployment == nil || deployment.CreationTimestamp.IsZero() {
		return 0
	}
	ready := meta.FindStatusCondition(after.Conditions, robotv1beta1.ConditionReady)
	synced := meta.FindStatusCondition(after.Conditions, robotv1beta1.ConditionSynced)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != robotv1beta1.ReasonRolloutInProgress ||
		synced == nil || synced.Status != metav1.ConditionTrue || NewWarning(robot.Status, after) != nil {
		return 0
	}
	wait := deployment.CreationTimestamp.Add(FirstReportDelay).Sub(now)
	return min(max(wait, 0), FirstReportDelay)
}

// NeverReported reports whether status is a Robot's that the operator has
// not written yet: a new Robot, or one whose first report waits
// (FirstReportWait). An event of what such a Robot owns comes after the
// sync that made it, so it asks for a report, as one of a Robot whose
// status says Synced does.
func NeverReported(status robotv1beta1.RobotStatus) bool {
	return status.ObservedGeneration == 0 && len(status.Conditions) == 0
}
