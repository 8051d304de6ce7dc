package owned

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// historyKindName is the history's name in the list of kinds.
const historyKindName = "ControllerRevision"

// History keeps a bounded history of each Robot's specs: the
// ControllerRevisions the Robot controls, one per spec it had, numbered in
// the order it had them (workload.PlanRevisions). Unlike the other kinds,
// a Robot owns several, and none is ever changed but for its number: it is
// written by create, renumber and delete, not by apply.
type History struct {
	kube kubernetes.Interface
	// revisions is the revisions' cache, indexed by their controller's UID
	// (revisionsByController): a sync reads a Robot's own revisions, not
	// every one of its namespace.
	revisions cache.Indexer
	synced    cache.InformerSynced
	// limit is how many revisions each Robot keeps.
	limit int

	// specs holds, per Robot, the spec of a revision read from the API
	// server (the cache keeps none), for the generation that read it:
	// a Robot that stays not Ready reads it once.
	specsLock sync.Mutex
	specs     map[types.UID]revisionSpec

	// made holds, per Robot, the revision its sync last created (its
	// metadata), until the cache holds it: a sync before then, the report
	// of the Robot's rollout most often, takes it for the cache's instead
	// of creating it again to be told 409.
	madeLock sync.Mutex
	made     map[types.UID]*appsv1.ControllerRevision
}

// revisionSpec is the spec a Robot's revision holds, read for a
// generation of the Robot; nil when the revision is gone.
type revisionSpec struct {
	generation int64
	name       string
	spec       *robotv1beta1.RobotSpec
}

// NewHistory returns the history of the Robots' specs, cached by informer
// (which should hold only the revisions the operator manages) and written
// through kube, keeping limit revisions per Robot. A Robot whose revision
// is deleted is queued, so that its current one comes back.
func NewHistory(deps Deps, informer appsinformers.ControllerRevisionInformer, kube kubernetes.Interface, limit int) (*History, error) {
	if err := addRevisionsIndex(informer.Informer()); err != nil {
		return nil, err
	}
	_, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			object, ok := obj.(metav1.Object)
			if !ok {
				return
			}
			if ref := metav1.GetControllerOfNoCopy(object); ref != nil && ref.Kind == "Robot" {
				deps.Enqueue(cache.ObjectName{Namespace: object.GetNamespace(), Name: ref.Name})
			}
		},
	})
	if err != nil {
		return nil, err
	}
	return &History{kube: kube, revisions: informer.Informer().GetIndexer(), synced: informer.Informer().HasSynced, limit: limit,
		specs: map[types.UID]revisionSpec{}}, nil
}

// Spec returns the spec that robot's revision name holds, nil when the
// Robot has no such revision (pruned, or deleted by someone). The cache
// keeps the revisions' metadata alone: the revision is read from the API
// server, once per generation of the Robot.
func (h *History) Spec(ctx context.Context, robot *robotv1beta1.Robot, name string) (*robotv1beta1.RobotSpec, error) {
	h.specsLock.Lock()
	known, ok := h.specs[robot.UID]
	h.specsLock.Unlock()
	if ok && known.generation == robot.Generation && known.name == name {
		return known.spec, nil
	}
	revision, err := h.kube.AppsV1().ControllerRevisions(robot.Namespace).Get(ctx, name, metav1.GetOptions{})
	var spec *robotv1beta1.RobotSpec
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, err
	case metav1.IsControlledBy(revision, robot):
		spec = &robotv1beta1.RobotSpec{}
		if err := json.Unmarshal(revision.Data.Raw, spec); err != nil {
			return nil, fmt.Errorf("ControllerRevision %s: %w", name, err)
		}
	}
	h.specsLock.Lock()
	defer h.specsLock.Unlock()
	h.specs[robot.UID] = revisionSpec{generation: robot.Generation, name: name, spec: spec}
	return spec, nil
}

// Revisions returns the revisions robot controls, as the cache holds
// them, oldest first.
func (h *History) Revisions(robot *robotv1beta1.Robot) ([]*appsv1.ControllerRevision, error) {
	listed, err := h.revisions.ByIndex(revisionsByController, string(robot.UID))
	if err != nil {
		return nil, err
	}
	var revisions []*appsv1.ControllerRevision
	for _, obj := range listed {
		// The UID is the Robot's: the namespace and the controller's kind
		// are checked all the same, as a label selector and
		// metav1.IsControlledBy would.
		if revision, ok := obj.(*appsv1.ControllerRevision); ok && revision.Namespace == robot.Namespace &&
			revision.Labels[workload.LabelRobot] == robot.Name && metav1.IsControlledBy(revision, robot) {
			revisions = append(revisions, revision)
		}
	}
	return workload.SortRevisions(revisions), nil
}

// revisionsByController indexes the revisions by the UID of their
// controller.
const revisionsByController = "controller"

// addRevisionsIndex adds the revisionsByController index to informer, once:
// the informer is shared.
func addRevisionsIndex(informer cache.SharedIndexInformer) error {
	if _, ok := informer.GetIndexer().GetIndexers()[revisionsByController]; ok {
		return nil
	}
	return informer.AddIndexers(cache.Indexers{revisionsByController: func(obj any) ([]string, error) {
		object, ok := obj.(metav1.Object)
		if !ok {
			return nil, nil
		}
		if ref := metav1.GetControllerOfNoCopy(object); ref != nil {
			return []string{string(ref.UID)}, nil
		}
		return nil, nil
	}})
}

