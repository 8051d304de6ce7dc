package status

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/podsummary"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// unavailable is robot's Deployment with none of its replicas available.
func unavailable(t *testing.T, robot *robotv1beta1.Robot) *appsv1.Deployment {
	return robottest.UnavailableNow(liveDeployment(t, robot))
}

func TestDiagnosedStatus(t *testing.T) {
	robot := robottest.NewRobot("test", 2)
	crashed := func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}
		p.Status.ContainerStatuses[0].RestartCount = 4
	}
	started := func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses[0].Started = ptr.To(true)
	}
	tests := []struct {
		name       string
		deployment func(*appsv1.Deployment)
		// replicaSets are the Deployment's in the cache; nil: its
		// ReplicaSet of revision 1, whose pods robottest.Pod makes.
		replicaSets func(*appsv1.Deployment) []*appsv1.ReplicaSet
		pods        []*corev1.Pod
		edit        func(*corev1.Pod)
		reason      string
		message     string // a substring of the Ready message
		recheck     time.Duration
	}{{
		name:   "slow: pods still creating",
		pods:   []*corev1.Pod{robottest.Pod(robot, "test-a", robottest.Waiting("ContainerCreating", ""))},
		reason: robotv1beta1.ReasonRolloutInProgress,
	}, {
		name:    "image cannot be pulled",
		pods:    []*corev1.Pod{robottest.Pod(robot, "test-a", robottest.Waiting("ImagePullBackOff", `Back-off pulling image "registry.example/robot:1.0"`))},
		reason:  robotv1beta1.ReasonImagePullFailed,
		message: `cannot pull image "registry.example/robot:1.0" (ImagePullBackOff): Back-off pulling image`,
	}, {
		name:    "crash loop",
		pods:    []*corev1.Pod{robottest.Pod(robot, "test-a", robottest.Waiting("CrashLoopBackOff", "back-off 40s restarting failed container"))},
		edit:    crashed,
		reason:  robotv1beta1.ReasonCrashLoop,
		message: `container "robot" keeps exiting (CrashLoopBackOff): last exit code 3 (Error)`,
	}, {
		// The kubelet has not said CrashLoopBackOff (this Robot never
		// reported a crash loop): slow, until the readiness grace is up.
		name: "running again after an exit, no crash loop reported",
		pods: []*corev1.Pod{robottest.Pod(robot, "test-a", robottest.RunningSince(time.Second))},
		edit: func(p *corev1.Pod) {
			crashed(p)
			started(p)
		},
		reason:  robotv1beta1.ReasonRolloutInProgress,
		recheck: readinessGrace - time.Second,
	}, {
		name: "unschedulable",
		pods: []*corev1.Pod{robottest.Pod(robot, "test-a", corev1.ContainerState{})},
		edit: func(p *corev1.Pod) {
			p.Status.ContainerStatuses = nil
			p.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}
		},
		reason:  robotv1beta1.ReasonUnschedulable,
		message: "pod test-a cannot be scheduled: 0/3 nodes are available",
	}, {
		name:    "config missing",
		pods:    []*corev1.Pod{robottest.Pod(robot, "test-a", robottest.Waiting("CreateContainerConfigError", `configmap "settings" not found`))},
		reason:  robotv1beta1.ReasonConfigMissing,
		message: `configmap "settings" not found`,
	}, {
		name:    "readiness probe failing for long",
		pods:    []*corev1.Pod{robottest.Pod(robot, "test-a", robottest.RunningSince(time.Minute))},
		edit:    started,
		reason:  robotv1beta1.ReasonReadinessProbeFailing,
		message: "running but not ready since",
	}, {
		name:    "started, not ready for a few seconds: slow, look again later",
		pods:    []*corev1.Pod{robottest.Pod(robot, "test-a", robottest.RunningSince(10*time.Second))},
		edit:    started,
		reason:  robotv1beta1.ReasonRolloutInProgress,
		recheck: 20 * time.Second,
	}, {
		name: "quota",
		deployment: func(d *appsv1.Deployment) {
			d.Status.UpdatedReplicas, d.Status.Replicas = 0, 0
			d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
				Reason: "FailedCreate", Message: `pods "test-abc-x" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=0, limited: pods=0`})
		},
		reason:  robotv1beta1.ReasonQuotaExceeded,
		message: "pods cannot be created: pods \"test-abc-x\" is forbidden: exceeded quota",
	}, {
		name: "pod security",
		deployment: func(d *appsv1.Deployment) {
			d.Status.UpdatedReplicas, d.Status.Replicas = 0, 0
			d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
				Reason: "FailedCreate", Message: `pods "test-abc-x" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true`})
		},
		reason:  robotv1beta1.ReasonPodSecurityRejected,
		message: `violates PodSecurity "restricted:latest"`,
	}, {
		name: "other replica failure",
		deployment: func(d *appsv1.Deployment) {
			d.Status.UpdatedReplicas, d.Status.Replicas = 0, 0
			d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
				Reason: "FailedCreate", Message: `admission webhook "x" denied the request`})
		},
		reason:  robotv1beta1.ReasonReplicaFailure,
		message: "denied the request",
	}, {
		// The image typo fixed: revision 2 has no pod yet, revision 1's
		// pod still fails to pull.
		name: "a pod of an earlier template is ignored",
		deployment: func(d *appsv1.Deployment) {
			d.Annotations[podsummary.RevisionAnnotation] = "2"
		},
		replicaSets: func(d *appsv1.Deployment) []*appsv1.ReplicaSet {
			return []*appsv1.ReplicaSet{robottest.ReplicaSet(d, "1"), robottest.ReplicaSet(d, "2")}
		},
		pods: []*corev1.Pod{robottest.Pod(robot, "test-a", robottest.Waiting("ImagePullBackOff", "no such image"))},
		edit: func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = "registry.example/robot:typo"
		},
		reason: robotv1beta1.ReasonRolloutInProgress,
	}, {
		name: "a terminating pod is ignored",
		pods: []*corev1.Pod{robottest.Pod(robot, "test-a", robottest.Waiting("ImagePullBackOff", "no such image"))},
		edit: func(p *corev1.Pod) {
			p.DeletionTimestamp = ptr.To(metav1.NewTime(robottest.FixtureNow))
		},
		reason: robotv1beta1.ReasonRolloutInProgress,
	}, {
		name: "the most telling cause wins, whatever the pods' order",
		pods: []*corev1.Pod{
			robottest.Pod(robot, "test-a", robottest.Waiting("CrashLoopBackOff", "")),
			robottest.Pod(robot, "test-b", robottest.Waiting("ErrImagePull", "not found")),
		},
		reason:  robotv1beta1.ReasonImagePullFailed,
		message: "(ErrImagePull): not found",
	}, {
		name:    "progress deadline exceeded: the cause says more",
		pods:    []*corev1.Pod{robottest.Pod(robot, "test-a", robottest.Waiting("ErrImagePull", "not found"))},
		reason:  robotv1beta1.ReasonImagePullFailed,
		message: "not found",
		deployment: func(d *appsv1.Deployment) {
			d.Status.Conditions[1] = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
				Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "test-abc" has timed out progressing.`}
		},
	}, {
		name:    "a long kubelet message is cut",
		pods:    []*corev1.Pod{robottest.Pod(robot, "test-a", robottest.Waiting("ErrImagePull", strings.Repeat("é", 2000)))},
		reason:  robotv1beta1.ReasonImagePullFailed,
		message: "é...",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deployment := unavailable(t, robot)
			if tt.deployment != nil {
				tt.deployment(deployment)
			}
			for _, p := range tt.pods {
				if tt.edit != nil {
					tt.edit(p)
				}
			}
			replicaSets := []*appsv1.ReplicaSet{robottest.ReplicaSet(deployment, "1")}
			if tt.replicaSets != nil {
				replicaSets = tt.replicaSets(deployment)
			}
			status, recheck := diagnosed(t, robot, deployment, replicaSets, tt.pods...)
			ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
			if ready.Status != metav1.ConditionFalse || ready.Reason != tt.reason {
				t.Fatalf("Ready: got %s/%s (%s), want False/%s", ready.Status, ready.Reason, ready.Message, tt.reason)
			}
			if !strings.Contains(ready.Message, tt.message) {
				t.Errorf("Ready message: got %q, want it to contain %q", ready.Message, tt.message)
			}
			if len(ready.Message) > maxMessageLength {
				t.Errorf("Ready message is %d bytes, more than %d", len(ready.Message), maxMessageLength)
			}
			if recheck != tt.recheck {
				t.Errorf("recheck: got %v, want %v", recheck, tt.recheck)
			}
		})
	}
}

// A Robot that is Ready, or not Ready for a reason of its own, is not
// diagnosed: whatever its pods say, its status is Compute's.
func TestDiagnosedStatusOnlyForUnavailableReplicas(t *testing.T) {
	robot := robottest.NewRobot("test", 2)
	failing := []*corev1.Pod{robottest.Pod(robot, "test-a", robottest.Waiting("ErrImagePull", "not found"))}
	for name, deployment := range map[string]*appsv1.Deployment{
		"ready":         liveDeployment(t, robot),
		"no Deployment": nil,
	} {
		t.Run(name, func(t *testing.T) {
			want := Compute(robot, deployment, nil, nil, metav1.NewTime(robottest.FixtureNow))
			var replicaSets []*podsummary.ReplicaSet
			if deployment != nil {
				replicaSets = firstReplicaSet(t, deployment)
			}
			got, recheck := Diagnosed(robot, deployment, nil, replicaSets, summaries(t, failing...), nil, metav1.NewTime(robottest.FixtureNow))
			if fmt.Sprint(got) != fmt.Sprint(want) || recheck != 0 {
				t.Errorf("got %v (recheck %v), want %v", got, recheck, want)
			}
		})
	}
	t.Run("spec change not applied", func(t *testing.T) {
		deployment := unavailable(t, robot)
		deployment.Annotations[workload.AnnotationSpecHash] = "an-older-spec"
		got, _ := Diagnosed(robot, deployment, nil, firstReplicaSet(t, deployment), summaries(t, failing...), errors.New("the server is currently unable to handle the request"), metav1.NewTime(robottest.FixtureNow))
		// Ready says why the sync failed: the pods run an older spec.
		if ready := meta.FindStatusCondition(got.Conditions, robotv1beta1.ConditionReady); ready.Reason != robotv1beta1.ReasonSyncFailed {
			t.Errorf("Ready: got %s, want %s", ready.Reason, robotv1beta1.ReasonSyncFailed)
		}
	})
}

// TestDiagnosedReadsOnlyTheCurrentReplicaSet: the diagnosis reads the pods
// of the Deployment's current ReplicaSet only (controlled by that
// Deployment, of its revision), whatever image they run. A fix that keeps
// the image (args, env, labels) is not reported as still broken while the
// pods of the earlier template wind down, and a Robot recreated under the
// same name does not take the pods its predecessor left for its own.
func TestDiagnosedReadsOnlyTheCurrentReplicaSet(t *testing.T) {
	robot := robottest.NewRobot("test", 1)
	crashing := func(rs *appsv1.ReplicaSet, name string) *corev1.Pod {
		p := robottest.OwnedBy(robottest.Pod(robot, name, robottest.Waiting("CrashLoopBackOff", "back-off 40s restarting failed container")), rs)
		p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
		return p
	}
	starting := func(rs *appsv1.ReplicaSet, name string) *corev1.Pod {
		p := robottest.OwnedBy(robottest.Pod(robot, name, robottest.RunningSince(5*time.Second)), rs)
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses[0].Started = ptr.To(true)
		return p
	}
	// earlier is the ReplicaSet of the Deployment of the Robot of the same
	// name before this one, which the garbage collector has yet to delete.
	earlier := func(d *appsv1.Deployment, revision string) *appsv1.ReplicaSet {
		rs := robottest.ReplicaSet(d, revision)
		rs.Name, rs.UID, rs.OwnerReferences[0].UID = "test-6b8d9f7c5", "earlier-rs-uid", "earlier-deployment-uid"
		return rs
	}
	tests := []struct {
		name string
		// revision is the Deployment's.
		revision string
		// pods are made from the Deployment's ReplicaSets.
		pods   func(d *appsv1.Deployment) ([]*appsv1.ReplicaSet, []*corev1.Pod)
		reason string
	}{{
		name:     "the fix keeps the image: the new ReplicaSet has no pod yet, the old one's still crashes",
		revision: "2",
		pods: func(d *appsv1.Deployment) ([]*appsv1.ReplicaSet, []*corev1.Pod) {
			old, current := robottest.ReplicaSet(d, "1"), robottest.ReplicaSet(d, "2")
			return []*appsv1.ReplicaSet{old, current}, []*corev1.Pod{crashing(old, "test-old")}
		},
		reason: robotv1beta1.ReasonRolloutInProgress,
	}, {
		name:     "the fix keeps the image: the new ReplicaSet's pod starts, the old one's still crashes",
		revision: "2",
		pods: func(d *appsv1.Deployment) ([]*appsv1.ReplicaSet, []*corev1.Pod) {
			old, current := robottest.ReplicaSet(d, "1"), robottest.ReplicaSet(d, "2")
			return []*appsv1.ReplicaSet{old, current}, []*corev1.Pod{crashing(old, "test-a-old"), starting(current, "test-b-new")}
		},
		reason: robotv1beta1.ReasonRolloutInProgress,
	}, {
		name:     "the current ReplicaSet not in the cache yet: no pod is known to be current",
		revision: "2",
		pods: func(d *appsv1.Deployment) ([]*appsv1.ReplicaSet, []*corev1.Pod) {
			old := robottest.ReplicaSet(d, "1")
			return []*appsv1.ReplicaSet{old}, []*corev1.Pod{crashing(old, "test-old")}
		},
		reason: robotv1beta1.ReasonRolloutInProgress,
	}, {
		name:     "a rollback: an earlier ReplicaSet is current again, the one it replaces still crashes",
		revision: "3",
		pods: func(d *appsv1.Deployment) ([]*appsv1.ReplicaSet, []*corev1.Pod) {
			again, replaced := robottest.ReplicaSet(d, "1"), robottest.ReplicaSet(d, "2")
			again.Annotations[podsummary.RevisionAnnotation] = "3"
			return []*appsv1.ReplicaSet{again, replaced}, []*corev1.Pod{crashing(replaced, "test-a-replaced"), starting(again, "test-b-again")}
		},
		reason: robotv1beta1.ReasonRolloutInProgress,
	}, {
		name:     "the predecessor's pods, of a ReplicaSet of another Deployment of the same name",
		revision: "1",
		pods: func(d *appsv1.Deployment) ([]*appsv1.ReplicaSet, []*corev1.Pod) {
			before := earlier(d, "1")
			return []*appsv1.ReplicaSet{before, robottest.ReplicaSet(d, "1")},
				[]*corev1.Pod{robottest.OwnedBy(robottest.Pod(robot, "test-6b8d9f7c5-x", robottest.Waiting("ErrImagePull", "not found")), before)}
		},
		reason: robotv1beta1.ReasonRolloutInProgress,
	}, {
		name:     "the predecessor's pods, its ReplicaSet of the same revision as the current one",
		revision: "1",
		pods: func(d *appsv1.Deployment) ([]*appsv1.ReplicaSet, []*corev1.Pod) {
			before := earlier(d, "1")
			return []*appsv1.ReplicaSet{before, robottest.ReplicaSet(d, "1")},
				[]*corev1.Pod{crashing(before, "test-6b8d9f7c5-x"), starting(robottest.ReplicaSet(d, "1"), "test-y")}
		},
		reason: robotv1beta1.ReasonRolloutInProgress,
	}, {
		name:     "the predecessor's ReplicaSet gone, its pods left, the current one of the same name",
		revision: "1",
		pods: func(d *appsv1.Deployment) ([]*appsv1.ReplicaSet, []*corev1.Pod) {
			before := earlier(d, "1")
			before.Name = robottest.ReplicaSet(d, "1").Name
			return []*appsv1.ReplicaSet{robottest.ReplicaSet(d, "1")},
				[]*corev1.Pod{robottest.OwnedBy(robottest.Pod(robot, "test-x", robottest.Waiting("ErrImagePull", "not found")), before)}
		},
		reason: robotv1beta1.ReasonRolloutInProgress,
	}, {
		name:     "a Deployment with no revision yet: no ReplicaSet is current",
		revision: "",
		pods: func(d *appsv1.Deployment) ([]*appsv1.ReplicaSet, []*corev1.Pod) {
			rs := robottest.ReplicaSet(d, "1")
			return []*appsv1.ReplicaSet{rs}, []*corev1.Pod{crashing(rs, "test-a")}
		},
		reason: robotv1beta1.ReasonRolloutInProgress,
	}, {
		name:     "the current ReplicaSet's pod crashes, the old one's runs: the cause is the current one's",
		revision: "2",
		pods: func(d *appsv1.Deployment) ([]*appsv1.ReplicaSet, []*corev1.Pod) {
			old, current := robottest.ReplicaSet(d, "1"), robottest.ReplicaSet(d, "2")
			return []*appsv1.ReplicaSet{old, current}, []*corev1.Pod{starting(old, "test-a-old"), crashing(current, "test-b-new")}
		},
		reason: robotv1beta1.ReasonCrashLoop,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deployment := unavailable(t, robot)
			deployment.Annotations[podsummary.RevisionAnnotation] = tt.revision
			replicaSets, pods := tt.pods(deployment)
			status, _ := diagnosed(t, robot, deployment, replicaSets, pods...)
			if ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady); ready.Status != metav1.ConditionFalse || ready.Reason != tt.reason {
				t.Errorf("Ready: got %s/%s (%s), want False/%s", ready.Status, ready.Reason, ready.Message, tt.reason)
			}
		})
	}
}

// diagnosed is Diagnosed at robottest.FixtureNow after a successful sync,
// with replicaSets and pods in the operator's caches.
func diagnosed(t testing.TB, robot *robotv1beta1.Robot, deployment *appsv1.Deployment, replicaSets []*appsv1.ReplicaSet, pods ...*corev1.Pod) (robotv1beta1.RobotStatus, time.Duration) {
	t.Helper()
	return Diagnosed(robot, deployment, nil, replicaSetSummaries(t, replicaSets...), summaries(t, pods...), nil, metav1.NewTime(robottest.FixtureNow))
}

// firstReplicaSet is what the ReplicaSet cache holds for deployment's
// ReplicaSet of revision 1, whose pods robottest.Pod makes.
func firstReplicaSet(t testing.TB, deployment *appsv1.Deployment) []*podsummary.ReplicaSet {
	return replicaSetSummaries(t, robottest.ReplicaSet(deployment, "1"))
}

func replicaSetSummaries(t testing.TB, replicaSets ...*appsv1.ReplicaSet) []*podsummary.ReplicaSet {
	t.Helper()
	out := make([]*podsummary.ReplicaSet, 0, len(replicaSets))
	for _, rs := range replicaSets {
		summary, err := podsummary.Summarize(rs)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, summary.(*podsummary.ReplicaSet))
	}
	return out
}

func summaries(t testing.TB, pods ...*corev1.Pod) []*podsummary.Pod {
	t.Helper()
	out := make([]*podsummary.Pod, 0, len(pods))
	for _, pod := range pods {
		summary, err := podsummary.SummarizePod(pod)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, summary.(*podsummary.Pod))
	}
	return out
}

// TestSingleExitIsNoCrashLoop: CrashLoopBackOff is said only when the kubelet
// says it. A container that exited once with an error and runs again, or
// has just terminated, is no crash loop; a Robot that already reports a
// crash loop keeps it while its container runs between two crashes, so that
// a real crash loop does not flip its reason at every restart.
func TestSingleExitIsNoCrashLoop(t *testing.T) {
	robot := robottest.NewRobot("test", 2)
	exitedOnce := func(state corev1.ContainerState) *corev1.Pod {
		p := robottest.Pod(robot, "test-a", state)
		p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
		p.Status.ContainerStatuses[0].RestartCount = 1
		p.Status.ContainerStatuses[0].Started = ptr.To(true)
		return p
	}
	terminated := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
	for name, pod := range map[string]*corev1.Pod{
		"running again after one exit": exitedOnce(robottest.RunningSince(time.Second)),
		"terminated, no back-off yet":  exitedOnce(terminated),
	} {
		t.Run(name, func(t *testing.T) {
			deployment := unavailable(t, robot)
			status, _ := diagnosed(t, robot, deployment, []*appsv1.ReplicaSet{robottest.ReplicaSet(deployment, "1")}, pod)
			ready := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady)
			if ready.Reason == robotv1beta1.ReasonCrashLoop || strings.Contains(ready.Message, "CrashLoopBackOff") {
				t.Errorf("Ready: %s (%s); a single exit is no crash loop", ready.Reason, ready.Message)
			}
		})
	}
	t.Run("a crash loop already reported stays while the container runs again", func(t *testing.T) {
		looping := robottest.Pod(robot, "test-a", robottest.Waiting("CrashLoopBackOff", "back-off 40s restarting failed container"))
		looping.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
		deployment := unavailable(t, robot)
		before, _ := Diagnosed(robot, deployment, nil, firstReplicaSet(t, deployment), summaries(t, looping), nil, metav1.NewTime(robottest.FixtureNow))
		reported := robot.DeepCopy()
		reported.Status = before
		after, _ := Diagnosed(reported, deployment, nil, firstReplicaSet(t, deployment), summaries(t, exitedOnce(robottest.RunningSince(time.Second))), nil, metav1.NewTime(robottest.FixtureNow))
		was := meta.FindStatusCondition(before.Conditions, robotv1beta1.ConditionReady)
		is := meta.FindStatusCondition(after.Conditions, robotv1beta1.ConditionReady)
		if was.Reason != robotv1beta1.ReasonCrashLoop || is.Reason != was.Reason || is.Message != was.Message {
			t.Errorf("Ready went from %s (%s) to %s (%s); want the crash loop kept", was.Reason, was.Message, is.Reason, is.Message)
		}
	})
}

// TestDiagnosedStatusIsStable: a Robot whose diagnosed reason does not
// change gets the same status at every sync, however much later: the
// conditions keep the lastTransitionTime they have stored, so an unchanged
// Robot writes no status. Reconciling and Stalled follow Ready through
// Compute's reason first (RolloutInProgress), then the diagnosed one; the
// first must not leave its mark on their transition times.
func TestDiagnosedStatusIsStable(t *testing.T) {
	for name, state := range map[string]func(*corev1.Pod){
		"unschedulable": func(p *corev1.Pod) {
			p.Status.ContainerStatuses = nil
			p.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}
		},
		"image cannot be pulled": func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = robottest.Waiting("ImagePullBackOff", "Back-off pulling image")
		},
	} {
		t.Run(name, func(t *testing.T) {
			robot := robottest.NewRobot("test", 1)
			deployment := unavailable(t, robot)
			pod := robottest.Pod(robot, "test-a", corev1.ContainerState{})
			state(pod)
			replicaSets, pods := firstReplicaSet(t, deployment), summaries(t, pod)
			first, _ := Diagnosed(robot, deployment, nil, replicaSets, pods, nil, metav1.NewTime(robottest.FixtureNow))
			robot.Status = first
			later := metav1.NewTime(robottest.FixtureNow.Add(time.Hour))
			second, _ := Diagnosed(robot, deployment, nil, replicaSets, pods, nil, later)
			if !equality.Semantic.DeepEqual(first, second) {
				t.Errorf("an hour later, the same Robot's status changed:\nfirst:  %+v\nsecond: %+v", first.Conditions, second.Conditions)
			}
		})
	}
}
