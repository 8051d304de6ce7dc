package owned

import (
	"cmp"
	"context"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions/apis/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// Sources are the clients and informers of the kinds a Robot owns. The
// informers should hold only the objects labelled as managed by the
// operator.
type Sources struct {
	Kube        kubernetes.Interface
	Deployments appsinformers.DeploymentInformer
	Services    coreinformers.ServiceInformer
	// Policy is what the administrator allows Robots to ask for.
	Policy policy.Policy
	// DisruptionBudgets, when set, gives each Robot the budget it asks
	// for. The operator always sets it; without it (in tests) no budget is
	// written.
	DisruptionBudgets policyinformers.PodDisruptionBudgetInformer
	// Routes and Gateway, when set with RoutesFound, cache and write the
	// HTTPRoutes, once RoutesFound says the Gateway API is there. Without
	// them, a Robot that asks for a route says the cluster has no Gateway
	// API.
	Routes      gatewayinformers.HTTPRouteInformer
	Gateway     gatewayclient.Interface
	RoutesFound *Discovery
	// Gateways, when set with GatewaysFound, is a metadata informer of the
	// Gateways (of Namespace, "" for all), which GatewaysFound says is
	// started and synced: the status names a route's Gateway that does not
	// exist. Without them, it never does.
	Gateways      cache.SharedIndexInformer
	GatewaysFound *Discovery
	Namespace     string
}

// Paths are the paths of every kind a Robot owns.
type Paths struct {
	// Deployments and Services are the paths of the kinds every Robot
	// may own, in kinds too.
	Deployments *DeploymentPath
	Services    *ServicePath
	// kinds are the paths of every kind, in the order they are synced:
	// the Deployment first. NewPaths alone builds it; whatever runs every
	// kind ranges over it.
	kinds []ownedKind
	// gateways is nil without its Sources.
	gateways *Gateways
	deps     Deps
}

// Objects are what a Robot owns that its status reports on; nil where it
// has none it controls.
type Objects struct {
	Deployment       *appsv1.Deployment
	Service          *corev1.Service
	DisruptionBudget *policyv1.PodDisruptionBudget
	Route            *gatewayv1.HTTPRoute
}

// NewPaths returns the paths of every kind of sources, and registers their
// event handlers.
func NewPaths(deps Deps, sources Sources) (*Paths, error) {
	p := &Paths{deps: deps}
	var err error
	if p.Deployments, err = Deployments(deps, sources.Deployments, sources.Kube, sources.Policy); err != nil {
		return nil, err
	}
	p.kinds = append(p.kinds, listed(p.Deployments, sources.Deployments.Informer().HasSynced, "written_deployments",
		func(objects *Objects, deployment *appsv1.Deployment) { objects.Deployment = deployment }))
	if p.Services, err = Services(deps, sources.Services, sources.Kube, sources.Policy); err != nil {
		return nil, err
	}
	p.kinds = append(p.kinds, listed(p.Services, sources.Services.Informer().HasSynced, "written_services",
		func(objects *Objects, service *corev1.Service) { objects.Service = service }))
	if sources.DisruptionBudgets != nil {
		budgets, err := DisruptionBudgets(deps, sources.DisruptionBudgets, sources.Kube, sources.Policy)
		if err != nil {
			return nil, err
		}
		kind := listed(budgets, sources.DisruptionBudgets.Informer().HasSynced, "written_disruption_budgets",
			func(objects *Objects, budget *policyv1.PodDisruptionBudget) { objects.DisruptionBudget = budget })
		// A Robot the policy refuses a budget is told so after the path
		// ran, so that the budget the operator made is deleted all the same.
		kind.refuse = sources.Policy.RefusesDisruptionBudget
		p.kinds = append(p.kinds, kind)
	}
	if sources.RoutesFound != nil {
		routes, err := Routes(deps, sources.Routes, sources.Gateway, sources.RoutesFound, sources.Policy)
		if err != nil {
			return nil, err
		}
		// The Robots that said the cluster has no Gateway API sync again
		// once it has.
		sources.RoutesFound.OnAvailable(p.enqueueRouteRobots)
		// No Robot syncs before discovery has answered once, so that none
		// is told the cluster has no Gateway API when it was not looked
		// for. The routes' cache is waited for before discovery says they
		// are there.
		p.kinds = append(p.kinds, listed(routes, sources.RoutesFound.Answered, "written_routes",
			func(objects *Objects, route *gatewayv1.HTTPRoute) { objects.Route = route }))
	} else {
		p.kinds = append(p.kinds, missing{wants: workload.WantsRoute, err: outcome.ErrGatewayAPIMissing})
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
// synced, and discovery has answered once whether the Gateway API is
// there: all of them, none left out.
func (p *Paths) HasSynced() bool {
	for _, kind := range p.kinds {
		if !kind.hasSynced() {
			return false
		}
	}
	return true
}

// Sync takes each object robot owns through its path: the Deployment first,
// then, once it is as asked, the objects beside it, each whatever became of
// the others. It returns them for the status, and the first error.
func (p *Paths) Sync(ctx context.Context, robot *robotv1beta1.Robot) (Objects, error) {
	var objects Objects
	first, beside := p.kinds[0], p.kinds[1:]
	if err := first.sync(ctx, robot, &objects); err != nil {
		for _, kind := range beside {
			kind.own(robot, &objects)
		}
		return objects, err
	}
	var err error
	for _, kind := range beside {
		err = cmp.Or(err, kind.sync(ctx, robot, &objects))
	}
	return objects, err
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
}

// Tracked adds the sizes of what the paths keep per object to sizes, by
// the names the robot_operator_tracked_objects gauge gives them.
func (p *Paths) Tracked(sizes map[string]int) {
	for _, kind := range p.kinds {
		kind.tracked(sizes)
	}
}

// enqueueRouteRobots queues every Robot that asks for an HTTPRoute.
func (p *Paths) enqueueRouteRobots() {
	robots, err := p.deps.Robots.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, robot := range robots {
		if workload.WantsRoute(robot) {
			p.deps.Enqueue(cache.MetaObjectToName(robot))
		}
	}
}
