package main

import (
	"context"
	"fmt"

	"github.com/robot-operator/robot-operator/internal/status"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// watchPods makes the controller read the pods that podInformer caches,
// which should be only those of the Deployments the operator manages, with
// summarizePod as its transform; and queue a Robot when one of its pods
// changes in a way the diagnosis may read.
func (c *Controller) watchPods(podInformer cache.SharedIndexInformer) error {
	if err := podInformer.AddIndexers(cache.Indexers{status.PodsByRobot: status.RobotIndex}); err != nil {
		return fmt.Errorf("adding the Pod index: %w", err)
	}
	c.pods = podInformer.GetIndexer()
	c.podsSynced = podInformer.HasSynced
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.handlePod,
		UpdateFunc: func(old, new interface{}) {
			// A resync, or a change to what the cache does not keep: the
			// diagnosis would read the same.
			if oldPod, ok := old.(*status.PodSummary); ok && oldPod.SameAs(new) {
				return
			}
			c.handlePod(new)
		},
		DeleteFunc: c.handlePod,
	}); err != nil {
		return fmt.Errorf("adding the Pod event handler: %w", err)
	}
	return nil
}

// handlePod queues the Robot whose selector label the pod carries, if that
// Robot exists.
func (c *Controller) handlePod(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*status.PodSummary)
	if !ok || pod.Robot == "" {
		return
	}
	if _, err := c.robotsLister.Robots(pod.Namespace).Get(pod.Robot); err != nil {
		return
	}
	c.workqueue.Add(cache.ObjectName{Namespace: pod.Namespace, Name: pod.Robot})
}

// robotPods returns the cached pods of robot; none when the controller does
// not watch pods.
func (c *Controller) robotPods(ctx context.Context, robot *robotv1alpha1.Robot) []*status.PodSummary {
	if c.pods == nil {
		return nil
	}
	objs, err := c.pods.ByIndex(status.PodsByRobot, robot.Namespace+"/"+robot.Name)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Listing the Robot's pods failed", "err", err)
		return nil
	}
	pods := make([]*status.PodSummary, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*status.PodSummary); ok {
			pods = append(pods, pod)
		}
	}
	return pods
}
