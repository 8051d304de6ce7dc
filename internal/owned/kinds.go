package owned

import (
	"context"
	"fmt"

	"github.com/robot-operator/robot-operator/internal/writer"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// kinds are the kinds a Robot owns, in the order they are synced: the
// Deployment first. Each is its name and the function, in the kind's own
// file, that lists it from the sources. A new kind is one line here;
// whatever runs every kind ranges over the list NewPaths builds from it.
var kinds = []kindEntry{
	{"Deployment", listDeployments},
	{"Service", listServices},
	{"PodDisruptionBudget", listDisruptionBudgets},
	{"HTTPRoute", listRoutes},
	{historyKindName, listHistory},
}

// kindEntry is a kind in the list of kinds: its name (Kind.Name), and what
// builds its entry in Paths' list.
type kindEntry struct {
	name string
	list func(p *Paths, sources Sources) (ownedKind, error)
}

// ownedKind is one kind in Paths' list, whatever its types: what Paths
// runs for every kind.
type ownedKind interface {
	// sync takes robot's object through the kind's path, and puts it in
	// objects.
	sync(ctx context.Context, robot *robotv1beta1.Robot, objects *Objects) error
	// own puts robot's object, as the cache holds it, in objects.
	own(robot *robotv1beta1.Robot, objects *Objects)
	forgetRobot(uid types.UID)
	tracked(sizes map[string]int)
	// hasSynced reports whether the kind may be read from its cache.
	hasSynced() bool
}

// recorder is a kind that writes down the Robot's spec rather than runs
// it: it is synced whatever became of the Deployment, so that a spec the
// API server refused is on record too.
type recorder interface {
	ownedKind
	recordsSpec()
}

// Objects are what a Robot owns, as its paths returned them; nil where it
// has none it controls. The Deployment and the Service, which every Robot
// may own, are fields, as their paths are in Paths; the object of any
// other kind is read by the accessor in the kind's own file
// (Objects.DisruptionBudget, Objects.Route).
type Objects struct {
	Deployment *appsv1.Deployment
	Service    *corev1.Service
	// byKind holds the objects of every kind, by Kind.Name.
	byKind map[string]writer.Object
}

// set puts object, of kind, in o: a nil pointer when the Robot has none
// it controls.
func (o *Objects) set(kind string, object writer.Object) {
	if o.byKind == nil {
		o.byKind = map[string]writer.Object{}
	}
	o.byKind[kind] = object
	switch object := object.(type) {
	case *appsv1.Deployment:
		o.Deployment = object
	case *corev1.Service:
		o.Service = object
	}
}

// objectOf returns the object of kind in o, or the zero T.
func objectOf[T writer.Object](o Objects, kind string) T {
	object, _ := o.byKind[kind].(T)
	return object
}

// listedPath is a Path in Paths' list.
type listedPath[T writer.Object, A writer.ApplyConfiguration[A]] struct {
	path *Path[T, A]
	// synced reports whether the kind's cache has synced; for an optional
	// kind, whether discovery has answered once (its cache is waited for
	// before it says the kind is there).
	synced cache.InformerSynced
	// written is the name of the kind's objects in the
	// robot_operator_tracked_objects gauge.
	written string
}

// listed returns path, built with err, as an entry of p's list: its cache
// is informer, and its objects are named written in the
// robot_operator_tracked_objects gauge. An optional kind's API is handed
// to sources.APIs for discovery, and the Robots that want the kind are
// queued each time it is found (an optional kind's entry function checks
// that sources.APIs is set first, since it asks it for its Discovery).
func listed[T writer.Object, A writer.ApplyConfiguration[A]](p *Paths, sources Sources, path *Path[T, A], err error,
	informer cache.SharedIndexInformer, written string) (ownedKind, error) {
	if err != nil {
		return nil, err
	}
	entry := &listedPath[T, A]{path: path, synced: informer.HasSynced, written: written}
	if optional := path.kind.Optional; optional != nil {
		if sources.APIs == nil {
			return nil, fmt.Errorf("the %s kind is optional, and the sources have no APIs to discover it", path.kind.Name)
		}
		sources.APIs.watch(OptionalAPI{Optional: *optional, Kind: path.kind.Name, Informer: informer})
		// No Robot syncs before discovery has answered once, so that none
		// is told the kind's API is missing when it was not looked for.
		entry.synced = optional.Found.Answered
		optional.Found.OnAvailable(func() { p.enqueueWanting(path.wants) })
	}
	return entry, nil
}

func (l *listedPath[T, A]) sync(ctx context.Context, robot *robotv1beta1.Robot, objects *Objects) error {
	object, err := l.path.Sync(ctx, robot)
	objects.set(l.path.kind.Name, object)
	if err == nil && l.path.kind.Denied != nil {
		err = l.path.kind.Denied(robot)
	}
	return err
}

func (l *listedPath[T, A]) own(robot *robotv1beta1.Robot, objects *Objects) {
	objects.set(l.path.kind.Name, l.path.Own(robot))
}

func (l *listedPath[T, A]) forgetRobot(uid types.UID)    { l.path.ForgetRobot(uid) }
func (l *listedPath[T, A]) tracked(sizes map[string]int) { l.path.Tracked(sizes, l.written) }
func (l *listedPath[T, A]) hasSynced() bool              { return l.synced() }

// missing is a kind whose API the cluster lacks, or the operator was not
// given: a Robot that wants one is told err, and nothing else is done.
type missing struct {
	wants func(robot *robotv1beta1.Robot) bool
	err   error
}

func (m missing) sync(_ context.Context, robot *robotv1beta1.Robot, _ *Objects) error {
	if m.wants(robot) {
		return m.err
	}
	return nil
}

func (missing) own(*robotv1beta1.Robot, *Objects) {}
func (missing) forgetRobot(types.UID)             {}
func (missing) tracked(map[string]int)            {}
func (missing) hasSynced() bool                   { return true }
