package podcache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/podcache"
	"github.com/robot-operator/robot-operator/internal/podsummary"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	listers "github.com/robot-operator/robot-operator/pkg/generated/listers/robot/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
)

// queue records the Robots the handlers queue.
type queue struct{ keys []cache.ObjectName }

func (q *queue) add(key cache.ObjectName) { q.keys = append(q.keys, key) }

// enqueueController queues the Robot that controls a Deployment, by its
// controller reference.
func (q *queue) enqueueController(obj interface{}) {
	deployment := obj.(*appsv1.Deployment)
	if owner := metav1.GetControllerOf(deployment); owner != nil {
		q.add(cache.ObjectName{Namespace: deployment.Namespace, Name: owner.Name})
	}
}

// drain returns what was queued since the last drain.
func (q *queue) drain() []cache.ObjectName {
	keys := q.keys
	q.keys = nil
	return keys
}

// indexer returns an informer cache holding objs.
func indexer(t *testing.T, objs ...interface{}) cache.Indexer {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, obj := range objs {
		if err := indexer.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	return indexer
}

// summaries returns what the pod cache holds for pods.
func summaries(t testing.TB, pods ...*corev1.Pod) []*podsummary.Pod {
	t.Helper()
	var out []*podsummary.Pod
	for _, pod := range pods {
		summary, err := podsummary.SummarizePod(pod)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, summary.(*podsummary.Pod))
	}
	return out
}

// A pod's change queues its Robot only when what the cache keeps of it
// changed, and only if the Robot exists.
func TestPodEventsQueueTheirRobot(t *testing.T) {
	robot := robottest.NewRobot("test", 1)
	var q queue
	handler := podcache.PodHandler(podcache.QueueRobot(listers.NewRobotLister(indexer(t, robot)), func(robot *robotv1beta1.Robot) { q.add(cache.MetaObjectToName(robot)) }))

	running := robottest.Pod(robot, "test-a", robottest.RunningSince(time.Minute))
	running.ResourceVersion = "1"
	resynced := running.DeepCopy()
	resynced.ResourceVersion = "2"
	resynced.Annotations = map[string]string{"not": "cached"}
	crashing := running.DeepCopy()
	crashing.Status.ContainerStatuses[0].State = robottest.Waiting("CrashLoopBackOff", "")
	pods := summaries(t, running, resynced, crashing)
	if !pods[0].SameAs(pods[1]) {
		t.Errorf("a change to what the cache does not keep makes another summary")
	}
	if pods[0].SameAs(pods[2]) {
		t.Errorf("a change of the container's state makes the same summary")
	}

	orphan := summaries(t, robottest.Pod(robottest.NewRobot("gone", 1), "gone-a", robottest.RunningSince(time.Minute)))[0]
	handler.AddFunc(orphan)
	if n := len(q.keys); n != 0 {
		t.Errorf("a pod of a Robot that does not exist queued %d items", n)
	}
	handler.DeleteFunc(cache.DeletedFinalStateUnknown{Key: "default/test-a", Obj: pods[2]})
	if n := len(q.keys); n != 1 {
		t.Fatalf("a deleted pod of Robot test queued %d items, want 1", n)
	}
	if key := q.keys[0]; key != cache.MetaObjectToName(robot) {
		t.Errorf("queued %v, want %v", key, cache.MetaObjectToName(robot))
	}
}

// A ReplicaSet's change queues the Robot whose Deployment controls it, by
// the Deployment's UID: a new ReplicaSet may be the current one the sync
// did not find yet. A ReplicaSet of another Deployment of the same name,
// or of no cached Deployment, queues nothing.
func TestReplicaSetEventsQueueTheirRobot(t *testing.T) {
	robot := robottest.NewRobot("test", 1)
	desired, err := workload.NewDeployment(robot)
	deployment := robottest.LiveDeploymentOf(t, desired, err)
	var q queue
	handler := podcache.ReplicaSetHandler(podcache.QueueDeploymentRobot(appslisters.NewDeploymentLister(indexer(t, deployment)), q.enqueueController))

	summary := func(rs *appsv1.ReplicaSet) *podsummary.ReplicaSet {
		s, err := podsummary.Summarize(rs)
		if err != nil {
			t.Fatal(err)
		}
		return s.(*podsummary.ReplicaSet)
	}
	revised := robottest.ReplicaSet(deployment, "2")
	earlier := robottest.ReplicaSet(deployment, "2")
	earlier.Name, earlier.UID, earlier.OwnerReferences[0].UID = "test-6b8d9f7c5", "earlier-rs-uid", "earlier-deployment-uid"
	elsewhere := robottest.ReplicaSet(deployment, "1")
	elsewhere.Name, elsewhere.OwnerReferences[0].Name = "other-5d9c7b8f1", "other"
	for _, tt := range []struct {
		name string
		obj  interface{}
		want []cache.ObjectName
	}{
		{"the Deployment's new ReplicaSet", summary(revised), []cache.ObjectName{cache.MetaObjectToName(robot)}},
		{"the Deployment's ReplicaSet deleted", cache.DeletedFinalStateUnknown{Key: "default/" + revised.Name, Obj: summary(revised)}, []cache.ObjectName{cache.MetaObjectToName(robot)}},
		{"a ReplicaSet of an earlier Deployment of the same name", summary(earlier), nil},
		{"a ReplicaSet of a Deployment not in the cache", summary(elsewhere), nil},
	} {
		handler.AddFunc(tt.obj)
		if got := q.drain(); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: queued %v, want %v", tt.name, got, tt.want)
		}
	}

	// A status change (a new resourceVersion) says nothing the pods do
	// not; a new revision (a rollback) does.
	rolled := revised.DeepCopy()
	rolled.ResourceVersion = "4"
	if !summary(revised).SameAs(summary(rolled)) {
		t.Errorf("a new resourceVersion alone makes another summary")
	}
	rolled.Annotations[podsummary.RevisionAnnotation] = "3"
	if summary(revised).SameAs(summary(rolled)) {
		t.Errorf("a new revision makes the same summary")
	}
}

// The pods without their ReplicaSets cannot tell a current pod from an old
// one: Watch takes both informers or neither.
func TestPodInformerNeedsReplicaSetInformer(t *testing.T) {
	kubeInformers := kubeinformers.NewSharedInformerFactory(k8sfake.NewClientset(), 0)
	pods, replicaSets := kubeInformers.Core().V1().Pods().Informer(), kubeInformers.Apps().V1().ReplicaSets().Informer()
	if _, err := podcache.Watch(pods, nil, podcache.Handlers{}); err == nil {
		t.Errorf("Watch took a pod informer without a ReplicaSet informer")
	}
	if _, err := podcache.Watch(nil, replicaSets, podcache.Handlers{}); err == nil {
		t.Errorf("Watch took a ReplicaSet informer without a pod informer")
	}
	if c, err := podcache.Watch(nil, nil, podcache.Handlers{}); c != nil || err != nil {
		t.Errorf("Watch with neither informer: %v, %v; want the nil Cache", c, err)
	}
}
