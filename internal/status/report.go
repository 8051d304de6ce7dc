package status

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
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
