package owned

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/transform"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	listers "github.com/robot-operator/robot-operator/pkg/generated/listers/robot/v1beta1"
)

// Kind describes one kind of object a Robot owns: everything Path needs to
// know of it, and nothing else. New builds from it what the writer needs
// (writer.Kind), and gives it what every kind says alike where it is not
// set: the spec hash is the desired object's robot.dev/spec-hash
// annotation, and the drift is drift.ObjectDrift around SpecDrift.
type Kind[T writer.Object, A writer.ApplyConfiguration[A]] struct {
	// Name is the kind, as Events and errors name it: "Deployment".
	Name string
	// Client returns the kind's typed client in a namespace.
	Client func(namespace string) writer.Client[T, A]
	// Updated and Deleted are the reasons of the Events that announce
	// each such write. A create is named in the sync's one Created Event
	// (writer.EventCreated).
	Updated, Deleted string
	// Meta returns desired's metadata, where New's defaults read the spec
	// hash, the labels, the controller reference and the annotations.
	Meta func(desired A) *metav1ac.ObjectMetaApplyConfiguration
	// SpecDrift, unless Drift is set, says how current's spec differs
	// from desired's, or "".
	SpecDrift func(desired A, current T) string
	// SpecHash, when set, returns what identifies desired's spec, for the
	// spec-check memo, instead of its robot.dev/spec-hash annotation.
	SpecHash func(desired A) string
	// Drift, when set, says the whole of how current differs from
	// desired, or "", instead of drift.ObjectDrift around SpecDrift. With
	// specsMatch, the specs are known to match and need no comparison.
	Drift func(desired A, current T, specsMatch bool) string
	// Generation reports whether the kind's metadata.generation changes
	// with every change of its spec, so that the spec-check memo, which
	// skips the comparison of specs when neither side changed, keys on it;
	// otherwise it keys on the resourceVersion, which status updates move
	// too.
	Generation bool
	// PodTemplate, when set, says how current's pod template differs from
	// desired's, or "": an apply would roll the pods. An observe-only
	// operator reports it.
	PodTemplate func(desired A, current T) string
	// PrepareApply, when set, sends through objects, the kind's writer,
	// what must be written before the apply of desired onto current, and
	// returns the object as it then is.
	PrepareApply func(ctx context.Context, objects *writer.Objects[T, A], desired A, current T) (T, error)
	// Wants reports whether a Robot asks for an object of this kind; nil
	// means every Robot does.
	Wants func(robot *robotv1beta1.Robot) bool
	// Hold, when set, returns why nothing may be written for robot now:
	// the object, if the Robot has one, is reported as it is.
	Hold func(robot *robotv1beta1.Robot) error
	// ObjectName is the name of a Robot's object.
	ObjectName func(robot *robotv1beta1.Robot) string
	// Desired builds, from the Robot alone, the object it asks for.
	Desired func(robot *robotv1beta1.Robot) (A, error)
	// Cached reads the object from the informer cache, which holds only
	// those labelled as managed by the operator; a NotFound error when it
	// has none.
	Cached func(namespace, name string) (T, error)
	// NameTaken is the Synced reason when an object of the name of the
	// Robot's is someone else's, and NameTakenHint what a person can do
	// then, besides deleting that object (outcome.NameTakenError).
	NameTaken     string
	NameTakenHint string
	// Reported, when set, reports whether the Robot's status says that it
	// has had its object: one missing from the cache was then deleted,
	// maybe by the garbage collector because the Robot is gone too.
	Reported func(robot *robotv1beta1.Robot) bool
	// Refuse, when set, returns why desired must not be applied onto
	// current, robot's own object, before anything is compared (a change
	// the API server refuses, such as that of an immutable field): the
	// object stays as it is.
	Refuse func(robot *robotv1beta1.Robot, desired A, current T) error
	// Refused, when set, turns the API server's refusal of the apply of
	// desired onto current into what the Robot reports; nil when it is no
	// refusal the kind knows.
	Refused func(desired A, current T, err error) error
	// Explain, when set, says the API server's refusal of a create or an
	// apply of robot's object in the Robot's terms (which of its fields
	// asked for what the API server refused); nil when it is no refusal
	// the kind knows.
	Explain func(robot *robotv1beta1.Robot, err error) error
	// Released, when set, reports whether current, the Robot's own
	// object, was taken out of the operator's hands by whoever may edit it
	// (an annotation): it is reported as it is, and neither applied to nor
	// deleted, until it is handed back.
	Released func(current T) bool
	// Admit, when set, is asked before the apply of a change of what the
	// Robot asks for (not another writer's): it returns desired as it is
	// to be applied, or why the change must wait, the object staying as
	// it is (the Deployment's: the fleet budget).
	Admit func(robot *robotv1beta1.Robot, desired A, current T) (A, error)
	// Contested is the Synced reason while another writer keeps changing
	// the object.
	Contested string
	// Denied, when set, returns why robot gets no object of the kind
	// although it asks for one. It is told once the path has run, so that
	// an object the operator made is deleted all the same.
	Denied func(robot *robotv1beta1.Robot) error
	// Optional, when set, says that the kind's API may be missing from
	// the cluster, and how it is found.
	Optional *Optional
	// Preflight, when set, checks a change of the Robot before it is
	// applied onto the Robot's own object: an error leaves the object as
	// it is.
	Preflight Preflight[T, A]
	// Reports says that what changes in an object of the kind, once its
	// Robot's spec is in place, is mostly for the Robot's status to
	// report (a Deployment's rollout): its add and update events go to
	// Deps.Report.
	Reports bool
}

