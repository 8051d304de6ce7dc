package podsummary

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// A ReplicaSet as the API server sends it and the same ReplicaSet with only
// what the diagnosis reads make the same summary; the summary keeps the
// Deployment's name without a string of its own.
func TestSummarizeReplicaSetKeepsOnlyWhatDiagnoseReads(t *testing.T) {
	robot := robottest.NewRobot("test", 1)
	deployment := liveDeployment(t, robot)
	minimal := robottest.ReplicaSet(deployment, "2")
	full := summarizeReplicaSets(t, fullReplicaSet(deployment, minimal))[0]
	summary := summarizeReplicaSets(t, minimal)[0]
	if !full.SameAs(summary) || full.ResourceVersion != summary.ResourceVersion {
		t.Errorf("the full ReplicaSet's summary %+v differs from the minimal one's %+v", full, summary)
	}
	if full.UID != minimal.UID || full.Deployment != deployment.Name || !full.OwnedBy(deployment.UID) || full.Revision != "2" {
		t.Errorf("summary %+v: want UID %s, Deployment %s (%s), revision 2", full, minimal.UID, deployment.Name, deployment.UID)
	}
	if unsafe.StringData(summary.Deployment) != unsafe.StringData(summary.Name) {
		t.Errorf("the Deployment's name %q has a string of its own, not a prefix of the ReplicaSet's %q", summary.Deployment, summary.Name)
	}
	if full.GetLabels() != nil || full.GetAnnotations() != nil || full.GetOwnerReferences() != nil || full.GetManagedFields() != nil {
		t.Errorf("the summary keeps more than it should: %+v", full.cachedMeta)
	}
	if copied := full.DeepCopyObject().(*ReplicaSet); !copied.SameAs(full) {
		t.Errorf("DeepCopyObject differs")
	}
	if revised := summarizeReplicaSets(t, robottest.ReplicaSet(deployment, "3"))[0]; revised.SameAs(summary) {
		t.Errorf("another revision makes the same summary")
	}
	// The pod informer's objects go through the same transform, and
	// name their ReplicaSet without a string of its own.
	pod := robottest.Pod(robot, "test-5d9c7b8f1-x7k2p", robottest.RunningSince(time.Minute))
	obj, _ := Summarize(pod)
	if p := obj.(*Pod); p.ReplicaSetKey() != "default/test-5d9c7b8f1" || p.ReplicaSetUID != pod.OwnerReferences[0].UID ||
		unsafe.StringData(p.replicaSet) != unsafe.StringData(p.Name) {
		t.Errorf("the pod's summary names ReplicaSet %q (%s), want default/test-5d9c7b8f1 (%s), a prefix of its name", p.ReplicaSetKey(), p.ReplicaSetUID, pod.OwnerReferences[0].UID)
	}
}

// fullReplicaSet is rs, a ReplicaSet of deployment, as the API server sends
// it.
func fullReplicaSet(deployment *appsv1.Deployment, rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	full := rs.DeepCopy()
	full.Generation = 1
	full.CreationTimestamp = metav1.NewTime(robottest.FixtureNow)
	for k, v := range deployment.Spec.Template.Labels {
		full.Labels[k] = v
	}
	full.Annotations["deployment.kubernetes.io/desired-replicas"] = "1"
	full.Annotations["deployment.kubernetes.io/max-replicas"] = "2"
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(strings.Repeat(`{"f:spec":{"f:template":{}}}`, 40))}}}
	full.Spec.Replicas = deployment.Spec.Replicas
	full.Spec.Selector = deployment.Spec.Selector.DeepCopy()
	full.Spec.Template = *deployment.Spec.Template.DeepCopy()
	full.Spec.Template.Labels["pod-template-hash"] = rs.Labels["pod-template-hash"]
	full.Status = appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 1}
	return full
}

// BenchmarkReplicaSetCache fills a ReplicaSet informer's store, through
// Summarize or not, and reports the live heap each cached ReplicaSet costs
// (bytes/rs).
func BenchmarkReplicaSetCache(b *testing.B) {
	robot := robottest.NewRobot("test", 1)
	desired, err := workload.NewDeployment(robot)
	deployment := robottest.LiveDeploymentOf(b, desired, err)
	template := fullReplicaSet(deployment, robottest.ReplicaSet(deployment, "1"))
	const n = 5000
	for _, tt := range []struct {
		name      string
		transform cache.TransformFunc
	}{{"full", nil}, {"summarized", Summarize}} {
		b.Run(tt.name, func(b *testing.B) {
			var perRS float64
			for range b.N {
				before := robottest.LiveHeap()
				indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
				for i := range n {
					// Each decoded on its own, as from a watch; one
					// Deployment each, as with N Robots.
					rs := roundTripReplicaSet(b, template)
					rs.Name = fmt.Sprintf("test-%05d-5d9c7b8f6", i)
					rs.UID = types.UID(fmt.Sprintf("3f0c2a9e-5b7d-4c1a-9e8f-%012d", i))
					rs.OwnerReferences[0].Name = fmt.Sprintf("test-%05d", i)
					rs.OwnerReferences[0].UID = types.UID(fmt.Sprintf("8a1b2c3d-4e5f-4a6b-8c7d-%012d", i))
					var obj interface{} = rs
					if tt.transform != nil {
						obj, _ = tt.transform(rs)
					}
					if err := indexer.Add(obj); err != nil {
						b.Fatal(err)
					}
				}
				perRS = float64(robottest.LiveHeap()-before) / n
				runtime.KeepAlive(indexer)
			}
			b.ReportMetric(perRS, "bytes/rs")
		})
	}
}

func roundTripReplicaSet(b *testing.B, rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	data, err := rs.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	var out appsv1.ReplicaSet
	if err := out.Unmarshal(data); err != nil {
		b.Fatal(err)
	}
	return &out
}

func summarizeReplicaSets(t testing.TB, replicaSets ...*appsv1.ReplicaSet) []*ReplicaSet {
	t.Helper()
	out := make([]*ReplicaSet, 0, len(replicaSets))
	for _, rs := range replicaSets {
		summary, err := Summarize(rs)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, summary.(*ReplicaSet))
	}
	return out
}

func liveDeployment(t *testing.T, robot *robotv1beta1.Robot) *appsv1.Deployment {
	desired, err := workload.NewDeployment(robot)
	return robottest.LiveDeploymentOf(t, desired, err)
}
