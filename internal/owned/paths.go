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
	Deployments *DeploymentPath
	Services    *ServicePath
	// budgets and routes are nil without their Sources.
	budgets *DisruptionBudgetPath
	routes  *RoutePath
	// gateways is nil without its Sources.
	gateways *Gateways
	// policy says which budgets a Robot is refused.
	policy policy.Policy
	deps   Deps
	// synced are what HasSynced waits for, every one of them: each kind's
	// cache, and discovery's first answer for an optional kind.
	synced []cache.InformerSynced
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
	p := &Paths{deps: deps, policy: sources.Policy}
	var err error
	if p.Deployments, err = Deployments(deps, sources.Deployments, sources.Kube, sources.Policy); err != nil {
		return nil, err
	}
	if p.Services, err = Services(deps, sources.Services, sources.Kube, sources.Policy); err != nil {
		return nil, err
	}
	p.synced = append(p.synced, sources.Deployments.Informer().HasSynced, sources.Services.Informer().HasSynced)
	if sources.DisruptionBudgets != nil {
		if p.budgets, err = DisruptionBudgets(deps, sources.DisruptionBudgets, sources.Kube, sources.Policy); err != nil {
			return nil, err
		}
		p.synced = append(p.synced, sources.DisruptionBudgets.Informer().HasSynced)
	}
	if sources.RoutesFound != nil {
		if p.routes, err = Routes(deps, sources.Routes, sources.Gateway, sources.RoutesFound, sources.Policy); err != nil {
			return nil, err
		}
		// The Robots that said the cluster has no Gateway API sync again
		// once it has.
		sources.RoutesFound.OnAvailable(p.enqueueRouteRobots)
		// No Robot syncs before discovery has answered once, so that none
		// is told the cluster has no Gateway API when it was not looked for.
		p.synced = append(p.synced, sources.RoutesFound.Answered)
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
// there: all of them, none left out. The routes' cache is waited for
// before discovery says they are.
func (p *Paths) HasSynced() bool {
	for _, synced := range p.synced {
		if !synced() {
			return false
		}
	}
	return true
}

// Sync takes each object robot owns through its path: the Deployment first,
// then, once it is as asked, the objects beside it, each whatever became of
// the others. It returns them for the status, and the first error.
func (p *Paths) Sync(ctx context.Context, robot *robotv1beta1.Robot) (Objects, error) {
	deployment, err := p.Deployments.Sync(ctx, robot)
	if err != nil {
		objects := p.Own(robot)
		objects.Deployment = deployment
		return objects, err
	}
	objects := Objects{Deployment: deployment}
	objects.Service, err = p.Services.Sync(ctx, robot)
	if p.budgets != nil {
		var budgetErr error
		objects.DisruptionBudget, budgetErr = p.budgets.Sync(ctx, robot)
		if err == nil {
			err = cmp.Or(budgetErr, p.policy.RefusesDisruptionBudget(robot))
		}
	}
	var routeErr error
	switch {
	case p.routes != nil:
		objects.Route, routeErr = p.routes.Sync(ctx, robot)
	case workload.WantsRoute(robot):
		routeErr = outcome.ErrGatewayAPIMissing
	}
	if err == nil {
		err = routeErr
	}
	return objects, err
}

// Own returns what robot owns as the caches hold it, for a Robot whose
// objects are not synced.
func (p *Paths) Own(robot *robotv1beta1.Robot) Objects {
	objects := Objects{Deployment: p.Deployments.Own(robot), Service: p.Services.Own(robot)}
	if p.budgets != nil {
		objects.DisruptionBudget = p.budgets.Own(robot)
	}
	if p.routes != nil {
		objects.Route = p.routes.Own(robot)
	}
	return objects
}

// ForgetRobot drops what the paths remember of the Robot uid, deleted.
func (p *Paths) ForgetRobot(uid types.UID) {
	p.Deployments.ForgetRobot(uid)
	p.Services.ForgetRobot(uid)
	if p.budgets != nil {
		p.budgets.ForgetRobot(uid)
	}
	if p.routes != nil {
		p.routes.ForgetRobot(uid)
	}
}

// Tracked adds the sizes of what the paths keep per object to sizes, by
// the names the robot_operator_tracked_objects gauge gives them.
func (p *Paths) Tracked(sizes map[string]int) {
	p.Deployments.Tracked(sizes, "written_deployments")
	p.Services.Tracked(sizes, "written_services")
	if p.budgets != nil {
		p.budgets.Tracked(sizes, "written_disruption_budgets")
	}
	if p.routes != nil {
		p.routes.Tracked(sizes, "written_routes")
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
