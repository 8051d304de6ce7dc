package writer

import (
	"context"
	"errors"
	"fmt"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/echo"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/status"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
)

// Event reasons. Condition reasons, also used as event reasons, live with the
// API types.
const (
	// EventDeploymentCreated: the operator created a Robot's Deployment.
	EventDeploymentCreated = "DeploymentCreated"
	// EventDeploymentUpdated: the operator changed a Robot's Deployment to
	// match the Robot, after the Robot changed or someone changed the
	// Deployment.
	EventDeploymentUpdated = "DeploymentUpdated"
	// EventServiceCreated: the operator created a Robot's Service.
	EventServiceCreated = "ServiceCreated"
	// EventServiceUpdated: the operator changed a Robot's Service to match
	// the Robot.
	EventServiceUpdated = "ServiceUpdated"
	// EventServiceDeleted: the operator deleted a Robot's Service, which
	// the Robot no longer asks for.
	EventServiceDeleted = "ServiceDeleted"
)

// Writer makes every write the operator makes for a Robot: the create,
// apply and delete of its Deployment and Service, and the apply of its
// status. Each write first asks the write fence, is remembered by the echo
// filter, and is announced by an Event.
type Writer struct {
	kube     kubernetes.Interface
	robots   clientset.Interface
	Recorder record.EventRecorder
	// mayWrite, when set, is asked before every write; with leader
	// election it fails once this process may no longer be the leader.
	mayWrite func() error

	deployments  *echo.RecentWrites[*appsv1.Deployment]
	services     *echo.RecentWrites[*corev1.Service]
	robotStatus  *echo.RecentWrites[*robotv1beta1.Robot]
	specsChecked *drift.SpecChecks
}

// New returns a Writer that writes through kube and robots and
// remembers what it wrote in deployments, services and robotStatus.
func New(kube kubernetes.Interface, robots clientset.Interface, recorder record.EventRecorder, mayWrite func() error,
	deployments *echo.RecentWrites[*appsv1.Deployment], services *echo.RecentWrites[*corev1.Service],
	robotStatus *echo.RecentWrites[*robotv1beta1.Robot], specsChecked *drift.SpecChecks) *Writer {
	return &Writer{kube: kube, robots: robots, Recorder: recorder, mayWrite: mayWrite,
		deployments: deployments, services: services, robotStatus: robotStatus, specsChecked: specsChecked}
}

// checkMayWrite asks the write fence whether this process may write now.
func (w *Writer) checkMayWrite() error {
	if w.mayWrite == nil {
		return nil
	}
	return w.mayWrite()
}

