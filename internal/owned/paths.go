package owned

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/robot-operator/robot-operator/internal/fleet"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/preflight"
	"github.com/robot-operator/robot-operator/internal/transform"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// Sources are the clients and informer factories of the kinds a Robot
// owns: each kind picks its own informer from its factory. The informers
// should hold only the objects labelled as managed by the operator.
type Sources struct {
	// Kube and KubeInformers write and cache the built-in kinds.
	Kube          kubernetes.Interface
	KubeInformers kubeinformers.SharedInformerFactory
	// Policy is what the administrator allows Robots to ask for.
	Policy policy.Policy
	// NewerFields, when set, says which Robots hold fields this release
	// does not know: nothing is written to what those Robots own.
	NewerFields *transform.NewerFields
	// Gateway and GatewayInformers write and cache the Gateway API's
	// kinds, once APIs has found them. Without them, or without APIs, a
	// Robot that asks for one of those says the cluster has no Gateway
	// API.
	Gateway          gatewayclient.Interface
	GatewayInformers gatewayinformers.SharedInformerFactory
	// APIs is where the kinds whose API may be missing (Kind.Optional)
	// hand their CRDs to discovery, and learn whether they are there.
	APIs *APIs
	// Gateways, when set with GatewaysFound, is a metadata informer of the
	// Gateways (of Namespace, "" for all), which GatewaysFound says is
	// started and synced: the status names a route's Gateway that does not
	// exist. Without them, it never does.
	Gateways      cache.SharedIndexInformer
	GatewaysFound *Discovery
	Namespace     string
	// ConfigMaps and Secrets, when set, are metadata informers of the
	// ConfigMaps and Secrets (of Namespace, "" for all), each cached with
	// transform.ObjectMetadata; nil where the operator may not watch the
	// kind. RobotIndexer is the Robot cache's indexer, with ConfigIndex
	// (ConfigIndexFunc). Without RobotIndexer no Robot rolls on config
	// changes (Config).
	ConfigMaps   cache.SharedIndexInformer
	Secrets      cache.SharedIndexInformer
	RobotIndexer cache.Indexer
	// PreflightClient, when set with Policy.Preflight, checks a Robot's
	// changed pod template before the Deployment is written
	// (internal/preflight). It should have no rate limiter of its own:
	// the checks have their own. PreflightCount is called with each
	// check's outcome.
	PreflightClient kubernetes.Interface
	PreflightCount  func(outcome string)
	// Fleet, when set, is the fleet budget: how many Robots at a time
	// roll a change of their Deployment's pod template that does not come
	// from their own spec. Without it, every change goes through at once.
	Fleet *fleet.Budget
	// Without names kinds (by Kind.Name) that the paths leave out, as if
	// the operator knew none of them: for tests of the other kinds.
	Without []string
}

// Paths are the paths of every kind a Robot owns.
type Paths struct {
	// Deployments and Services are the paths of the kinds every Robot
	// may own, in kinds too.
	Deployments *DeploymentPath
	Services    *ServicePath
	// kinds are the paths of every kind, in the order they are synced:
	// the Deployment first. NewPaths alone builds it, from the list of
	// kinds; whatever runs every kind ranges over it.
	kinds []ownedKind
	// history is nil when the paths keep no history (Sources.Without).
	history *History
	// gateways is nil without its Sources.
	gateways *Gateways
	// config is nil without a RobotIndexer in the Sources.
	config *Config
	// newerFields is nil without its Sources: no Robot holds such fields.
	newerFields *transform.NewerFields
	// preflight checks the Deployment's changed pod templates; nil when
	// off.
	preflight *preflight.Checker
	// fleet is nil without its Sources: nothing is held.
	fleet *fleet.Budget
	// deploymentList lists the cached Deployments, for RebuildFleet.
	deploymentList appslisters.DeploymentLister
	deps           Deps
}