// Sync brings robot's history to its current spec, and returns its current
// revision. A Robot whose history is its spec's sends no request.
func (h *History) Sync(ctx context.Context, robot *robotv1beta1.Robot) (*appsv1.ControllerRevision, error) {
	if robot.DeletionTimestamp != nil {
		return nil, nil
	}
	existing, err := h.Revisions(robot)
	if err != nil {
		return nil, err
	}
	existing = h.withMade(robot.UID, existing)
	plan, err := workload.PlanRevisions(robot, existing, h.limit)
	if err != nil {
		return nil, err
	}
	client := h.kube.AppsV1().ControllerRevisions(robot.Namespace)
	current := plan.Current
	switch {
	case plan.Create != nil:
		created, err := client.Create(ctx, plan.Create, metav1.CreateOptions{FieldManager: workload.FieldManager})
		// The cache may not hold yet the revision a sync just made: its
		// name is its data's hash, so the one there is the same.
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		if err == nil {
			current = created
			h.remember(robot.UID, created)
		}
	case plan.Renumber != nil:
		if current, err = client.Update(ctx, plan.Renumber, metav1.UpdateOptions{FieldManager: workload.FieldManager}); err != nil {
			return nil, err
		}
	}
	var errs []error
	for _, name := range plan.Delete {
		if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return current, errors.Join(errs...)
}

// withMade returns existing, the revisions of the Robot uid in the cache,
// with the one its sync last created when the cache does not hold it yet;
// it forgets that one once the cache does.
func (h *History) withMade(uid types.UID, existing []*appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	h.madeLock.Lock()
	defer h.madeLock.Unlock()
	made, ok := h.made[uid]
	if !ok {
		return existing
	}
	for _, revision := range existing {
		if revision.Name == made.Name {
			delete(h.made, uid)
			return existing
		}
	}
	return workload.SortRevisions(append(slices.Clone(existing), made))
}

// remember keeps the metadata of created, the Robot uid's new revision,
// until the cache holds it (withMade).
func (h *History) remember(uid types.UID, created *appsv1.ControllerRevision) {
	made := created.DeepCopy()
	made.Data = runtime.RawExtension{}
	h.madeLock.Lock()
	defer h.madeLock.Unlock()
	if h.made == nil {
		h.made = map[types.UID]*appsv1.ControllerRevision{}
	}
	h.made[uid] = made
}

// Current returns robot's newest revision as the cache holds it: nil
// when it has none.
func (h *History) Current(robot *robotv1beta1.Robot) *appsv1.ControllerRevision {
	revisions, err := h.Revisions(robot)
	if err != nil || len(revisions) == 0 {
		return nil
	}
	return revisions[len(revisions)-1]
}

// historyEntry is the history in Paths' list.
type historyEntry struct{ history *History }

func (e historyEntry) sync(ctx context.Context, robot *robotv1beta1.Robot, objects *Objects) error {
	current, err := e.history.Sync(ctx, robot)
	objects.set(historyKindName, current)
	return err
}

func (e historyEntry) own(robot *robotv1beta1.Robot, objects *Objects) {
	objects.set(historyKindName, e.history.Current(robot))
}

// The history is synced even when the Deployment's path failed.
func (historyEntry) recordsSpec() {}

func (e historyEntry) forgetRobot(uid types.UID) {
	e.history.forgetSpec(uid)
	e.history.forgetMade(uid)
}

// forgetSpec drops the spec read for the Robot uid, if any.
func (h *History) forgetSpec(uid types.UID) {
	h.specsLock.Lock()
	defer h.specsLock.Unlock()
	delete(h.specs, uid)
}

// forgetMade drops the revision the Robot uid's sync made, if the cache
// does not hold it yet.
func (h *History) forgetMade(uid types.UID) {
	h.madeLock.Lock()
	defer h.madeLock.Unlock()
	delete(h.made, uid)
}

func (e historyEntry) tracked(sizes map[string]int) {
	e.history.specsLock.Lock()
	defer e.history.specsLock.Unlock()
	sizes["revision_specs"] = len(e.history.specs)
}

func (e historyEntry) hasSynced() bool { return e.history.synced() }

// listHistory is the history's entry in the list of kinds.
func listHistory(p *Paths, sources Sources) (ownedKind, error) {
	informer := sources.KubeInformers.Apps().V1().ControllerRevisions()
	history, err := NewHistory(p.deps, informer, sources.Kube, sources.Policy.RevisionLimit())
	if err != nil {
		return nil, err
	}
	p.history = history
	return historyEntry{history}, nil
}

// RevisionSpec returns the spec that robot's revision name holds
// (History.Spec): nil when the paths keep no history, or the Robot has no
// such revision.
func (p *Paths) RevisionSpec(ctx context.Context, robot *robotv1beta1.Robot, name string) (*robotv1beta1.RobotSpec, error) {
	if p.history == nil {
		return nil, nil
	}
	return p.history.Spec(ctx, robot, name)
}

// ForgetRevisionSpec drops the spec RevisionSpec read for the Robot uid,
// once the Robot has nothing to explain: it is kept only while needed.
func (p *Paths) ForgetRevisionSpec(uid types.UID) {
	if p.history != nil {
		p.history.forgetSpec(uid)
	}
}

// Revision returns the Robot's current ControllerRevision: nil when it has
// none.
func (o Objects) Revision() *appsv1.ControllerRevision {
	return objectOf[*appsv1.ControllerRevision](o, historyKindName)
}
