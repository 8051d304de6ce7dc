package podsummary

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// A pod as the API server sends it and the same pod with only what the
// diagnosis reads make the same summary: the summary keeps nothing else.
func TestSummarizePodKeepsOnlyWhatDiagnoseReads(t *testing.T) {
	robot := robottest.NewRobot("test", 1)
	for _, pod := range []*corev1.Pod{
		robottest.Pod(robot, "test-a", robottest.Waiting("ErrImagePull", "not found")),
		robottest.Pod(robot, "test-b", robottest.RunningSince(time.Minute)),
	} {
		pod.ResourceVersion = "123456"
		full, minimal := summarizePods(t, fullPod(pod))[0], summarizePods(t, pod)[0]
		if !full.SameAs(minimal) || full.ResourceVersion != minimal.ResourceVersion {
			t.Errorf("%s: the full pod's summary %+v differs from the minimal pod's %+v", pod.Name, full, minimal)
		}
		if full.Robot != robot.Name || full.GetLabels() != nil || full.GetOwnerReferences() != nil || full.GetManagedFields() != nil || full.GetUID() != "" {
			t.Errorf("%s: the summary keeps more than it should: %+v", pod.Name, full.cachedMeta)
		}
		if copied := full.DeepCopyObject().(*Pod); !copied.SameAs(full) || (copied.Container != nil && copied.Container == full.Container) {
			t.Errorf("%s: DeepCopyObject is not a deep copy", pod.Name)
		}
	}
}

// fullPod is pod as the API server sends it: with the fields a real pod of
// the Robot's Deployment has, which the cache need not keep.
func fullPod(pod *corev1.Pod) *corev1.Pod {
	full := pod.DeepCopy()
	full.UID = types.UID("uid-" + pod.Name)
	full.ResourceVersion = "123456"
	full.GenerateName = "test-5d9c7b8f6-"
	full.Labels["pod-template-hash"] = "5d9c7b8f6"
	full.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(strings.Repeat(`{"f:metadata":{"f:labels":{}}}`, 30))}},
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(strings.Repeat(`{"f:status":{"f:conditions":{}}}`, 30))}},
	}
	c := &full.Spec.Containers[0]
	c.Args = []string{"netexec", "--http-port=8080"}
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	c.Env = []corev1.EnvVar{{Name: "MODE", Value: "demo"}}
	c.TerminationMessagePath, c.TerminationMessagePolicy, c.ImagePullPolicy = "/dev/termination-log", "File", "IfNotPresent"
	c.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access-abcde", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	full.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}}}}}}}
	full.Spec.Tolerations = []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
	}
	full.Spec.NodeName, full.Spec.ServiceAccountName, full.Spec.SchedulerName = "kwok-node-0", "default", "default-scheduler"
	full.Spec.RestartPolicy, full.Spec.DNSPolicy = corev1.RestartPolicyAlways, corev1.DNSClusterFirst
	full.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	full.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	full.Status.HostIP, full.Status.PodIP = "10.0.0.1", "10.244.0.17"
	full.Status.PodIPs = []corev1.PodIP{{IP: "10.244.0.17"}}
	full.Status.HostIPs = []corev1.HostIP{{IP: "10.0.0.1"}}
	full.Status.QOSClass = corev1.PodQOSBestEffort
	full.Status.StartTime = ptr.To(metav1.NewTime(robottest.FixtureNow))
	full.Status.Conditions = append(full.Status.Conditions,
		corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
		corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [robot]"})
	full.Status.ContainerStatuses[0].Image = c.Image
	full.Status.ContainerStatuses[0].ImageID = ""
	return full
}

// BenchmarkPodCache fills a pod informer's store, through SummarizePod or not,
// and reports the live heap each cached pod costs (bytes/pod).
func BenchmarkPodCache(b *testing.B) {
	robot := robottest.NewRobot("test", 1)
	template := fullPod(robottest.Pod(robot, "test-a", robottest.Waiting("ImagePullBackOff", `Back-off pulling image "registry.example/robot:1.0"`)))
	const n = 5000
	for _, tt := range []struct {
		name      string
		transform cache.TransformFunc
	}{{"full", nil}, {"summarized", SummarizePod}} {
		b.Run(tt.name, func(b *testing.B) {
			var perPod float64
			for range b.N {
				before := robottest.LiveHeap()
				indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, PodsByRobot: RobotIndex})
				for i := range n {
					// Each pod decoded on its own, as from a watch: no
					// string shared with the template.
					pod := roundTripPod(b, template)
					pod.Name = fmt.Sprintf("test-5d9c7b8f6-%05d", i)
					// A Robot of its own, as with N Robots of one
					// replica: one entry of the Robot index each.
					pod.Labels[workload.LabelRobot] = fmt.Sprintf("test-%05d", i)
					// Its ReplicaSet, whose name starts the pod's, with
					// a UID as the API server makes them.
					pod.OwnerReferences[0].Name = "test-5d9c7b8f6"
					pod.OwnerReferences[0].UID = types.UID(fmt.Sprintf("3f0c2a9e-5b7d-4c1a-9e8f-%012d", i))
					var obj interface{} = pod
					if tt.transform != nil {
						obj, _ = tt.transform(pod)
					}
					if err := indexer.Add(obj); err != nil {
						b.Fatal(err)
					}
				}
				perPod = float64(robottest.LiveHeap()-before) / n
				runtime.KeepAlive(indexer)
			}
			b.ReportMetric(perPod, "bytes/pod")
		})
	}
}

