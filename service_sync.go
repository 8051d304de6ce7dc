package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

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
	desired := newService(robot)
	current, err := c.cachedService(robot.Namespace, serviceName(robot))
	if err != nil {
		return nil, err
	}
	if desired == nil {
		if current != nil && metav1.IsControlledBy(current, robot) {
			return nil, c.deleteOwnService(ctx, robot, current)
		}
		return nil, nil
	}

	if current == nil {
		created, err := c.createService(ctx, robot, desired)
		if !apierrors.IsAlreadyExists(err) {
			return created, err
		}
		// Not in the cache, which holds only the Services labelled as
		// managed by the operator: someone else's, or the Robot's own with
		// that label removed.
		if current, err = c.kubeclientset.CoreV1().Services(robot.Namespace).Get(ctx, *desired.Name, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("getting Service %s/%s: %w", robot.Namespace, *desired.Name, err)
		}
	}
	if !metav1.IsControlledBy(current, robot) {
		ref := metav1.GetControllerOf(current)
		if isRobotRef(ref) && ref.Name == robot.Name {
			// A Robot of this name was deleted and created again: the
			// first one's Service goes with the garbage collector, and its
			// delete event queues this Robot.
			return nil, &earlierRobotError{name: current.Name, kind: "Service"}
		}
		err := &serviceNameTakenError{name: current.Name}
		if ref != nil {
			err.owner = ref.Kind + "/" + ref.Name
		}
		return nil, err
	}

	drift := serviceDrift(desired, current)
	if drift == "" {
		return current, nil
	}
	return c.applyService(ctx, robot, desired, current, drift)
}

// createService creates robot's Service with a plain create, which fails
// when a Service of that name exists: one that someone else created after
// the cache was filled is never written.
func (c *Controller) createService(ctx context.Context, robot *robotv1alpha1.Robot, desired *corev1ac.ServiceApplyConfiguration) (*corev1.Service, error) {
	var service corev1.Service
	if err := roundTrip(desired, &service); err != nil {
		return nil, &invalidSpecError{err}
	}
	if err := c.checkMayWrite(); err != nil {
		return nil, err
	}
	created, err := c.kubeclientset.CoreV1().Services(robot.Namespace).Create(ctx, &service,
		metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return nil, serviceWriteError("creating", robot.Namespace, service.Name, err)
	}
	c.writtenServices.remember(created)
	klog.FromContext(ctx).V(2).Info("Created Service", "service", klog.KObj(created))
	c.recorder.Eventf(robot, corev1.EventTypeNormal, EventServiceCreated, "Created Service %q", created.Name)
	return created, nil
}

// applyService applies desired, what robot asks for, to its Service,
// current, which differs from it as drift says. The apply is forced: what
// the Robot sets is the Robot's, whoever changed it since.
func (c *Controller) applyService(ctx context.Context, robot *robotv1alpha1.Robot, desired *corev1ac.ServiceApplyConfiguration,
	current *corev1.Service, drift string) (*corev1.Service, error) {
	current, err := c.claimCreatedServiceFields(ctx, current)
	if err != nil {
		return current, err
	}
	if err := c.checkMayWrite(); err != nil {
		return current, err
	}
	applied, err := c.kubeclientset.CoreV1().Services(robot.Namespace).Apply(ctx, desired,
		metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil {
		return current, serviceWriteError("applying", robot.Namespace, *desired.Name, err)
	}
	c.writtenServices.remember(applied)
	klog.FromContext(ctx).V(2).Info("Updated Service", "service", klog.KObj(applied), "reason", drift)
	c.recorder.Eventf(robot, corev1.EventTypeNormal, EventServiceUpdated, "Updated Service %q: %s", applied.Name, drift)
	return applied, nil
}

// claimCreatedServiceFields makes the fields that the operator's create of
// current set owned by its applies, before the first apply. Unlike a
// Deployment's, a Service's fields are few and always all set, so there is
// no reason to wait for the Robot to change: the first apply, whatever its
// cause, may drop what the create set (the old port when the port changes,
// the externalTrafficPolicy the API server defaulted for a NodePort when the
// type goes back to ClusterIP), and that costs one patch, once per Service.
func (c *Controller) claimCreatedServiceFields(ctx context.Context, current *corev1.Service) (*corev1.Service, error) {
	claimed, err := claimCreated(ctx, c, "Service", current, c.kubeclientset.CoreV1().Services(current.Namespace).Patch)
	if claimed != current {
		c.writtenServices.remember(claimed)
	}
	return claimed, err
}

// deleteOwnService deletes robot's Service, current, which the Robot no
// longer asks for. The UID precondition makes sure that only that Service
// goes: one created under the same name since the cache saw it is left.
func (c *Controller) deleteOwnService(ctx context.Context, robot *robotv1alpha1.Robot, current *corev1.Service) error {
	if err := c.checkMayWrite(); err != nil {
		return err
	}
	err := c.kubeclientset.CoreV1().Services(current.Namespace).Delete(ctx, current.Name,
		metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(current.UID))})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or replaced by another: either way not the Robot's
		// to delete any more.
		return nil
	case err != nil:
		return fmt.Errorf("deleting Service %s/%s: %w", current.Namespace, current.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted Service", "service", klog.KObj(current))
	c.recorder.Eventf(robot, corev1.EventTypeNormal, EventServiceDeleted, "Deleted Service %q: the Robot asks for none", current.Name)
	return nil
}

// serviceWriteError says what the failure of a create or an apply of
// Service namespace/name means for the sync.
func serviceWriteError(verb, namespace, name string, err error) error {
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return errNamespaceTerminating
	case apierrors.IsInvalid(err):
		// A port or type the API server refuses for a Service, such as a
		// LoadBalancer where the cluster forbids it: retrying cannot help.
		return &invalidSpecError{err}
	}
	return fmt.Errorf("%s Service %s/%s: %w", verb, namespace, name, err)
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
	return c.writtenServices.freshest(service), nil
}

// ownService returns robot's Service from the cache when the Robot controls
// it, or nil: what the status reports when the Service was not synced.
func (c *Controller) ownService(robot *robotv1alpha1.Robot) *corev1.Service {
	if !wantsService(robot) {
		return nil
	}
	service, err := c.cachedService(robot.Namespace, serviceName(robot))
	if err != nil || service == nil || !metav1.IsControlledBy(service, robot) {
		return nil
	}
	return service
}

// addService queues the Robot of a Service the informer has just seen.
func (c *Controller) addService(obj interface{}) {
	if service, ok := obj.(*corev1.Service); ok && c.writtenServices.isOwnWrite(service) {
		return
	}
	c.handleObject(obj)
}

// updateService queues the Robot of a changed Service.
func (c *Controller) updateService(old, new interface{}) {
	service := new.(*corev1.Service)
	if old.(*corev1.Service).ResourceVersion == service.ResourceVersion || c.writtenServices.isOwnWrite(service) {
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
		c.writtenServices.forget(service.UID)
	}
	if robot, _ := c.owningRobot(obj); robot != nil {
		c.enqueueRobot(robot)
	}
}
