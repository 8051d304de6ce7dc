package transform

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// apiServerDeployment is a Deployment as the API server returns it, with
// the status of a finished rollout, decoded on its own: no string shared
// with another.
func apiServerDeployment(tb testing.TB) *appsv1.Deployment {
	tb.Helper()
	data, err := os.ReadFile("../workload/testdata/apiserver/deployment.json")
	if err != nil {
		tb.Fatal(err)
	}
	var d appsv1.Deployment
	if err := json.Unmarshal(data, &d); err != nil {
		tb.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: `ReplicaSet "golden-runner-5d9c7b8f6" has successfully progressed.`},
		},
	}
	data, err = d.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	var decoded appsv1.Deployment
	if err := decoded.Unmarshal(data); err != nil {
		tb.Fatal(err)
	}
	return &decoded
}

func sameBacking(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// TestInternStringsChangesNoValue: interning leaves an object equal to what
// it was, with its known strings now the constants.
func TestInternStringsChangesNoValue(t *testing.T) {
	d := apiServerDeployment(t)
	want := d.DeepCopy()
	name := d.Name
	internStrings(d)
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("interning changed the Deployment:\n got %+v\nwant %+v", d, want)
	}
	for _, s := range []struct{ what, got, want string }{
		{"a label key", firstKey(d.Labels, workload.LabelManagedBy), workload.LabelManagedBy},
		{"a label value", d.Labels[workload.LabelManagedBy], workload.LabelManagedByValue},
		{"a template label key", firstKey(d.Spec.Template.Labels, workload.LabelRobot), workload.LabelRobot},
		{"the scheduler name", d.Spec.Template.Spec.SchedulerName, corev1.DefaultSchedulerName},
		{"the container name", d.Spec.Template.Spec.Containers[0].Name, workload.ContainerName},
		{"the termination message path", d.Spec.Template.Spec.Containers[0].TerminationMessagePath, corev1.TerminationMessagePathDefault},
		{"maxSurge", d.Spec.Strategy.RollingUpdate.MaxSurge.StrVal, "25%"},
		{"a condition reason", d.Status.Conditions[1].Reason, "NewReplicaSetAvailable"},
		{"a condition status", string(d.Status.Conditions[1].Status), string(metav1.ConditionTrue)},
	} {
		if !sameBacking(s.got, s.want) {
			t.Errorf("%s (%q) is a copy of its own, want the constant", s.what, s.got)
		}
	}
	// What is not a known constant stays as it was.
	if !sameBacking(d.Name, name) {
		t.Errorf("the name %q changed its backing or its value", d.Name)
	}
}

func firstKey(m map[string]string, key string) string {
	for k := range m {
		if k == key {
			return k
		}
	}
	return ""
}

// BenchmarkDeploymentCache: what the Deployment cache keeps per Deployment
// with the operator's transform, and without the interning of known
// strings. Live heap after a collection, divided by the number of
// Deployments:
//
//	go test -run XXX -bench BenchmarkDeploymentCache -benchtime=1x .
func BenchmarkDeploymentCache(b *testing.B) {
	const n = 5000
	template := apiServerDeployment(b)
	data, err := template.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		transform cache.TransformFunc
	}{
		{"managedFields-trimmed", func(obj any) (any, error) {
			obj.(*appsv1.Deployment).ManagedFields = nil
			return obj, nil
		}},
		{"operator", TrimManagedFields},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var perDeployment float64
			for range b.N {
				before := robottest.LiveHeap()
				indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
				for i := range n {
					var d appsv1.Deployment
					if err := d.Unmarshal(data); err != nil {
						b.Fatal(err)
					}
					d.Name = fmt.Sprintf("robot-%05d", i)
					obj, _ := tt.transform(&d)
					if err := indexer.Add(obj); err != nil {
						b.Fatal(err)
					}
				}
				perDeployment = float64(robottest.LiveHeap()-before) / n
				runtime.KeepAlive(indexer)
			}
			b.ReportMetric(perDeployment, "bytes/deployment")
		})
	}
}
