package status

import (
	"errors"
	"testing"
	"time"

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

// TestFirstReportWait: only a new Robot's first status, saying a rollout
// is under way and nothing else, waits, and no longer than
// FirstReportDelay from its Deployment's creation.
func TestFirstReportWait(t *testing.T) {
	now := robottest.FixtureNow
	robot := robottest.NewRobot("test", 1)
	rolling := liveDeployment(t, robot)
	rolling.Status = appsv1.DeploymentStatus{}
	createdAt := func(d *appsv1.Deployment, at time.Time) *appsv1.Deployment {
		d = d.DeepCopy()
		d.CreationTimestamp = metav1.NewTime(at)
		return d
	}
	first := func(d *appsv1.Deployment, syncErr error) robotv1beta1.RobotStatus {
		return Compute(robot, d, nil, syncErr, metav1.NewTime(now))
	}
	reported := robot.DeepCopy()
	reported.Status = first(rolling, nil)
	for _, c := range []struct {
		name       string
		robot      *robotv1beta1.Robot
		after      robotv1beta1.RobotStatus
		deployment *appsv1.Deployment
		want       time.Duration
	}{
		{"just created", robot, first(rolling, nil), createdAt(rolling, now), FirstReportDelay},
		{"created 2s ago", robot, first(rolling, nil), createdAt(rolling, now.Add(-2*time.Second)), time.Second},
		{"created long ago", robot, first(rolling, nil), createdAt(rolling, now.Add(-time.Minute)), 0},
		{"created ahead of this clock", robot, first(rolling, nil), createdAt(rolling, now.Add(time.Hour)), FirstReportDelay},
		{"no creation time", robot, first(rolling, nil), rolling, 0},
		{"no Deployment", robot, first(nil, nil), nil, 0},
		{"reported before", reported, first(rolling, nil), createdAt(rolling, now), 0},
		{"Available", robot, first(liveDeployment(t, robot), nil), createdAt(liveDeployment(t, robot), now), 0},
		{"a failed sync", robot, first(rolling, errors.New("boom")), createdAt(rolling, now), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := FirstReportWait(c.robot, c.after, c.deployment, now); got != c.want {
				t.Errorf("FirstReportWait = %v, want %v", got, c.want)
			}
		})
	}
}