// NewPaths returns the paths of every kind of sources, and registers their
// event handlers.
func NewPaths(deps Deps, sources Sources) (*Paths, error) {
	p := &Paths{deps: deps, newerFields: sources.NewerFields, fleet: sources.Fleet}
	// Before the kinds: the Deployment's desired object reads it.
	var err error
	if p.config, err = NewConfig(deps, sources.RobotIndexer, sources.ConfigMaps, sources.Secrets, p.ConfigMapChanged); err != nil {
		return nil, err
	}
	for _, entry := range kinds {
		if slices.Contains(sources.Without, entry.name) {
			continue
		}
		kind, err := entry.list(p, sources)
		if err != nil {
			return nil, err
		}
		p.kinds = append(p.kinds, kind)
	}
	if p.Deployments == nil {
		return nil, errors.New("the Deployment's path is the first of every sync, and cannot be left out")
	}
	if sources.Gateways != nil && sources.GatewaysFound != nil {
		if p.gateways, err = NewGateways(deps, sources.Gateways, sources.Namespace, sources.GatewaysFound); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// GatewayExists reports whether the Gateway namespace/name exists; known is
// false while the operator cannot tell (Gateways.Exists).
func (p *Paths) GatewayExists(namespace, name string) (exists, known bool) {
	return p.gateways.Exists(namespace, name)
}

// HasSynced reports whether the cache of every kind always watched has
// synced, and discovery has answered once whether each optional kind is
// there: all of them, none left out; and the caches of the config that
// Robots' pods read, from which their Deployments' config digests come.
func (p *Paths) HasSynced() bool {
	if !p.config.HasSynced() {
		return false
	}
	for _, kind := range p.kinds {
		if !kind.hasSynced() {
			return false
		}
	}
	return true
}

// Sync takes each object robot owns through its path: the Deployment first,
// then, once it is as asked, the objects beside it, each whatever became of
// the others. A kind that records the Robot's spec (recorder) is synced
// even when the Deployment's path failed. It returns them for the status, and the first error. What a
// paused Robot owns, or one that holds fields this release does not know,
// gets no write: Sync returns it as the caches hold it, and the error that
// says why (held).
func (p *Paths) Sync(ctx context.Context, robot *robotv1beta1.Robot) (Objects, error) {
	if err := p.held(ctx, robot); err != nil {
		// A held Robot waits for no slot of the fleet budget (it takes its
		// place in line again once it is synced), and frees the one it
		// holds once its rollout is over, as any Robot.
		objects := p.Own(robot)
		p.fleet.Settle(robot.UID, false, fleet.RolloutDone(objects.Deployment))
		return objects, err
	}
	var objects Objects
	first, beside := p.kinds[0], p.kinds[1:]
	firstErr := first.sync(ctx, robot, &objects)
	var waiting *outcome.FleetBudgetError
	if errors.As(firstErr, &waiting) || firstErr == nil {
		// The Deployment is as the Robot's spec asks, or waits for the
		// fleet budget with nothing of the spec held: its slot frees once
		// its rollout is over, and the objects beside it are synced.
		p.fleet.Settle(robot.UID, waiting != nil, fleet.RolloutDone(objects.Deployment))
	} else {
		for _, kind := range beside {
			if _, records := kind.(recorder); records {
				firstErr = cmp.Or(firstErr, kind.sync(ctx, robot, &objects))
				continue
			}
			kind.own(robot, &objects)
		}
		return objects, firstErr
	}
	var err error
	for _, kind := range beside {
		err = cmp.Or(err, kind.sync(ctx, robot, &objects))
	}
	// The Deployment is kept all the same: its digest leaves out what the
	// operator may not watch, and the status says so.
	return objects, cmp.Or(err, firstErr, p.config.NotWatched(robot))
}

// RebuildFleet gives the Robots whose Deployments, as cached, still roll a
// change the fleet budget let through their slots back: a new leader's
// first act, before it syncs any Robot.
func (p *Paths) RebuildFleet() error {
	deployments, err := p.deploymentList.List(labels.Everything())
	if err != nil {
		return err
	}
	p.fleet.Rebuild(fleet.Holders(deployments))
	return nil
}

// Own returns what robot owns as the caches hold it, for a Robot whose
// objects are not synced.
func (p *Paths) Own(robot *robotv1beta1.Robot) Objects {
	var objects Objects
	for _, kind := range p.kinds {
		kind.own(robot, &objects)
	}
	return objects
}

// ForgetRobot drops what the paths remember of the Robot uid, deleted.
func (p *Paths) ForgetRobot(uid types.UID) {
	for _, kind := range p.kinds {
		kind.forgetRobot(uid)
	}
	p.fleet.Forget(uid)
}

// Tracked adds the sizes of what the paths keep per object to sizes, by
// the names the robot_operator_tracked_objects gauge gives them.
func (p *Paths) Tracked(sizes map[string]int) {
	for _, kind := range p.kinds {
		kind.tracked(sizes)
	}
}

// ConfigMapChanged queues the Robots whose change was refused because the
// ConfigMap namespace/name was missing or short of a key: their template is
// checked again.
func (p *Paths) ConfigMapChanged(namespace, name string) {
	for _, robot := range p.preflight.ConfigMapChanged(namespace, name) {
		p.deps.Enqueue(robot)
	}
}

// enqueueWanting queues every Robot that wants says asks for an object of
// a kind.
func (p *Paths) enqueueWanting(wants func(robot *robotv1beta1.Robot) bool) {
	robots, err := p.deps.Robots.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, robot := range robots {
		if wants(robot) {
			p.deps.Enqueue(cache.MetaObjectToName(robot))
		}
	}
}
