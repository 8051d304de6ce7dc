// Package podcache reads the pods and ReplicaSets of the Robots from the
// informer caches that hold their summaries (internal/podsummary): a
// Robot's pods by an index, the ReplicaSets that control them by name. It
// queues a Robot when one of its pods or ReplicaSets changes in a way the
// diagnosis may read. It writes nothing.
package podcache

import (
	"context"
	"errors"
	"fmt"

	"github.com/robot-operator/robot-operator/internal/podsummary"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	listers "github.com/robot-operator/robot-operator/pkg/generated/listers/robot/v1beta1"

	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Cache reads the pod and ReplicaSet summaries. A nil Cache holds none: the
// controller then does not say why pods do not run.
type Cache struct {
	pods        cache.Indexer
	replicaSets cache.Indexer
}

// Handlers is what Watch calls when a pod or a ReplicaSet changes.
type Handlers struct {
	// Pod is given the namespace and name of the Robot whose selector
	// label a changed pod carries.
	Pod func(namespace, robot string)
	// ReplicaSet is given a changed ReplicaSet that a Deployment controls.
	ReplicaSet func(rs *podsummary.ReplicaSet)
}

// Watch returns the Cache of podInformer and replicaSetInformer, which
// should hold only the pods and ReplicaSets of the Deployments the operator
// manages, with podsummary.Summarize as their transform; it indexes the
// pods by Robot and registers handlers' event handlers. With neither
// informer it returns the nil Cache, which holds none.
func Watch(podInformer, replicaSetInformer cache.SharedIndexInformer, handlers Handlers) (*Cache, error) {
	switch {
	case (podInformer == nil) != (replicaSetInformer == nil):
		// Pods without their ReplicaSets tell no current pod from an old
		// one; ReplicaSets without pods tell nothing.
		return nil, errors.New("the pod and ReplicaSet informers go together: set both or neither")
	case podInformer == nil:
		return nil, nil
	}
	if err := podInformer.AddIndexers(cache.Indexers{podsummary.PodsByRobot: podsummary.RobotIndex}); err != nil {
		return nil, fmt.Errorf("adding the Pod index: %w", err)
	}
	if _, err := podInformer.AddEventHandler(PodHandler(handlers.Pod)); err != nil {
		return nil, fmt.Errorf("adding the Pod event handler: %w", err)
	}
	if _, err := replicaSetInformer.AddEventHandler(ReplicaSetHandler(handlers.ReplicaSet)); err != nil {
		return nil, fmt.Errorf("adding the ReplicaSet event handler: %w", err)
	}
	return &Cache{pods: podInformer.GetIndexer(), replicaSets: replicaSetInformer.GetIndexer()}, nil
}

// QueueRobot returns the Handlers.Pod that queues, with add, the Robot
// namespace/name if robots holds it: the pods of a deleted Robot linger
// until the garbage collector reaches them, and have no Robot to sync.
func QueueRobot(robots listers.RobotLister, add func(*robotv1beta1.Robot)) func(namespace, name string) {
	return func(namespace, name string) {
		if robot, err := robots.Robots(namespace).Get(name); err == nil {
			add(robot)
		}
	}
}

// QueueDeploymentRobot returns the Handlers.ReplicaSet that gives
// enqueueController, which queues the Robot controlling a Deployment, the
// Deployment of a changed ReplicaSet, if that Deployment is the one
// deployments holds: by UID, since an earlier Deployment of the same name
// is another Robot's.
func QueueDeploymentRobot(deployments appslisters.DeploymentLister, enqueueController func(obj interface{})) func(rs *podsummary.ReplicaSet) {
	return func(rs *podsummary.ReplicaSet) {
		deployment, err := deployments.Deployments(rs.Namespace).Get(rs.Deployment)
		if err == nil && rs.OwnedBy(deployment.UID) {
			enqueueController(deployment)
		}
	}
}

// PodHandler returns the pod informer's event handler: it gives onPod the
// Robot of each pod that changed in what the cache keeps, or was deleted.
func PodHandler(onPod func(namespace, robot string)) cache.ResourceEventHandlerFuncs {
	pod := func(obj interface{}) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		if pod, ok := obj.(*podsummary.Pod); ok && pod.Robot != "" {
			onPod(pod.Namespace, pod.Robot)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: pod,
		UpdateFunc: func(old, new interface{}) {
			// A resync, or a change to what the cache does not keep: the
			// diagnosis would read the same.
			if oldPod, ok := old.(*podsummary.Pod); ok && oldPod.SameAs(new) {
				return
			}
			pod(new)
		},
		DeleteFunc: pod,
	}
}

// ReplicaSetHandler returns the ReplicaSet informer's event handler: it
// gives onReplicaSet each ReplicaSet of a Deployment that is new, deleted,
// or changed in what makes its pods current.
func ReplicaSetHandler(onReplicaSet func(rs *podsummary.ReplicaSet)) cache.ResourceEventHandlerFuncs {
	replicaSet := func(obj interface{}) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		if rs, ok := obj.(*podsummary.ReplicaSet); ok && rs.Deployment != "" {
			onReplicaSet(rs)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		// A new ReplicaSet may be the current one of a Deployment whose
		// revision the sync saw first; a deleted one may have been.
		AddFunc: replicaSet,
		UpdateFunc: func(old, new interface{}) {
			// A ReplicaSet's status changes with each of its pods, whose
			// own events say more; only a new revision (a rollback makes
			// an old ReplicaSet current again) or owner changes which pods
			// are current.
			if oldRS, ok := old.(*podsummary.ReplicaSet); ok && oldRS.SameAs(new) {
				return
			}
			replicaSet(new)
		},
		DeleteFunc: replicaSet,
	}
}

// RobotPods returns the cached pods of the Robot namespace/name.
func (c *Cache) RobotPods(ctx context.Context, namespace, name string) []*podsummary.Pod {
	if c == nil {
		return nil
	}
	objs, err := c.pods.ByIndex(podsummary.PodsByRobot, namespace+"/"+name)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Listing the Robot's pods failed", "err", err)
		return nil
	}
	pods := make([]*podsummary.Pod, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*podsummary.Pod); ok {
			pods = append(pods, pod)
		}
	}
	return pods
}

// ReplicaSets returns the cached ReplicaSets that control pods, looked up
// by the names the pods give: the ReplicaSet cache needs no index, and the
// current ReplicaSet, when it has no pod yet, has nothing to diagnose.
func (c *Cache) ReplicaSets(ctx context.Context, pods []*podsummary.Pod) []*podsummary.ReplicaSet {
	if c == nil {
		return nil
	}
	var replicaSets []*podsummary.ReplicaSet
	seen := make(map[string]bool, 2)
	for _, pod := range pods {
		key := pod.ReplicaSetKey()
		if key == "" || seen[key] {
			continue
		}
		seen[key] = true
		obj, exists, err := c.replicaSets.GetByKey(key)
		if err != nil {
			klog.FromContext(ctx).V(4).Info("Reading a ReplicaSet from the cache failed", "replicaSet", key, "err", err)
			continue
		}
		if rs, ok := obj.(*podsummary.ReplicaSet); exists && ok {
			replicaSets = append(replicaSets, rs)
		}
	}
	return replicaSets
}