// ApplyStatus applies status to robot's status subresource and returns the
// Robot as then stored; nil, and no error, when the Robot is gone.
func (w *Writer) ApplyStatus(ctx context.Context, robot *robotv1beta1.Robot, newStatus *robotv1beta1.RobotStatus) (*robotv1beta1.Robot, error) {
	if err := w.checkMayWrite(); err != nil {
		return nil, err
	}
	written, err := w.robots.RobotV1beta1().Robots(robot.Namespace).ApplyStatus(ctx,
		status.ApplyConfiguration(robot, newStatus), metav1.ApplyOptions{FieldManager: workload.FieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		// Deleted meanwhile: nothing left to report on.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("applying status of Robot %s/%s: %w", robot.Namespace, robot.Name, outcome.StatusWriteError(err))
	}
	w.robotStatus.Remember(written)
	return written, nil
}

// CheckRobotExists asks the API server whether robot still exists, the
// same Robot (by UID): outcome.ErrRobotGone when not.
func (w *Writer) CheckRobotExists(ctx context.Context, robot *robotv1beta1.Robot) error {
	live, err := w.robots.RobotV1beta1().Robots(robot.Namespace).Get(ctx, robot.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || err == nil && live.UID != robot.UID {
		return outcome.ErrRobotGone
	}
	return err
}

// CreateDeployment creates robot's Deployment, desired, with a plain create
// rather than an apply: a create fails with AlreadyExists when a Deployment of
// that name exists, so one that someone else created after the cache was
// filled is never written, and no read is needed first to make sure.
func (w *Writer) CreateDeployment(ctx context.Context, robot *robotv1beta1.Robot, desired *appsv1ac.DeploymentApplyConfiguration) (*appsv1.Deployment, error) {
	var deployment appsv1.Deployment
	if err := workload.RoundTrip(desired, &deployment); err != nil {
		return nil, &outcome.InvalidSpecError{Err: err}
	}
	if err := w.checkMayWrite(); err != nil {
		return nil, err
	}
	created, err := w.kube.AppsV1().Deployments(robot.Namespace).Create(ctx, &deployment,
		metav1.CreateOptions{FieldManager: workload.FieldManager})
	if err != nil {
		return nil, writeError("creating", robot.Namespace, deployment.Name, err)
	}

	w.deployments.Remember(created)
	// What the operator just created holds its spec: nothing to compare
	// until the Deployment's spec or the Robot's changes.
	w.specsChecked.Record(created.UID, created.Generation, desired.Annotations[workload.AnnotationSpecHash])
	klog.FromContext(ctx).V(2).Info("Created Deployment", "deployment", klog.KObj(created))
	w.Recorder.Eventf(robot, corev1.EventTypeNormal, EventDeploymentCreated, "Created Deployment %q", created.Name)
	return created, nil
}

// ApplyDeployment applies desired, what robot asks for, to its Deployment,
// current, which differs from it as drift says, and returns the Deployment
// as it then is. The apply is forced: what the Robot sets is the Robot's,
// whoever changed it since.
func (w *Writer) ApplyDeployment(ctx context.Context, robot *robotv1beta1.Robot, desired *appsv1ac.DeploymentApplyConfiguration,
	current *appsv1.Deployment, drift string) (*appsv1.Deployment, error) {
	current, err := w.claimCreatedFields(ctx, desired, current)
	if err != nil {
		return current, err
	}
	if current, err = w.clearRollingUpdate(ctx, desired, current); err != nil {
		return current, err
	}
	if err := w.checkMayWrite(); err != nil {
		return current, err
	}
	// The UID makes the API server refuse the apply (409 Conflict) when the
	// Deployment of that name is no longer current: one that someone else
	// created after current was deleted, which a forced apply built from
	// the cache would otherwise take over. The retry finds the name taken.
	desired.WithUID(current.UID)
	applied, err := w.kube.AppsV1().Deployments(robot.Namespace).Apply(ctx, desired,
		metav1.ApplyOptions{FieldManager: workload.FieldManager, Force: true})
	if replaced(err) {
		return current, fmt.Errorf("applying Deployment %s/%s: it was deleted and created again since the operator read it: %w", robot.Namespace, *desired.Name, err)
	}
	if apierrors.IsInvalid(err) && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		// Refused: either by what another writer set next to the
		// operator's fields, which may pass, or by what the spec asks for
		// (a Robot stored before a validation rule existed), which cannot.
		if conflict := w.foreignFieldConflict(ctx, robot.Namespace, *desired.Name, err); conflict != nil {
			return current, conflict
		}
	}
	if err != nil {
		return current, writeError("applying", robot.Namespace, *desired.Name, err)
	}

	w.deployments.Remember(applied)
	// What the operator just applied holds its spec: nothing to compare
	// until the Deployment's spec or the Robot's changes.
	w.specsChecked.Record(applied.UID, applied.Generation, desired.Annotations[workload.AnnotationSpecHash])
	klog.FromContext(ctx).V(2).Info("Updated Deployment", "deployment", klog.KObj(applied), "reason", drift)
	w.Recorder.Eventf(robot, corev1.EventTypeNormal, EventDeploymentUpdated, "Updated Deployment %q: %s", applied.Name, drift)
	return applied, nil
}

// writeError says what the failure of a create or an apply of Deployment
// namespace/name means for the sync.
func writeError(verb, namespace, name string, err error) error {
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The namespace is going away, and the Robot with it.
		return outcome.ErrNamespaceTerminating
	case apierrors.IsInvalid(err):
		// The API server refused what the spec asks for: a Robot stored
		// before a validation rule existed, say. Retrying cannot help.
		return &outcome.InvalidSpecError{Err: err}
	}
	return fmt.Errorf("%s Deployment %s/%s: %w", verb, namespace, name, err)
}

// foreignFieldConflict returns a *outcome.FieldConflictError when the API server
// refused an apply (invalid) over a field of the Deployment that another
// writer owns, per its managedFields; nil when no other writer's field is
// involved, or the Deployment cannot be read.
func (w *Writer) foreignFieldConflict(ctx context.Context, namespace, name string, invalid error) error {
	var status apierrors.APIStatus
	if !errors.As(invalid, &status) || status.Status().Details == nil {
		return nil
	}
	live, err := w.kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == "" {
			continue
		}
		if field, manager := foreignOwner(live.ManagedFields, cause.Field); manager != "" {
			return &outcome.FieldConflictError{Deployment: name, Field: field, Manager: manager, Err: invalid}
		}
	}
	return nil
}