// Preflight checks a change of a Robot before its object is written
// (internal/preflight), and remembers what it found per Robot.
type Preflight[T writer.Object, A writer.ApplyConfiguration[A]] interface {
	// Check returns why desired must not be applied onto current, the
	// Robot's own object, which the Robot's change would turn into it,
	// or, as an *outcome.CheckDeferredError, when it may be checked.
	Check(ctx context.Context, robot *robotv1beta1.Robot, desired A, current T) error
	// ForgetRobot drops what is remembered of the Robot uid.
	ForgetRobot(uid types.UID)
	// Len is how many Robots it remembers.
	Len() int
}

// Deps is what every Path shares: the writer, the Robots' cache, the clock,
// and the queue to put a Robot in.
type Deps struct {
	Writer  *writer.Writer
	Robots  listers.RobotLister
	Clock   clock.PassiveClock
	Enqueue func(cache.ObjectName)
	// Report, when set, queues a Robot whose object of a kind that
	// reports (Kind.Reports) changed; without it, Enqueue does.
	Report func(*robotv1beta1.Robot)
}

// Path keeps the objects of one kind as their Robots ask.
type Path[T writer.Object, A writer.ApplyConfiguration[A]] struct {
	kind Kind[T, A]
	deps Deps
	// objects writes the kind's objects, and remembers what it wrote.
	objects *writer.Objects[T, A]
	// fights counts the reverts of each object, to back off from another
	// writer that keeps changing it.
	fights *drift.Fights
	// refused holds, per Robot, the generation whose write the API server
	// refused as invalid: no write is sent again for that generation.
	refused Refusals
}

// New returns the Path of kind, and registers its event handler on
// informer, the kind's.
func New[T writer.Object, A writer.ApplyConfiguration[A]](deps Deps, kind Kind[T, A], informer cache.SharedInformer) (*Path[T, A], error) {
	write, err := kind.writer()
	if err != nil {
		return nil, err
	}
	if kind.Optional != nil && kind.Optional.Found == nil {
		return nil, fmt.Errorf("the %s kind is optional, and gives no Discovery to say whether it is there", kind.Name)
	}
	p := &Path[T, A]{kind: kind, deps: deps, objects: writer.NewObjects(deps.Writer, write), fights: drift.NewFights()}
	if _, err := informer.AddEventHandler(p.Handlers()); err != nil {
		return nil, fmt.Errorf("adding the %s event handler: %w", kind.Name, err)
	}
	return p, nil
}

