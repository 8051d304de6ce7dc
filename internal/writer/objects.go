package writer

import (
	"context"
	"errors"
	"fmt"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/echo"
	"github.com/robot-operator/robot-operator/internal/observe"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/workload"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// Object is an object a Robot owns, by pointer, as its typed client
// returns it.
type Object interface {
	metav1.Object
	runtime.Object
}

// ApplyConfiguration is the apply configuration of an object a Robot owns:
// it names the object, and can carry its UID, the precondition of every
// apply.
type ApplyConfiguration[A any] interface {
	GetName() *string
	WithUID(types.UID) A
}

// Client is what the writer needs of the typed client of one kind, in one
// namespace. The typed clientsets' interfaces (DeploymentInterface,
// ServiceInterface, ...) are Clients.
type Client[T Object, A any] interface {
	Create(ctx context.Context, object T, opts metav1.CreateOptions) (T, error)
	Apply(ctx context.Context, desired A, opts metav1.ApplyOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Kind is how the objects of one kind are written: what internal/owned's
// description of the kind gives the writer. Its functions are pure: the
// writer asks them, and they call nothing back.
type Kind[T Object, A ApplyConfiguration[A]] struct {
	// Name is the kind, as Events and errors name it: "Deployment".
	Name string
	// Client returns the kind's typed client in a namespace.
	Client func(namespace string) Client[T, A]
	// Updated and Deleted are the reasons of the Events that announce
	// each such write. A create is named in the sync's one Created Event
	// (EventCreated).
	Updated, Deleted string
	// SpecHash returns what identifies desired's spec, for the spec-check
	// memo.
	SpecHash func(desired A) string
	// Drift says how current differs from desired, or "" when it does
	// not. With specsMatch, the specs are known to match and need no
	// comparison.
	Drift func(desired A, current T, specsMatch bool) string
	// Generation reports whether the kind's metadata.generation changes
	// with every change of its spec, so that the spec-check memo keys on
	// it; otherwise it keys on the resourceVersion, which status updates
	// move too. Either way the comparison of specs is skipped when neither
	// side changed.
	Generation bool
	// PodTemplate, when set, says how current's pod template differs from
	// desired's, or "": what an apply would change of the pods. Only an
	// observe-only writer asks it, for its report.
	PodTemplate func(desired A, current T) string
}

// Objects writes the objects of one kind for their Robots, and remembers
// what it wrote: the echo filter, and the spec-check memo. The controller
// asks it what it remembers; nothing else changes it.
type Objects[T Object, A ApplyConfiguration[A]] struct {
	w    *Writer
	kind Kind[T, A]
	// written is the echo filter: the objects written, until the cache
	// catches up with them.
	written echo.RecentWrites[T]
	// checked is the spec-check memo.
	checked drift.SpecChecks
}

// NewObjects returns the writer of kind's objects, writing through w.
func NewObjects[T Object, A ApplyConfiguration[A]](w *Writer, kind Kind[T, A]) *Objects[T, A] {
	return &Objects[T, A]{w: w, kind: kind}
}

// Kind returns the name of the kind written.
func (o *Objects[T, A]) Kind() string { return o.kind.Name }

// Freshest returns the newer of cached and the object last written with its
// UID.
func (o *Objects[T, A]) Freshest(cached T) T { return o.written.Freshest(cached) }

// IsOwnWrite reports whether object, just arrived from a watch, is the echo
// of this process's own write.
func (o *Objects[T, A]) IsOwnWrite(object T) bool { return o.written.IsOwnWrite(object) }

// Remember records object as written, for a write made around the writer
// (a test's).
func (o *Objects[T, A]) Remember(object T) { o.written.Remember(object) }

// Forget drops what is remembered of the object uid, deleted.
func (o *Objects[T, A]) Forget(uid types.UID) {
	o.written.Forget(uid)
	o.checked.Forget(uid)
}

// Remembered returns how many objects the echo filter and the spec-check
// memo hold.
func (o *Objects[T, A]) Remembered() (written, checked int) {
	return o.written.Len(), o.checked.Len()
}

// Drift says how current differs from desired, or "" when it does not,
// comparing the specs only when one of them changed since they last
// matched: most syncs come from status updates, which change neither.
func (o *Objects[T, A]) Drift(desired A, current T) string {
	specHash := o.kind.SpecHash(desired)
	specsMatch := o.checked.Unchanged(current.GetUID(), o.version(current), specHash)
	difference := o.kind.Drift(desired, current, specsMatch)
	if difference == "" {
		o.checked.Record(current.GetUID(), o.version(current), specHash)
	}
	return difference
}

// version is what the spec-check memo keys object on.
func (o *Objects[T, A]) version(object T) drift.Version {
	if o.kind.Generation {
		return drift.Version{Generation: object.GetGeneration()}
	}
	return drift.Version{ResourceVersion: object.GetResourceVersion()}
}

// RobotChanged reports whether the Robot asks for something else than when
// the operator last saw current hold what it asked for. It is told from the
// spec-check memo, which only the operator writes, not from anything on the
// object, which anyone can change: another writer's edit is drift like any
// other, and meets the fight back-off. Only when the memo knows nothing of
// the object (this process has not written or checked it yet) does applied,
// the spec hash the object says it was last applied with ("" when it says
// none), decide.
func (o *Objects[T, A]) RobotChanged(desired A, current T, applied string) bool {
	want := o.kind.SpecHash(desired)
	if last, ok := o.checked.LastSpecHash(current.GetUID()); ok {
		return last != want
	}
	return applied != want
}

// Create creates desired, the object robot asks for, with a plain create
// rather than an apply: a create fails with AlreadyExists when an object of
// that name exists, so one that someone else created after the cache was
// filled is never written, and no read is needed first to make sure. The
// creation is named in the sync's one Created Event when ctx carries a
// collector (CollectCreated), in an Event of its own otherwise.
func (o *Objects[T, A]) Create(ctx context.Context, robot *robotv1beta1.Robot, desired A) (T, error) {
	var zero, object T
	if err := workload.RoundTrip(desired, &object); err != nil {
		return zero, &outcome.InvalidSpecError{Err: err}
	}
	if o.w.would(ctx, observe.Change{Kind: o.kind.Name, Name: object.GetName(), Action: observe.Create}) {
		return object, nil
	}
	if err := o.w.checkMayWrite(); err != nil {
		return zero, err
	}
	created, err := o.kind.Client(robot.Namespace).Create(ctx, object, metav1.CreateOptions{FieldManager: workload.FieldManager})
	if err != nil {
		return zero, o.writeError("creating", robot.Namespace, object.GetName(), err)
	}
	o.written.Remember(created)
	// What the operator just created holds the Robot's spec: nothing to
	// compare until either changes.
	o.checked.Record(created.GetUID(), o.version(created), o.kind.SpecHash(desired))
	klog.FromContext(ctx).V(2).Info("Created "+o.kind.Name, "object", klog.KObj(created))
	if !addCreated(ctx, o.kind.Name, created.GetName()) {
		o.w.Recorder.Eventf(robot, corev1.EventTypeNormal, EventCreated, "Created %s %q", o.kind.Name, created.GetName())
	}
	return created, nil
}

// Apply applies desired, what robot asks for, to current, which differs from
// it as drift says, and returns the object as it then is. The apply is
// forced: what the Robot sets is the Robot's, whoever changed it since.
func (o *Objects[T, A]) Apply(ctx context.Context, robot *robotv1beta1.Robot, desired A, current T, drift string) (T, error) {
	change := observe.Change{Kind: o.kind.Name, Name: current.GetName(), Action: observe.Update, Diff: drift}
	if o.w.Observing() && o.kind.PodTemplate != nil {
		change.PodTemplate = o.kind.PodTemplate(desired, current)
	}
	if o.w.would(ctx, change) {
		return current, nil
	}
	if err := o.w.checkMayWrite(); err != nil {
		return current, err
	}
	name, specHash := *desired.GetName(), o.kind.SpecHash(desired)
	// The UID makes the API server refuse the apply when the object of
	// that name is no longer current: one that someone else created after
	// current was deleted, which a forced apply built from the cache would
	// otherwise take over. The retry finds the name taken.
	desired = desired.WithUID(current.GetUID())
	applied, err := o.kind.Client(robot.Namespace).Apply(ctx, desired, metav1.ApplyOptions{FieldManager: workload.FieldManager, Force: true})
	if replaced(err) {
		return current, fmt.Errorf("applying %s %s/%s: it was deleted and created again since the operator read it: %w", o.kind.Name, robot.Namespace, name, err)
	}
	if apierrors.IsInvalid(err) && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		// Refused: either by what another writer set next to the
		// operator's fields, which may pass, or by what the spec asks for
		// (a Robot stored before a validation rule existed), which cannot.
		if conflict := o.foreignFieldConflict(ctx, robot.Namespace, name, err); conflict != nil {
			return current, conflict
		}
	}
	if err != nil {
		return current, o.writeError("applying", robot.Namespace, name, err)
	}
	o.written.Remember(applied)
	o.checked.Record(applied.GetUID(), o.version(applied), specHash)
	klog.FromContext(ctx).V(2).Info("Updated "+o.kind.Name, "object", klog.KObj(applied), "reason", drift)
	o.w.Recorder.Eventf(robot, corev1.EventTypeNormal, o.kind.Updated, "Updated %s %q: %s", o.kind.Name, applied.GetName(), drift)
	return applied, nil
}

// Delete deletes current, robot's object that the Robot no longer asks for.
// The UID precondition makes sure that only that object goes: one created
// under the same name since the cache saw it is left.
func (o *Objects[T, A]) Delete(ctx context.Context, robot *robotv1beta1.Robot, current T) error {
	if o.w.would(ctx, observe.Change{Kind: o.kind.Name, Name: current.GetName(), Action: observe.Delete}) {
		return nil
	}
	if err := o.w.checkMayWrite(); err != nil {
		return err
	}
	err := o.kind.Client(current.GetNamespace()).Delete(ctx, current.GetName(),
		metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(current.GetUID()))})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or replaced by another: either way not the Robot's
		// to delete any more.
		return nil
	case err != nil:
		return fmt.Errorf("deleting %s %s/%s: %w", o.kind.Name, current.GetNamespace(), current.GetName(), err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted "+o.kind.Name, "object", klog.KObj(current))
	o.w.Recorder.Eventf(robot, corev1.EventTypeNormal, o.kind.Deleted, "Deleted %s %q: the Robot asks for none", o.kind.Name, current.GetName())
	return nil
}

// Get reads the object named name from the API server.
func (o *Objects[T, A]) Get(ctx context.Context, namespace, name string) (T, error) {
	object, err := o.kind.Client(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		// NotFound too: deleted since the create found it; the retry
		// creates it.
		var zero T
		return zero, fmt.Errorf("getting %s %s/%s: %w", o.kind.Name, namespace, name, err)
	}
	return object, nil
}

// ClaimCreated makes the fields that the operator's create of current set
// owned by its applies: it sends the ClaimPatch of current's create entry,
// if it has one, and returns the object as it then is. An error leaves
// current as it was: a failed test (422) says the object changed since it
// was read, an ordinary failure, retried with backoff.
func (o *Objects[T, A]) ClaimCreated(ctx context.Context, current T) (T, error) {
	i := drift.CreatedFieldsEntry(current.GetManagedFields())
	if i < 0 {
		return current, nil
	}
	data, err := ClaimPatch(current, i)
	if err != nil {
		return current, err
	}
	claimed, err := o.Patch(ctx, current, data)
	if err != nil {
		return current, fmt.Errorf("taking over the fields of the create of %s %s/%s: %w", o.kind.Name, current.GetNamespace(), current.GetName(), err)
	}
	klog.FromContext(ctx).V(4).Info("Took over the fields of the create", "kind", o.kind.Name, "object", klog.KObj(claimed))
	return claimed, nil
}

// Patch sends a JSON patch of current, behind the write fence, and
// remembers the object it returns.
func (o *Objects[T, A]) Patch(ctx context.Context, current T, data []byte) (T, error) {
	if o.w.Observing() {
		// A patch only prepares the apply that follows, which the report
		// names.
		return current, nil
	}
	if err := o.w.checkMayWrite(); err != nil {
		return current, err
	}
	patched, err := o.kind.Client(current.GetNamespace()).Patch(ctx, current.GetName(), types.JSONPatchType, data,
		metav1.PatchOptions{FieldManager: workload.FieldManager})
	if err != nil {
		return current, err
	}
	o.written.Remember(patched)
	return patched, nil
}

// writeError says what the failure of a create or an apply of the object
// namespace/name means for the sync.
func (o *Objects[T, A]) writeError(verb, namespace, name string, err error) error {
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The namespace is going away, and the Robot with it.
		return outcome.ErrNamespaceTerminating
	case apierrors.IsInvalid(err):
		// The API server refused what the spec asks for: a Robot stored
		// before a validation rule existed, or a type of Service the
		// cluster forbids. Retrying cannot help.
		return &outcome.InvalidSpecError{Err: err}
	}
	return fmt.Errorf("%s %s %s/%s: %w", verb, o.kind.Name, namespace, name, err)
}

// foreignFieldConflict returns a *outcome.FieldConflictError when the API
// server refused an apply (invalid) over a field of the object that another
// writer owns, per its managedFields; nil when no other writer's field is
// involved, or the object cannot be read.
func (o *Objects[T, A]) foreignFieldConflict(ctx context.Context, namespace, name string, invalid error) error {
	var status apierrors.APIStatus
	if !errors.As(invalid, &status) || status.Status().Details == nil {
		return nil
	}
	live, err := o.kind.Client(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == "" {
			continue
		}
		if field, manager := foreignOwner(live.GetManagedFields(), cause.Field); manager != "" {
			return &outcome.FieldConflictError{Kind: o.kind.Name, Name: name, Field: field, Manager: manager, Err: invalid}
		}
	}
	return nil
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
