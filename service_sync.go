package main

import (
	"context"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/workload"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// addServiceEventHandler queues the Robot of each Service the informer sees
// change, so that a Service edited or deleted by hand is put back.
func (c *Controller) addServiceEventHandler(serviceInformer coreinformers.ServiceInformer) error {
	_, err := serviceInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addService,
		UpdateFunc: c.updateService,
		DeleteFunc: c.deleteService,
	})
	return err
}

// syncService creates, updates or deletes robot's Service so that it is what
// the Robot asks for, and returns the Service as it now is (nil when there
// is none the Robot controls). Like syncDeployment, it never touches a
// Service that the Robot does not control. Whether there is anything to do
// is decided from the cache: a Robot without a Service, or whose Service is
// as asked, costs no request.
func (c *Controller) syncService(ctx context.Context, robot *robotv1alpha1.Robot) (*corev1.Service, error) {
	desired := workload.NewService(robot)
	current, err := c.cachedService(robot.Namespace, workload.ServiceName(robot))
	if err != nil {
		return nil, err
	}
	if desired == nil {
		if current != nil && metav1.IsControlledBy(current, robot) {
			return nil, c.writer.DeleteOwnService(ctx, robot, current)
		}
		return nil, nil
	}

	if current == nil {
		created, err := c.writer.CreateService(ctx, robot, desired)
		if !apierrors.IsAlreadyExists(err) {
			return created, err
		}
		// Not in the cache, which holds only the Services labelled as
		// managed by the operator: someone else's, or the Robot's own with
		// that label removed.
		if current, err = c.writer.GetService(ctx, robot.Namespace, *desired.Name); err != nil {
			return nil, err
		}
	}
	if !metav1.IsControlledBy(current, robot) {
		ref := metav1.GetControllerOf(current)
		if isRobotRef(ref) && ref.Name == robot.Name {
			// A Robot of this name was deleted and created again: the
			// first one's Service goes with the garbage collector, and its
			// delete event queues this Robot.
			return nil, &outcome.EarlierRobotError{Name: current.Name, Kind: "Service"}
		}
		err := &outcome.ServiceNameTakenError{Name: current.Name}
		if ref != nil {
			err.Owner = ref.Kind + "/" + ref.Name
		}
		return nil, err
	}

	difference := drift.ServiceDrift(desired, current)
	if difference == "" {
		return current, nil
	}
	return c.writer.ApplyService(ctx, robot, desired, current, difference)
}

// cachedService returns the Service named name from the cache, or the one
// this process wrote last if the cache has not caught up with it yet; nil
// when the cache has none.
func (c *Controller) cachedService(namespace, name string) (*corev1.Service, error) {
	service, err := c.servicesLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c.writtenServices.Freshest(service), nil
}

// ownService returns robot's Service from the cache when the Robot controls
// it, or nil: what the status reports when the Service was not synced.
func (c *Controller) ownService(robot *robotv1alpha1.Robot) *corev1.Service {
	if !workload.WantsService(robot) {
		return nil
	}
	service, err := c.cachedService(robot.Namespace, workload.ServiceName(robot))
	if err != nil || service == nil || !metav1.IsControlledBy(service, robot) {
		return nil
	}
	return service
}

// addService queues the Robot of a Service the informer has just seen.
func (c *Controller) addService(obj interface{}) {
	if service, ok := obj.(*corev1.Service); ok && c.writtenServices.IsOwnWrite(service) {
		return
	}
	c.handleObject(obj)
}

// updateService queues the Robot of a changed Service.
func (c *Controller) updateService(old, new interface{}) {
	service := new.(*corev1.Service)
	if old.(*corev1.Service).ResourceVersion == service.ResourceVersion || c.writtenServices.IsOwnWrite(service) {
		return
	}
	c.handleObject(new)
}

// deleteService forgets what the controller kept about a deleted Service,
// and queues its Robot: by name, so that the deletion of an earlier Robot's
// Service frees the name for the Robot that has it now.
func (c *Controller) deleteService(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if service, ok := obj.(*corev1.Service); ok {
		c.writtenServices.Forget(service.UID)
	}
	if robot, _ := c.owningRobot(obj); robot != nil {
		c.enqueueRobot(robot)
	}
}