// writer returns what the writer needs of the kind, with the defaults for
// what every kind says alike.
func (kind Kind[T, A]) writer() (writer.Kind[T, A], error) {
	write := writer.Kind[T, A]{Name: kind.Name, Client: kind.Client, Updated: kind.Updated, Deleted: kind.Deleted,
		SpecHash: kind.SpecHash, Drift: kind.Drift, Generation: kind.Generation, PodTemplate: kind.PodTemplate}
	if kind.Meta == nil && (write.SpecHash == nil || write.Drift == nil) {
		return write, fmt.Errorf("the %s kind gives no Meta to read its spec hash and drift from", kind.Name)
	}
	if write.SpecHash == nil {
		write.SpecHash = func(desired A) string { return kind.Meta(desired).Annotations[workload.AnnotationSpecHash] }
	}
	if write.Drift == nil {
		if kind.SpecDrift == nil {
			return write, fmt.Errorf("the %s kind gives neither its drift nor its spec's", kind.Name)
		}
		// Only the spec is the kind's own to compare, and only when the
		// spec-check memo does not say it is as checked: the fields the
		// operator sets elsewhere are told alike for every kind, always.
		write.Drift = func(desired A, current T, specsMatch bool) string {
			return drift.ObjectDrift(kind.Meta(desired), current, func() string {
				if specsMatch {
					return ""
				}
				return kind.SpecDrift(desired, current)
			})
		}
	}
	return write, nil
}

// Objects returns the writer of the kind's objects, to ask what it
// remembers.
func (p *Path[T, A]) Objects() *writer.Objects[T, A] { return p.objects }

// Fights returns the fight tracker of the kind's objects.
func (p *Path[T, A]) Fights() *drift.Fights { return p.fights }

// Handlers returns the event handlers of the kind's informer: each queues
// the Robot of an object that changed, unless the change is this process's
// own write.
func (p *Path[T, A]) Handlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: p.add, UpdateFunc: p.update, DeleteFunc: p.delete}
}

// Sync creates, updates or deletes robot's object so that it is what the
// Robot asks for, and returns it as it now is: the zero T when the Robot
// has none it controls. It never touches an object the Robot does not
// control. Whether there is anything to do is decided from the cache: a
// Robot whose object is as asked costs no request.
func (p *Path[T, A]) Sync(ctx context.Context, robot *robotv1beta1.Robot) (T, error) {
	var none T
	if p.kind.Hold != nil {
		if err := p.kind.Hold(robot); err != nil {
			return p.Own(robot), err
		}
	}
	if p.wants(robot) && !p.there() {
		return none, p.kind.Optional.Missing
	}
	name := p.kind.ObjectName(robot)
	current, found, err := p.cached(robot.Namespace, name)
	if err != nil {
		return none, err
	}
	if found && transform.IsStub(current) && metav1.IsControlledBy(current, robot) {
		// The informer took the Robot's own object before the Robot cache
		// had the Robot, so it kept a stub; the next change of the object
		// brings it whole. Meanwhile it is read from the API server.
		current, found, err = p.read(ctx, robot.Namespace, name)
		if err != nil {
			return none, err
		}
	}
	if found && p.released(robot, current) {
		klog.FromContext(ctx).V(4).Info("Leaving the object as it is: taken out of the operator's hands", "kind", p.kind.Name, "name", name)
		return current, nil
	}
	if !p.wants(robot) {
		if found && metav1.IsControlledBy(current, robot) {
			return none, p.objects.Delete(ctx, robot, current)
		}
		return none, nil
	}
	desired, err := p.kind.Desired(robot)
	if err != nil {
		return none, err
	}
	if !found {
		created, existing, err := p.create(ctx, robot, desired)
		if existing == nil {
			return created, err
		}
		current = *existing
	}
	if err := p.checkControlled(robot, current); err != nil {
		return none, err
	}
	return p.converge(ctx, robot, desired, current)
}