func roundTripPod(b *testing.B, pod *corev1.Pod) *corev1.Pod {
	data, err := pod.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	var out corev1.Pod
	if err := out.Unmarshal(data); err != nil {
		b.Fatal(err)
	}
	return &out
}

func summarizePods(t testing.TB, pods ...*corev1.Pod) []*Pod {
	t.Helper()
	out := make([]*Pod, 0, len(pods))
	for _, pod := range pods {
		summary, err := SummarizePod(pod)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, summary.(*Pod))
	}
	return out
}

// TestSummarizePodKeepsOnlyOthersThatAreWrong: of the init containers and
// sidecars, a summary keeps only those whose status the diagnosis names, so
// that a healthy pod's summary is as small as before they existed.
func TestSummarizePodKeepsOnlyOthersThatAreWrong(t *testing.T) {
	robot := robottest.NewRobot("test", 1)
	failed := &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "no such table"}
	for _, tt := range []struct {
		name    string
		sidecar bool
		status  corev1.ContainerStatus
		kept    bool
	}{
		{name: "an init container waiting its turn", status: corev1.ContainerStatus{State: robottest.Waiting("PodInitializing", "")}},
		{name: "an init container running", status: corev1.ContainerStatus{State: robottest.RunningSince(time.Second)}},
		{name: "an init container completed after a failure", status: corev1.ContainerStatus{
			State:                corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}},
			LastTerminationState: corev1.ContainerState{Terminated: failed}}},
		{name: "an init container whose image cannot be pulled", kept: true, status: corev1.ContainerStatus{State: robottest.Waiting("ErrImagePull", "not found")}},
		{name: "an init container that failed", kept: true, status: corev1.ContainerStatus{State: corev1.ContainerState{Terminated: failed}}},
		{name: "an init container in a crash loop", kept: true, status: corev1.ContainerStatus{
			State: robottest.Waiting("CrashLoopBackOff", "back-off"), LastTerminationState: corev1.ContainerState{Terminated: failed}}},
		{name: "an init container running again after a failure", kept: true, status: corev1.ContainerStatus{
			State: robottest.RunningSince(time.Second), LastTerminationState: corev1.ContainerState{Terminated: failed}}},
		{name: "a ready sidecar", sidecar: true, status: corev1.ContainerStatus{State: robottest.RunningSince(time.Minute), Ready: true, Started: ptr.To(true)}},
		{name: "a ready sidecar that crashed once", sidecar: true, status: corev1.ContainerStatus{
			State: robottest.RunningSince(time.Minute), Ready: true, Started: ptr.To(true), LastTerminationState: corev1.ContainerState{Terminated: failed}}},
		{name: "a sidecar not ready", sidecar: true, kept: true, status: corev1.ContainerStatus{State: robottest.RunningSince(time.Minute), Started: ptr.To(true)}},
		{name: "a sidecar without its ConfigMap", sidecar: true, kept: true, status: corev1.ContainerStatus{
			State: robottest.Waiting("CreateContainerConfigError", `configmap "proxy" not found`)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := robottest.Pod(robot, "test-a", robottest.Waiting("PodInitializing", ""))
			init := corev1.Container{Name: "other", Image: "registry.example/other:1"}
			if tt.sidecar {
				init.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			}
			pod.Spec.InitContainers = []corev1.Container{init}
			tt.status.Name = "other"
			pod.Status.InitContainerStatuses = []corev1.ContainerStatus{tt.status}
			summary := summarizePods(t, fullPod(pod))[0]
			others := summary.Others()
			if !tt.kept {
				if summary.others != nil {
					t.Errorf("kept %+v, want nothing kept", others)
				}
				return
			}
			if len(others) != 1 || others[0].Name != "other" || others[0].Sidecar != tt.sidecar {
				t.Fatalf("kept %+v, want the container other, sidecar %v", others, tt.sidecar)
			}
			copied := summary.DeepCopyObject().(*Pod)
			if !copied.SameAs(summary) || &copied.Others()[0] == &others[0] {
				t.Errorf("DeepCopyObject is not a deep copy")
			}
			healthy := summarizePods(t, robottest.Pod(robot, "test-a", robottest.Waiting("PodInitializing", "")))[0]
			if summary.SameAs(healthy) {
				t.Errorf("a summary with a failing %s is the same as one without", others[0].Name)
			}
		})
	}
}
