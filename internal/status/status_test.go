package status

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

func TestComputeStatus(t *testing.T) {
	now := metav1.NewTime(robottest.FixtureNow)
	type conditions struct{ ready, readyReason, available, progressing, synced, syncedReason string }
	tests := []struct {
		name       string
		deployment func(*appsv1.Deployment) *appsv1.Deployment
		syncErr    error
		want       conditions
		message    string // a substring of the Ready message
	}{{
		name:       "complete",
		deployment: func(d *appsv1.Deployment) *appsv1.Deployment { return d },
		want:       conditions{"True", robotv1beta1.ReasonRolloutComplete, "True", "True", "True", robotv1beta1.ReasonSynced},
		message:    "2 of 2 replicas are available",
	}, {
		name:       "no Deployment yet",
		deployment: func(*appsv1.Deployment) *appsv1.Deployment { return nil },
		want:       conditions{"False", robotv1beta1.ReasonRolloutInProgress, "Unknown", "Unknown", "True", robotv1beta1.ReasonSynced},
	}, {
		name: "spec not observed yet",
		deployment: func(d *appsv1.Deployment) *appsv1.Deployment {
			d.Generation = 2
			return d
		},
		want:    conditions{"False", robotv1beta1.ReasonRolloutInProgress, "Unknown", "Unknown", "True", robotv1beta1.ReasonSynced},
		message: "observe generation 2",
	}, {
		name: "rolling out",
		deployment: func(d *appsv1.Deployment) *appsv1.Deployment {
			d.Status.UpdatedReplicas = 1
			return d
		},
		want:    conditions{"False", robotv1beta1.ReasonRolloutInProgress, "True", "True", "True", robotv1beta1.ReasonSynced},
		message: "1 of 2 replicas run the current spec",
	}, {
		name: "old replicas terminating",
		deployment: func(d *appsv1.Deployment) *appsv1.Deployment {
			d.Status.Replicas = 3
			return d
		},
		want:    conditions{"False", robotv1beta1.ReasonRolloutInProgress, "True", "True", "True", robotv1beta1.ReasonSynced},
		message: "1 old replicas are pending termination",
	}, {
		name: "scaling down",
		deployment: func(d *appsv1.Deployment) *appsv1.Deployment {
			d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 4, 4, 4, 4
			return d
		},
		want:    conditions{"False", robotv1beta1.ReasonRolloutInProgress, "True", "True", "True", robotv1beta1.ReasonSynced},
		message: "scaling down from 4 to 2 replicas",
	}, {
		name: "not available",
		deployment: func(d *appsv1.Deployment) *appsv1.Deployment {
			d.Status.AvailableReplicas = 0
			d.Status.Conditions[0].Status, d.Status.Conditions[0].Reason = corev1.ConditionFalse, "MinimumReplicasUnavailable"
			return d
		},
		want:    conditions{"False", robotv1beta1.ReasonRolloutInProgress, "False", "True", "True", robotv1beta1.ReasonSynced},
		message: "0 of 2 updated replicas are available",
	}, {
		name: "progress deadline exceeded",
		deployment: func(d *appsv1.Deployment) *appsv1.Deployment {
			d.Status.UpdatedReplicas = 1
			d.Status.Conditions[1] = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
				Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "test-abc" has timed out progressing.`}
			return d
		},
		want:    conditions{"False", robotv1beta1.ReasonProgressDeadlineExceeded, "True", "False", "True", robotv1beta1.ReasonSynced},
		message: "timed out progressing",
	}, {
		name:       "name taken",
		deployment: func(*appsv1.Deployment) *appsv1.Deployment { return nil },
		syncErr:    &outcome.NameTakenError{Name: "test", Owner: "ReplicaSet/x"},
		want:       conditions{"False", robotv1beta1.ReasonDeploymentNameTaken, "Unknown", "Unknown", "False", robotv1beta1.ReasonDeploymentNameTaken},
		message:    `Deployment "test" already exists and is not controlled by this Robot (it is controlled by ReplicaSet/x)`,
	}, {
		name:       "invalid spec",
		deployment: func(*appsv1.Deployment) *appsv1.Deployment { return nil },
		syncErr:    &outcome.InvalidSpecError{Err: errors.New("spec.image must not be empty")},
		want:       conditions{"False", robotv1beta1.ReasonInvalidSpec, "Unknown", "Unknown", "False", robotv1beta1.ReasonInvalidSpec},
		message:    "spec.image must not be empty",
	}, {
		// A brownout: the Deployment runs the Robot's spec, every replica
		// is available, and an API request failed. Ready stays about the
		// workload; Synced says the sync failed.
		name:       "API error with the spec applied",
		deployment: func(d *appsv1.Deployment) *appsv1.Deployment { return d },
		syncErr:    errors.New("the server is currently unable to handle the request"),
		want:       conditions{"True", robotv1beta1.ReasonRolloutComplete, "True", "True", "False", robotv1beta1.ReasonSyncFailed},
		message:    "2 of 2 replicas are available",
	}, {
		// The Robot changed and the change could not be applied: the
		// Deployment does not run what the Robot now asks for.
		name: "API error with a spec change pending",
		deployment: func(d *appsv1.Deployment) *appsv1.Deployment {
			d.Annotations[workload.AnnotationSpecHash] = "an-older-spec"
			return d
		},
		syncErr: errors.New("the server is currently unable to handle the request"),
		want:    conditions{"False", robotv1beta1.ReasonSyncFailed, "True", "True", "False", robotv1beta1.ReasonSyncFailed},
		message: "unable to handle the request (retrying)",
	}, {
		// An earlier Robot's Deployment is not in the way of anyone: the
		// sync waits, and says so.
		name:       "earlier Robot's Deployment",
		deployment: func(*appsv1.Deployment) *appsv1.Deployment { return nil },
		syncErr:    &outcome.EarlierRobotError{Name: "test"},
		want:       conditions{"False", robotv1beta1.ReasonRolloutInProgress, "Unknown", "Unknown", "False", robotv1beta1.ReasonWaitingForGarbageCollection},
		message:    "earlier Robot",
	}, {
		name:       "long error",
		deployment: func(*appsv1.Deployment) *appsv1.Deployment { return nil },
		syncErr:    errors.New(strings.Repeat("x", 5000)),
		want:       conditions{"False", robotv1beta1.ReasonSyncFailed, "Unknown", "Unknown", "False", robotv1beta1.ReasonSyncFailed},
		message:    "xxx...",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.NewRobot("test", 2)
			robot.Generation = 3
			// Another writer's condition: kept, and never written to.
			audited := metav1.Condition{Type: "Audited", Status: metav1.ConditionTrue, Reason: "Checked", LastTransitionTime: metav1.NewTime(robottest.FixtureNow.Add(-time.Hour))}
			robot.Status.Conditions = []metav1.Condition{audited}
			deployment := tt.deployment(liveDeployment(t, robot))
			before := robot.DeepCopy()

			status := Compute(robot, deployment, nil, tt.syncErr, now)

			if d := diff.Diff(before, robot); d != "" {
				t.Errorf("computeStatus changed the Robot:\n%s", d)
			}
			if got := meta.FindStatusCondition(status.Conditions, "Audited"); got == nil || *got != audited {
				t.Errorf("another writer's condition became %+v, want %+v", got, audited)
			}
			got := conditions{
				string(meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady).Status),
				meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady).Reason,
				string(meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionAvailable).Status),
				string(meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionProgressing).Status),
				string(meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionSynced).Status),
				meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionSynced).Reason,
			}
			if got != tt.want {
				t.Errorf("conditions (Ready, reason, Available, Progressing, Synced, reason) = %v, want %v", got, tt.want)
			}
			ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
			if !strings.Contains(ready.Message, tt.message) {
				t.Errorf("Ready message %q, want it to contain %q", ready.Message, tt.message)
			}
			for _, c := range status.Conditions {
				if !ownCondition(c.Type) {
					continue
				}
				if c.ObservedGeneration != 3 || !c.LastTransitionTime.Equal(&now) || c.Reason == "" || len(c.Message) > maxMessageLength {
					t.Errorf("condition %+v: want observedGeneration 3, lastTransitionTime now, a reason and a bounded message", c)
				}
			}
			if status.ObservedGeneration != 3 || status.DeploymentName != "test" || status.Selector != "robot.dev/name=test" {
				t.Errorf("status %+v: want observedGeneration 3, deploymentName test, selector robot.dev/name=test", status)
			}
			if deployment != nil && (status.Replicas != deployment.Status.Replicas || status.UpdatedReplicas != deployment.Status.UpdatedReplicas ||
				status.ReadyReplicas != deployment.Status.ReadyReplicas || status.AvailableReplicas != deployment.Status.AvailableReplicas) {
				t.Errorf("replica counts %+v, want the Deployment's %+v", status, deployment.Status)
			}
		})
	}
}

func TestComputeStatusKeepsTransitionTimes(t *testing.T) {
	robot := robottest.NewRobot("test", 2)
	deployment := liveDeployment(t, robot)
	earlier := metav1.NewTime(robottest.FixtureNow.Add(-time.Hour))
	robot.Status = Compute(robot, deployment, nil, nil, earlier)
	// Someone else's condition stays as it is.
	robot.Status.Conditions = append(robot.Status.Conditions, metav1.Condition{Type: "Audited", Status: "True", Reason: "Checked", LastTransitionTime: earlier})

	same := Compute(robot, deployment, nil, nil, metav1.NewTime(robottest.FixtureNow))
	if ready := meta.FindStatusCondition(same.Conditions, robotv1beta1.ConditionReady); !ready.LastTransitionTime.Equal(&earlier) {
		t.Errorf("Ready moved to %v without changing status", ready.LastTransitionTime)
	}
	if audited := meta.FindStatusCondition(same.Conditions, "Audited"); audited == nil || audited.Reason != "Checked" {
		t.Errorf("another writer's condition was lost: %+v", same.Conditions)
	}

	deployment.Status.AvailableReplicas = 1
	changed := Compute(robot, deployment, nil, nil, metav1.NewTime(robottest.FixtureNow))
	if ready := meta.FindStatusCondition(changed.Conditions, robotv1beta1.ConditionReady); ready.Status != metav1.ConditionFalse || !ready.LastTransitionTime.Equal(&metav1.Time{Time: robottest.FixtureNow}) {
		t.Errorf("Ready %+v, want False since now", ready)
	}
}

func TestStatusApplyConfigurationHoldsOnlyOwnConditions(t *testing.T) {
	robot := robottest.NewRobot("test", 1)
	status := Compute(robot, liveDeployment(t, robot), nil, nil, metav1.NewTime(robottest.FixtureNow))
	status.Conditions = append(status.Conditions, metav1.Condition{Type: "Audited", Status: "True", Reason: "Checked"})

	ac := ApplyConfiguration(robot, &status)
	if *ac.Name != "test" || *ac.Namespace != "default" {
		t.Errorf("apply configuration for %s/%s, want default/test", *ac.Namespace, *ac.Name)
	}
	var types []string
	for _, c := range ac.Status.Conditions {
		types = append(types, *c.Type)
	}
	if strings.Join(types, ",") != "Ready,Available,Progressing,Synced" {
		t.Errorf("applied condition types %v, want the operator's own four of a Ready Robot", types)
	}
	if ptr.Deref(ac.Status.AvailableReplicas, -1) != 1 || ptr.Deref(ac.Status.ObservedGeneration, -1) != 1 {
		t.Errorf("apply configuration status %+v does not carry the counts", ac.Status)
	}
}

// TestPausedStatus: a paused Robot reports Synced=False with the reason
// Paused, and the generation it saw; Ready stays about a Deployment that
// holds the Robot's spec, and says Paused for one that does not.
func TestPausedStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	paused := &outcome.PausedError{Deployment: "test"}
	robot := robottest.NewRobot("test", 2)
	robot.Generation = 3
	desired, err := workload.NewDeployment(robot)
	deployment := robottest.LiveDeploymentOf(t, desired, err)

	status := Compute(robot, deployment, nil, paused, now)
	if status.ObservedGeneration != 3 {
		t.Errorf("observedGeneration %d, want 3", status.ObservedGeneration)
	}
	synced := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionSynced)
	if synced.Status != metav1.ConditionFalse || synced.Reason != robotv1beta1.ReasonPaused || synced.Message != paused.Error() {
		t.Errorf("Synced: %s %s %q", synced.Status, synced.Reason, synced.Message)
	}
	if !ReportsPaused(status) {
		t.Error("ReportsPaused is false for a paused status")
	}
	if ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady); ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready %s %s, want True: the Deployment runs the Robot's spec", ready.Status, ready.Reason)
	}

	// The Robot changed while paused: its Deployment does not run what
	// it asks for.
	changed := robot.DeepCopy()
	changed.Spec.Replicas = ptr.To[int32](5)
	status = Compute(changed, deployment, nil, paused, now)
	if ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady); ready.Status != metav1.ConditionFalse || ready.Reason != robotv1beta1.ReasonPaused {
		t.Errorf("Ready %s %s, want False %s", ready.Status, ready.Reason, robotv1beta1.ReasonPaused)
	}

	if ReportsPaused(Compute(robot, deployment, nil, nil, now)) {
		t.Error("ReportsPaused is true for a synced status")
	}
}

// TestReadyFor: Ready for a generation only when the Ready condition is
// True and both it and the status observed that generation.
func TestReadyFor(t *testing.T) {
	ready := func(status metav1.ConditionStatus, conditionGeneration, statusGeneration int64) robotv1beta1.RobotStatus {
		return robotv1beta1.RobotStatus{ObservedGeneration: statusGeneration, Conditions: []metav1.Condition{
			{Type: robotv1beta1.ConditionReady, Status: status, ObservedGeneration: conditionGeneration}}}
	}
	for _, tc := range []struct {
		name   string
		status robotv1beta1.RobotStatus
		want   bool
	}{
		{"ready for the generation", ready(metav1.ConditionTrue, 2, 2), true},
		{"not ready", ready(metav1.ConditionFalse, 2, 2), false},
		{"ready for an earlier generation", ready(metav1.ConditionTrue, 1, 1), false},
		{"the condition observed it, the status not yet", ready(metav1.ConditionTrue, 2, 1), false},
		{"no Ready condition", robotv1beta1.RobotStatus{ObservedGeneration: 2}, false},
	} {
		if got := ReadyFor(tc.status, 2); got != tc.want {
			t.Errorf("%s: ReadyFor = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSyncedFor(t *testing.T) {
	synced := func(status metav1.ConditionStatus, conditionGeneration, statusGeneration int64) robotv1beta1.RobotStatus {
		return robotv1beta1.RobotStatus{ObservedGeneration: statusGeneration, Conditions: []metav1.Condition{
			{Type: robotv1beta1.ConditionSynced, Status: status, ObservedGeneration: conditionGeneration}}}
	}
	for _, tc := range []struct {
		name   string
		status robotv1beta1.RobotStatus
		want   bool
	}{
		{"synced for the generation", synced(metav1.ConditionTrue, 2, 2), true},
		{"the sync failed", synced(metav1.ConditionFalse, 2, 2), false},
		{"synced for an earlier generation", synced(metav1.ConditionTrue, 1, 1), false},
		{"the condition observed it, the status not yet", synced(metav1.ConditionTrue, 2, 1), false},
		{"no Synced condition", robotv1beta1.RobotStatus{ObservedGeneration: 2}, false},
		{"Ready is not Synced", robotv1beta1.RobotStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{
			{Type: robotv1beta1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 2}}}, false},
	} {
		if got := SyncedFor(tc.status, 2); got != tc.want {
			t.Errorf("%s: SyncedFor = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestReportsLoadBalancerClassImmutable: the status remembers the API
// server's refusal of the Service's class for the generation it was
// computed for, and for no other.
func TestReportsLoadBalancerClassImmutable(t *testing.T) {
	now := metav1.NewTime(robottest.FixtureNow)
	robot := robottest.NewServiceRobot("test", robotv1beta1.ServiceTypeLoadBalancer)
	robot.Generation = 4
	desired, err := workload.NewDeployment(robot)
	deployment := robottest.LiveDeploymentOf(t, desired, err)
	refused := &outcome.LoadBalancerClassImmutableError{Namespace: "default", Service: "test", Current: "example.com/a"}

	status := Compute(robot, deployment, nil, refused, now)
	if !ReportsLoadBalancerClassImmutable(status, 4) {
		t.Errorf("a status computed with the refusal does not report it: %+v", status.Conditions)
	}
	if ReportsLoadBalancerClassImmutable(status, 5) {
		t.Error("the refusal of generation 4 is reported for generation 5")
	}
	if ReportsLoadBalancerClassImmutable(Compute(robot, deployment, nil, nil, now), 4) {
		t.Error("a synced status reports the refusal")
	}
	if ReportsLoadBalancerClassImmutable(Compute(robot, deployment, nil, &outcome.InvalidSpecError{Err: errors.New("bad")}, now), 4) {
		t.Error("another failure reports the refusal")
	}
}