// create creates robot's object. When one of that name exists although the
// cache has none (someone else's, or the Robot's own with its managed-by
// label removed), it returns that object, read from the API server, for
// the caller to tell which.
func (p *Path[T, A]) create(ctx context.Context, robot *robotv1beta1.Robot, desired A) (T, *T, error) {
	var none T
	if err := p.refused.At(robot); err != nil {
		return none, nil, err
	}
	if p.kind.Reported != nil && p.kind.Reported(robot) {
		// The Robot had its object, and it is gone: someone deleted it,
		// and it must come back; or the garbage collector did, because
		// the Robot is gone too and the cache has not caught up with that
		// yet. Only the API server can tell which: recreated for a
		// deleted Robot, the object would be deleted again.
		if err := p.deps.Writer.CheckRobotExists(ctx, robot); err != nil {
			return none, nil, err
		}
	}
	created, err := p.objects.Create(ctx, robot, desired)
	if !apierrors.IsAlreadyExists(err) {
		return created, nil, p.noteRefusal(robot, p.explain(robot, err))
	}
	existing, err := p.objects.Get(ctx, robot.Namespace, *desired.GetName())
	if err != nil {
		return none, nil, err
	}
	return none, &existing, nil
}

// checkControlled returns nil when robot controls current, and otherwise
// the error that says whose it is.
func (p *Path[T, A]) checkControlled(robot *robotv1beta1.Robot, current T) error {
	if metav1.IsControlledBy(current, robot) {
		return nil
	}
	if ref := metav1.GetControllerOf(current); IsRobotRef(ref) && ref.Name == robot.Name {
		// A Robot of this name was deleted and created again: the first
		// one's object goes once the garbage collector gets to it, and its
		// delete event queues this Robot.
		return &outcome.EarlierRobotError{Name: current.GetName(), Kind: p.kind.Name}
	}
	return &outcome.NameTakenError{Kind: p.kind.Name, Name: current.GetName(), Owner: outcome.ControllerName(current),
		Reason: p.kind.NameTaken, Hint: p.kind.NameTakenHint}
}

// converge applies desired to current, robot's own object, when the two
// differ, and returns the object as it then is. Drift that another writer
// made, with the Robot unchanged, is a revert: reverts that keep coming
// make a fight, in which the operator waits longer before each.
func (p *Path[T, A]) converge(ctx context.Context, robot *robotv1beta1.Robot, desired A, current T) (T, error) {
	if p.kind.Refuse != nil {
		if err := p.kind.Refuse(robot, desired, current); err != nil {
			return current, err
		}
	}
	difference := p.objects.Drift(desired, current)
	now := p.deps.Clock.Now()
	if difference == "" {
		if fight, endsIn := p.fights.Held(current.GetUID(), now); fight.InFight {
			return current, p.contested(current, fight.Drift, fight.Writer, endsIn)
		}
		return current, nil
	}
	if err := p.refused.At(robot); err != nil {
		return current, err
	}
	// The spec hash that current says it was last applied with tells a
	// change of the Robot from another writer's, until this process has
	// written or checked the object itself.
	applied := current.GetAnnotations()[workload.AnnotationSpecHash]
	if p.objects.RobotChanged(desired, current, applied) {
		// The Robot changed: this is no revert. A change that does not
		// come from its spec may wait for the fleet budget; one the
		// cluster would refuse is not written.
		if p.kind.Admit != nil {
			admitted, err := p.kind.Admit(robot, desired, current)
			if err != nil {
				return current, err
			}
			desired = admitted
		}
		if p.kind.Preflight != nil {
			if err := p.kind.Preflight.Check(ctx, robot, desired, current); err != nil {
				return current, err
			}
		}
		return p.apply(ctx, robot, desired, current, difference)
	}
	// The Robot asks for what it asked for at the operator's last write:
	// another writer changed the object.
	fight := p.fights.Admit(current.GetUID(), now)
	if fight.Wait > 0 {
		return current, p.contested(current, fight.Drift, fight.Writer, fight.Wait)
	}
	foreign := fight.Writer
	if fight.StartsNow {
		// Once per fight: the cache keeps no managedFields to say who.
		if live, err := p.objects.Get(ctx, current.GetNamespace(), current.GetName()); err == nil {
			foreign = drift.LastForeignWriter(live)
		}
	}
	written, err := p.apply(ctx, robot, desired, current, difference)
	if err != nil {
		return written, err
	}
	if fight := p.fights.Reverted(written.GetUID(), now, difference, foreign); fight.InFight {
		// The other writer's next change queues the Robot; if none comes,
		// the fight can end after drift.FightCalm.
		return written, p.contested(written, fight.Drift, fight.Writer, min(fight.Wait, drift.FightCalm))
	}
	return written, nil
}

