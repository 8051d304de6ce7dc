package app

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
)

// configObjectsPerKind is how many ConfigMaps and how many Secrets the
// benchmark of the config watch caches (docs/benchmarks.md, Config
// rollouts).
const configObjectsPerKind = 10000

// configObject is the metadata of a ConfigMap or Secret as a cluster holds
// it: labels, an owner, kubectl's last-applied-configuration (which holds
// the data again) and managedFields, all of which the transform drops.
func configObject(kind string, i int) *metav1.PartialObjectMetadata {
	name := fmt.Sprintf("%s-%05d", strings.ToLower(kind), i)
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("team-%03d", i%100), Name: name, UID: types.UID(fmt.Sprintf("%08d-0000-4000-8000-%012d", i, i)),
			ResourceVersion: fmt.Sprint(100000 + i),
			Labels:          map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "shop"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 1024)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: "owner"}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:key":{}}}`)}}},
		},
	}
}

// heapInUse returns the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stats.HeapAlloc
}

// BenchmarkConfigMetadataCache measures the heap that the config watch's
// caches hold for configObjectsPerKind ConfigMaps and as many Secrets: the
// metadata informers, with their transform, fed by a fake metadata client
// (whose own objects are counted before the informers start, and left
// out).
func BenchmarkConfigMetadataCache(b *testing.B) {
	scheme := k8sruntime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	var objects []k8sruntime.Object
	for _, kind := range []string{"ConfigMap", "Secret"} {
		for i := range configObjectsPerKind {
			objects = append(objects, configObject(kind, i))
		}
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, objects...)
	for range b.N {
		before := heapInUse()
		stop := make(chan struct{})
		var informers []cache.SharedIndexInformer
		for _, resource := range []string{"configmaps", "secrets"} {
			informer := metadataInformer(client, schema.GroupVersionResource{Version: corev1.SchemeGroupVersion.Version, Resource: resource}, "")
			go informer.Run(stop)
			informers = append(informers, informer)
		}
		for _, informer := range informers {
			if !cache.WaitForCacheSync(stop, informer.HasSynced) {
				b.Fatal("the caches did not sync")
			}
		}
		held := heapInUse() - before
		cached := 0
		for _, informer := range informers {
			cached += len(informer.GetStore().ListKeys())
		}
		if cached != 2*configObjectsPerKind {
			b.Fatalf("%d objects cached, want %d", cached, 2*configObjectsPerKind)
		}
		b.ReportMetric(float64(held)/float64(cached), "B/object")
		b.ReportMetric(float64(held)/(1<<20), "MiB")
		close(stop)
		runtime.KeepAlive(informers)
	}
}
