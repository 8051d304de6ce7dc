package status

import (
	"errors"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

func TestProgressOnly(t *testing.T) {
	robot := robottest.NewRobot("test", 1)
	available := liveDeployment(t, robot)
	created := available.DeepCopy()
	created.Status = appsv1.DeploymentStatus{}
	progressing := robottest.UnavailableNow(available.DeepCopy())
	stalled := progressing.DeepCopy()
	stalled.Status.Conditions[1].Status, stalled.Status.Conditions[1].Reason = corev1.ConditionFalse, robotv1beta1.ReasonProgressDeadlineExceeded
	before := func(d *appsv1.Deployment) robotv1beta1.RobotStatus {
		return Compute(robot, d, nil, nil, metav1.NewTime(robottest.FixtureNow))
	}
	later := metav1.NewTime(robottest.FixtureNow.Add(10))
	withStored := func(stored robotv1beta1.RobotStatus, d *appsv1.Deployment, syncErr error) robotv1beta1.RobotStatus {
		r := robot.DeepCopy()
		r.Status = stored
		return Compute(r, d, nil, syncErr, later)
	}
	imagePull := withStored(before(created), progressing, nil)
	meta.SetStatusCondition(&imagePull.Conditions, metav1.Condition{Type: robotv1beta1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: robotv1beta1.ReasonImagePullFailed, Message: "cannot pull the image"})

	for name, tt := range map[string]struct {
		before, after robotv1beta1.RobotStatus
		want          bool
	}{
		"the Deployment controller observed the Deployment: replicas counted, its conditions mirrored": {
			before: before(created), after: withStored(before(created), progressing, nil), want: true,
		},
		"nothing changed": {
			before: before(progressing), after: withStored(before(progressing), progressing, nil), want: true,
		},
		"Ready": {
			before: before(progressing), after: withStored(before(progressing), available, nil), want: false,
		},
		"Ready at once": {
			before: before(created), after: withStored(before(created), available, nil), want: false,
		},
		"past its progress deadline: Stalled, and a Warning": {
			before: before(progressing), after: withStored(before(progressing), stalled, nil), want: false,
		},
		"a failed sync": {
			before: before(progressing), after: withStored(before(progressing), progressing, errors.New("boom")), want: false,
		},
		"a cause found in the pods": {
			before: before(progressing), after: imagePull, want: false,
		},
		"no longer Ready": {
			before: before(available), after: withStored(before(available), progressing, nil), want: false,
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := ProgressOnly(tt.before, tt.after); got != tt.want {
				t.Errorf("ProgressOnly = %v, want %v\nbefore: %+v\nafter:  %+v", got, tt.want, tt.before, tt.after)
			}
		})
	}
}