// apply applies desired onto current, which differs from it as difference
// says, and says what a refusal means.
func (p *Path[T, A]) apply(ctx context.Context, robot *robotv1beta1.Robot, desired A, current T, difference string) (T, error) {
	written, err := p.prepareAndApply(ctx, robot, desired, current, difference)
	if err != nil && p.kind.Refused != nil {
		if refused := p.kind.Refused(desired, current, err); refused != nil {
			return current, refused
		}
	}
	return written, p.noteRefusal(robot, p.explain(robot, err))
}

// prepareAndApply sends what the kind must write before the apply, then
// the apply.
func (p *Path[T, A]) prepareAndApply(ctx context.Context, robot *robotv1beta1.Robot, desired A, current T, difference string) (T, error) {
	if p.kind.PrepareApply != nil {
		prepared, err := p.kind.PrepareApply(ctx, p.objects, desired, current)
		if err != nil {
			return prepared, err
		}
		current = prepared
	}
	return p.objects.Apply(ctx, robot, desired, current, difference)
}

// explain returns err, the answer to a write of robot's object, in the
// Robot's terms when the kind knows them.
func (p *Path[T, A]) explain(robot *robotv1beta1.Robot, err error) error {
	if err == nil || p.kind.Explain == nil {
		return err
	}
	if explained := p.kind.Explain(robot, err); explained != nil {
		return explained
	}
	return err
}

// contested is the error of a fight over object.
func (p *Path[T, A]) contested(object T, difference, foreign string, recheck time.Duration) error {
	return &outcome.ContestedError{Reason: p.kind.Contested, Kind: p.kind.Name, Name: object.GetName(),
		Drift: difference, Writer: foreign, Recheck: recheck, MaxWait: drift.FightMaxWait}
}

// noteRefusal remembers err when it is the API server's refusal of robot's
// write as invalid, so that the same write is not sent again until the
// Robot's next generation; it returns err.
func (p *Path[T, A]) noteRefusal(robot *robotv1beta1.Robot, err error) error {
	var invalid *outcome.InvalidSpecError
	if errors.As(err, &invalid) {
		p.refused.Record(robot, err)
	}
	return err
}

// Own returns robot's object from the cache when the Robot controls it, or
// the zero T: what the status reports when the object was not synced.
func (p *Path[T, A]) Own(robot *robotv1beta1.Robot) T {
	var none T
	current, found, err := p.cached(robot.Namespace, p.kind.ObjectName(robot))
	if err != nil || !found || !metav1.IsControlledBy(current, robot) || transform.IsStub(current) {
		return none
	}
	if !p.wants(robot) && !p.released(robot, current) {
		return none
	}
	return current
}

// released reports whether current is robot's own object and was taken
// out of the operator's hands.
func (p *Path[T, A]) released(robot *robotv1beta1.Robot, current T) bool {
	return p.kind.Released != nil && metav1.IsControlledBy(current, robot) && p.kind.Released(current)
}

// there reports whether the kind's API is there: always, unless the kind
// is optional and not found.
func (p *Path[T, A]) there() bool {
	return p.kind.Optional == nil || p.kind.Optional.Found.Available()
}

// wants reports whether robot asks for an object of this kind.
func (p *Path[T, A]) wants(robot *robotv1beta1.Robot) bool {
	return p.kind.Wants == nil || p.kind.Wants(robot)
}

// cached returns the object named name from the cache, or the one this
// process wrote last if the cache has not caught up with it yet; false when
// the cache has none. The cache holds only the objects labelled as managed
// by the operator: an object of that name may exist all the same.
func (p *Path[T, A]) cached(namespace, name string) (T, bool, error) {
	if !p.there() {
		// Nothing is cached before the kind's API is there: no object,
		// as far as the operator can tell.
		var none T
		return none, false, nil
	}
	object, err := p.kind.Cached(namespace, name)
	if apierrors.IsNotFound(err) {
		return object, false, nil
	}
	if err != nil {
		return object, false, err
	}
	return p.objects.Freshest(object), true, nil
}