// GetDeployment reads the Deployment named name from the API server.
func (w *Writer) GetDeployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	deployment, err := w.kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		// NotFound too: deleted since the create found it; the retry
		// creates it.
		return nil, fmt.Errorf("getting Deployment %s/%s: %w", namespace, name, err)
	}
	return deployment, nil
}

// CreateService creates robot's Service with a plain create, which fails
// when a Service of that name exists: one that someone else created after
// the cache was filled is never written.
func (w *Writer) CreateService(ctx context.Context, robot *robotv1beta1.Robot, desired *corev1ac.ServiceApplyConfiguration) (*corev1.Service, error) {
	var service corev1.Service
	if err := workload.RoundTrip(desired, &service); err != nil {
		return nil, &outcome.InvalidSpecError{Err: err}
	}
	if err := w.checkMayWrite(); err != nil {
		return nil, err
	}
	created, err := w.kube.CoreV1().Services(robot.Namespace).Create(ctx, &service,
		metav1.CreateOptions{FieldManager: workload.FieldManager})
	if err != nil {
		return nil, serviceWriteError("creating", robot.Namespace, service.Name, err)
	}
	w.services.Remember(created)
	klog.FromContext(ctx).V(2).Info("Created Service", "service", klog.KObj(created))
	w.Recorder.Eventf(robot, corev1.EventTypeNormal, EventServiceCreated, "Created Service %q", created.Name)
	return created, nil
}

// ApplyService applies desired, what robot asks for, to its Service,
// current, which differs from it as drift says. The apply is forced: what
// the Robot sets is the Robot's, whoever changed it since.
func (w *Writer) ApplyService(ctx context.Context, robot *robotv1beta1.Robot, desired *corev1ac.ServiceApplyConfiguration,
	current *corev1.Service, drift string) (*corev1.Service, error) {
	current, err := w.claimCreatedServiceFields(ctx, current)
	if err != nil {
		return current, err
	}
	if err := w.checkMayWrite(); err != nil {
		return current, err
	}
	// As for the Deployment: never onto another Service of that name.
	desired.WithUID(current.UID)
	applied, err := w.kube.CoreV1().Services(robot.Namespace).Apply(ctx, desired,
		metav1.ApplyOptions{FieldManager: workload.FieldManager, Force: true})
	if replaced(err) {
		return current, fmt.Errorf("applying Service %s/%s: it was deleted and created again since the operator read it: %w", robot.Namespace, *desired.Name, err)
	}
	if err != nil {
		return current, serviceWriteError("applying", robot.Namespace, *desired.Name, err)
	}
	w.services.Remember(applied)
	klog.FromContext(ctx).V(2).Info("Updated Service", "service", klog.KObj(applied), "reason", drift)
	w.Recorder.Eventf(robot, corev1.EventTypeNormal, EventServiceUpdated, "Updated Service %q: %s", applied.Name, drift)
	return applied, nil
}

// claimCreatedServiceFields makes the fields that the operator's create of
// current set owned by its applies, before the first apply. Unlike a
// Deployment's, a Service's fields are few and always all set, so there is
// no reason to wait for the Robot to change: the first apply, whatever its
// cause, may drop what the create set (the old port when the port changes,
// the externalTrafficPolicy the API server defaulted for a NodePort when the
// type goes back to ClusterIP), and that costs one patch, once per Service.
func (w *Writer) claimCreatedServiceFields(ctx context.Context, current *corev1.Service) (*corev1.Service, error) {
	claimed, err := claimCreated(ctx, w, "Service", current, w.kube.CoreV1().Services(current.Namespace).Patch)
	if claimed != current {
		w.services.Remember(claimed)
	}
	return claimed, err
}

