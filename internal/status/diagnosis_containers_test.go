package status

import (
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/robottest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// containersRobot is a Robot with a sidecar, proxy, and an init container,
// migrate.
func containersRobot() *robotv1beta1.Robot {
	robot := robottest.NewRobot("test", 1)
	robot.Spec.Sidecars = []robotv1beta1.RobotSidecar{{RobotContainer: robotv1beta1.RobotContainer{Name: "proxy", Image: "registry.example/proxy:2"}}}
	robot.Spec.InitContainers = []robotv1beta1.RobotContainer{{Name: "migrate", Image: "registry.example/migrate:1"}}
	return robot
}

// podWith is a pod of containersRobot's with its sidecar and its init
// container in the states given, and the Robot's container in main.
func podWith(robot *robotv1beta1.Robot, main corev1.ContainerState, proxy, migrate corev1.ContainerStatus) *corev1.Pod {
	pod := robottest.Pod(robot, "test-a", main)
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "proxy", Image: "registry.example/proxy:2", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
		{Name: "migrate", Image: "registry.example/migrate:1"},
	}
	proxy.Name, migrate.Name = "proxy", "migrate"
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{proxy, migrate}
	return pod
}

// TestDiagnosedInitContainersAndSidecars: an init container that cannot
// pull its image or keeps failing, and a sidecar that is not ready or
// crashes, are named on Ready's message, as the Robot's container's causes
// are; one that merely waits, runs or has completed is not a cause.
func TestDiagnosedInitContainersAndSidecars(t *testing.T) {
	robot := containersRobot()
	initializing := robottest.Waiting("PodInitializing", "")
	ready := corev1.ContainerStatus{State: robottest.RunningSince(time.Minute), Ready: true, Started: ptr.To(true)}
	waiting := corev1.ContainerStatus{State: robottest.Waiting("PodInitializing", "")}
	completed := corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}, Ready: true}
	failed := &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: `relation "robots" does not exist`}
	notReadySince := func(d time.Duration) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: robottest.RunningSince(d), Started: ptr.To(true)}
	}
	tests := []struct {
		name           string
		pod            *corev1.Pod
		crashLoopSoFar bool // the Robot said CrashLoop before
		reason         string
		message        string
		recheck        time.Duration
	}{{
		name:   "the sidecar starting, the init container waiting its turn: slow",
		pod:    podWith(robot, initializing, corev1.ContainerStatus{State: robottest.RunningSince(time.Second)}, waiting),
		reason: robotv1beta1.ReasonRolloutInProgress,
	}, {
		name:    "the init container's image cannot be pulled",
		pod:     podWith(robot, initializing, ready, corev1.ContainerStatus{State: robottest.Waiting("ErrImagePull", "not found")}),
		reason:  robotv1beta1.ReasonImagePullFailed,
		message: `init container "migrate" cannot pull image "registry.example/migrate:1" (ErrImagePull): not found`,
	}, {
		name: "the init container keeps failing",
		pod: podWith(robot, initializing, ready, corev1.ContainerStatus{State: robottest.Waiting("CrashLoopBackOff", "back-off 20s"),
			LastTerminationState: corev1.ContainerState{Terminated: failed}, RestartCount: 3}),
		reason:  robotv1beta1.ReasonCrashLoop,
		message: `init container "migrate" keeps exiting (CrashLoopBackOff): last exit code 2 (Error): relation "robots" does not exist`,
	}, {
		name:   "the init container failed once: no crash loop yet",
		pod:    podWith(robot, initializing, ready, corev1.ContainerStatus{State: corev1.ContainerState{Terminated: failed}}),
		reason: robotv1beta1.ReasonRolloutInProgress,
	}, {
		name:           "the init container failed again, waiting to run: still the crash loop it was",
		pod:            podWith(robot, initializing, ready, corev1.ContainerStatus{State: corev1.ContainerState{Terminated: failed}}),
		crashLoopSoFar: true,
		reason:         robotv1beta1.ReasonCrashLoop,
		message:        "the crash loop reported before",
	}, {
		name: "the init container completed after failing: not a cause",
		pod: podWith(robot, robottest.RunningSince(5*time.Second), ready, corev1.ContainerStatus{State: completed.State, Ready: true,
			LastTerminationState: corev1.ContainerState{Terminated: failed}}),
		reason: robotv1beta1.ReasonRolloutInProgress,
	}, {
		name:    "the sidecar not ready for a minute",
		pod:     podWith(robot, initializing, notReadySince(time.Minute), waiting),
		reason:  robotv1beta1.ReasonReadinessProbeFailing,
		message: `sidecar "proxy" of pod test-a is running but not ready since`,
	}, {
		name:    "the sidecar not ready for 10 s: slow, look again later",
		pod:     podWith(robot, initializing, notReadySince(10*time.Second), waiting),
		reason:  robotv1beta1.ReasonRolloutInProgress,
		recheck: 20 * time.Second,
	}, {
		name: "the sidecar keeps crashing",
		pod: podWith(robot, initializing, corev1.ContainerStatus{State: robottest.Waiting("CrashLoopBackOff", "back-off 10s"),
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}, waiting),
		reason:  robotv1beta1.ReasonCrashLoop,
		message: `sidecar "proxy" keeps exiting (CrashLoopBackOff): last exit code 137 (OOMKilled)`,
	}, {
		name:    "the sidecar's ConfigMap is missing",
		pod:     podWith(robot, initializing, corev1.ContainerStatus{State: robottest.Waiting("CreateContainerConfigError", `configmap "proxy" not found`)}, waiting),
		reason:  robotv1beta1.ReasonConfigMissing,
		message: `pod test-a cannot start its sidecar "proxy": configmap "proxy" not found`,
	}, {
		name:    "an image pull says more than a sidecar not ready",
		pod:     podWith(robot, initializing, notReadySince(time.Minute), corev1.ContainerStatus{State: robottest.Waiting("ImagePullBackOff", "back-off")}),
		reason:  robotv1beta1.ReasonImagePullFailed,
		message: `init container "migrate" cannot pull image`,
	}, {
		name:    "the Robot's container's own cause, the others fine",
		pod:     podWith(robot, robottest.Waiting("ErrImagePull", "not found"), ready, completed),
		reason:  robotv1beta1.ReasonImagePullFailed,
		message: `cannot pull image "registry.example/robot:1.0" (ErrImagePull): not found`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			robot := robot.DeepCopy()
			if tt.crashLoopSoFar {
				robot.Status.Conditions = []metav1.Condition{{Type: robotv1beta1.ConditionReady, Status: metav1.ConditionFalse,
					Reason: robotv1beta1.ReasonCrashLoop, Message: "the crash loop reported before"}}
			}
			deployment := unavailable(t, robot)
			status, recheck := diagnosed(t, robot, deployment, []*appsv1.ReplicaSet{robottest.ReplicaSet(deployment, "1")}, tt.pod)
			if recheck != tt.recheck {
				t.Errorf("recheck: got %v, want %v", recheck, tt.recheck)
			}
			condition := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
			if condition.Status != metav1.ConditionFalse || condition.Reason != tt.reason {
				t.Fatalf("Ready: got %s/%s (%s), want False/%s", condition.Status, condition.Reason, condition.Message, tt.reason)
			}
			if !strings.Contains(condition.Message, tt.message) {
				t.Errorf("Ready message: got %q, want it to contain %q", condition.Message, tt.message)
			}
		})
	}
}