// read returns the object named name from the API server; false when there
// is none.
func (p *Path[T, A]) read(ctx context.Context, namespace, name string) (T, bool, error) {
	object, err := p.objects.Get(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return object, false, nil
	}
	if err != nil {
		return object, false, err
	}
	return object, true, nil
}

// ForgetRobot drops what the Path remembers of the Robot uid, deleted.
func (p *Path[T, A]) ForgetRobot(uid types.UID) {
	p.refused.Forget(uid)
	if p.kind.Preflight != nil {
		p.kind.Preflight.ForgetRobot(uid)
	}
}

// Tracked adds the sizes of what the Path keeps per object to sizes, by
// the names the robot_operator_tracked_objects gauge gives them.
func (p *Path[T, A]) Tracked(sizes map[string]int, written string) {
	objects, checked := p.objects.Remembered()
	sizes[written] += objects
	sizes["specs_checked"] += checked
	sizes["fights"] += p.fights.Len()
	if p.kind.Preflight != nil {
		sizes["preflight"] += p.kind.Preflight.Len()
	}
}

// add queues the Robot of an object the informer has just seen, unless it
// is the object this process just created: the sync that created it has
// already reported it.
func (p *Path[T, A]) add(obj interface{}) {
	if object, ok := obj.(T); ok && p.objects.IsOwnWrite(object) {
		return
	}
	p.EnqueueController(obj)
}

// update queues the Robot of a changed object, unless the change is a
// periodic resync or this process's own write: nothing the sync that wrote
// it has not seen.
func (p *Path[T, A]) update(old, new interface{}) {
	object, ok := new.(T)
	if !ok {
		return
	}
	if previous, ok := old.(T); ok && previous.GetResourceVersion() == object.GetResourceVersion() || p.objects.IsOwnWrite(object) {
		return
	}
	p.EnqueueController(new)
}

// delete forgets what was kept about a deleted object, and queues its
// Robot: by name, whatever the owner's UID, so that the deletion of an
// earlier Robot's object frees the name for the Robot that has it now.
func (p *Path[T, A]) delete(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if object, ok := obj.(T); ok {
		p.objects.Forget(object.GetUID())
		p.fights.Forget(object.GetUID())
	}
	if robot, _ := p.owningRobot(obj); robot != nil {
		p.deps.Enqueue(cache.MetaObjectToName(robot))
	}
}

// EnqueueController queues the Robot that controls obj, if any: through
// Deps.Report for a kind that reports, through Deps.Enqueue otherwise. The
// owner must match by API group, kind and UID: a Robot deleted and created
// again under the same name is another Robot.
func (p *Path[T, A]) EnqueueController(obj interface{}) {
	robot, ref := p.owningRobot(obj)
	switch {
	case robot == nil || robot.UID != ref.UID:
	case p.kind.Reports && p.deps.Report != nil:
		p.deps.Report(robot)
	default:
		p.deps.Enqueue(cache.MetaObjectToName(robot))
	}
}

// owningRobot returns the Robot named by obj's controller reference, and
// that reference; nil when there is no such Robot. The Robot's UID may
// differ from the reference's.
func (p *Path[T, A]) owningRobot(obj interface{}) (*robotv1beta1.Robot, *metav1.OwnerReference) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	object, ok := obj.(metav1.Object)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("unexpected object of type %T in the %s informer", obj, p.kind.Name))
		return nil, nil
	}
	ref := metav1.GetControllerOf(object)
	if !IsRobotRef(ref) {
		return nil, nil
	}
	robot, err := p.deps.Robots.Robots(object.GetNamespace()).Get(ref.Name)
	if err != nil {
		return nil, nil
	}
	return robot, ref
}

// IsRobotRef reports whether an owner reference names a Robot.
func IsRobotRef(ref *metav1.OwnerReference) bool {
	if ref == nil || ref.Kind != "Robot" {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == robotv1beta1.SchemeGroupVersion.Group
}
