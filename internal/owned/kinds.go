package owned

import (
	"context"

	"github.com/robot-operator/robot-operator/internal/writer"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

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

// listedPath is a Path in Paths' list.
type listedPath[T writer.Object, A writer.ApplyConfiguration[A]] struct {
	path *Path[T, A]
	// synced reports whether the kind's cache has synced.
	synced cache.InformerSynced
	// written is the name of the kind's objects in the
	// robot_operator_tracked_objects gauge.
	written string
	// report puts the Robot's object where the status reads it.
	report func(objects *Objects, object T)
	// refuse, when set, returns why the Robot gets no object of the kind
	// although it asks for one, once the path has run.
	refuse func(robot *robotv1beta1.Robot) error
}

// listed returns path as an entry of Paths' list.
func listed[T writer.Object, A writer.ApplyConfiguration[A]](path *Path[T, A], synced cache.InformerSynced, written string,
	report func(*Objects, T)) *listedPath[T, A] {
	return &listedPath[T, A]{path: path, synced: synced, written: written, report: report}
}

func (l *listedPath[T, A]) sync(ctx context.Context, robot *robotv1beta1.Robot, objects *Objects) error {
	object, err := l.path.Sync(ctx, robot)
	l.report(objects, object)
	if err == nil && l.refuse != nil {
		err = l.refuse(robot)
	}
	return err
}

func (l *listedPath[T, A]) own(robot *robotv1beta1.Robot, objects *Objects) {
	l.report(objects, l.path.Own(robot))
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