// DeleteOwnService deletes robot's Service, current, which the Robot no
// longer asks for. The UID precondition makes sure that only that Service
// goes: one created under the same name since the cache saw it is left.
func (w *Writer) DeleteOwnService(ctx context.Context, robot *robotv1beta1.Robot, current *corev1.Service) error {
	if err := w.checkMayWrite(); err != nil {
		return err
	}
	err := w.kube.CoreV1().Services(current.Namespace).Delete(ctx, current.Name,
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
	w.Recorder.Eventf(robot, corev1.EventTypeNormal, EventServiceDeleted, "Deleted Service %q: the Robot asks for none", current.Name)
	return nil
}

// serviceWriteError says what the failure of a create or an apply of
// Service namespace/name means for the sync.
func serviceWriteError(verb, namespace, name string, err error) error {
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return outcome.ErrNamespaceTerminating
	case apierrors.IsInvalid(err):
		// A port or type the API server refuses for a Service, such as a
		// LoadBalancer where the cluster forbids it: retrying cannot help.
		return &outcome.InvalidSpecError{Err: err}
	}
	return fmt.Errorf("%s Service %s/%s: %w", verb, namespace, name, err)
}

// claimCreatedFields makes the fields that the operator's create of current
// set owned by the operator's applies, when the apply of desired that comes
// next may drop one of them, and returns the Deployment as it then is.
//
// It may drop one only if the Robot asks for something else than at the
// create, which the spec hash tells. Until then the create's entry stays, so
// that undoing another writer's change takes one write, not two. Once the
// Robot changed, the entry becomes the operator's Apply entry; or, if an
// apply has recorded that entry since the create, it goes: that apply set
// every field the create set, the Robot asking for the same then.
func (w *Writer) claimCreatedFields(ctx context.Context, desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) (*appsv1.Deployment, error) {
	if current.Annotations[workload.AnnotationSpecHash] == desired.Annotations[workload.AnnotationSpecHash] {
		return current, nil
	}
	claimed, err := claimCreated(ctx, w, "Deployment", current, w.kube.AppsV1().Deployments(current.Namespace).Patch)
	if claimed != current {
		w.deployments.Remember(claimed)
	}
	return claimed, err
}

// clearRollingUpdate sends RecreatePatch when the apply of desired,
// a Recreate strategy, needs current's rollingUpdate gone first, and returns
// the Deployment as it then is. As for the claim, a failed test (422) is an
// ordinary failure, retried with backoff, not an invalid spec.
func (w *Writer) clearRollingUpdate(ctx context.Context, desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) (*appsv1.Deployment, error) {
	data, err := RecreatePatch(desired, current)
	if err != nil || data == nil {
		return current, err
	}
	if err := w.checkMayWrite(); err != nil {
		return current, err
	}
	patched, err := w.kube.AppsV1().Deployments(current.Namespace).Patch(ctx, current.Name, types.JSONPatchType, data,
		metav1.PatchOptions{FieldManager: workload.FieldManager})
	if err != nil {
		return current, fmt.Errorf("removing the rollingUpdate of Deployment %s/%s before its strategy becomes Recreate: %w", current.Namespace, current.Name, err)
	}
	w.deployments.Remember(patched)
	klog.FromContext(ctx).V(4).Info("Removed the rollingUpdate before applying Recreate", "deployment", klog.KObj(patched))
	return patched, nil
}

// claimCreated sends, through patch, the ClaimPatch of current's create
// entry, if it has one, and returns the object as it then is. An error
// leaves current as it was: a failed test (422) says the object changed
// since it was read, an ordinary failure, retried with backoff.
func claimCreated[T metav1.Object](ctx context.Context, w *Writer, kind string, current T,
	patch func(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (T, error)) (T, error) {
	i := drift.CreatedFieldsEntry(current.GetManagedFields())
	if i < 0 {
		return current, nil
	}
	data, err := ClaimPatch(current, i)
	if err != nil {
		return current, err
	}
	if err := w.checkMayWrite(); err != nil {
		return current, err
	}
	claimed, err := patch(ctx, current.GetName(), types.JSONPatchType, data, metav1.PatchOptions{FieldManager: workload.FieldManager})
	if err != nil {
		return current, fmt.Errorf("taking over the fields of the create of %s %s/%s: %w", kind, current.GetNamespace(), current.GetName(), err)
	}
	klog.FromContext(ctx).V(4).Info("Took over the fields of the create", "kind", kind, "object", klog.KObj(claimed))
	return claimed, nil
}

// GetService reads the Service named name from the API server.
func (w *Writer) GetService(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	service, err := w.kube.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("getting Service %s/%s: %w", namespace, name, err)
	}
	return service, nil
}

// replaced reports whether the API server refused an apply because the
// object of that name is not the one whose UID the apply names: it was
// deleted and created again since the operator read it. That is no invalid
// spec but an ordinary failure: the retry, with backoff, reads the object
// anew.
func replaced(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == "metadata.uid" {
			return true
		}
	}
	return false
}
