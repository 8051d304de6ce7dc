package owned

import (
	"cmp"

	"github.com/robot-operator/robot-operator/internal/workload"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
)

// Gateways says whether the Gateways that Robots' routes attach to exist,
// from a cache of the Gateways' metadata alone (no spec, no status: a
// Gateway is only ever asked whether it is there), started once the
// Gateway CRD is found. A route whose Gateway does not exist is never
// answered by any controller: the Robot says so (GatewayNotFound) rather
// than wait forever, and syncs again once the Gateway is made.
type Gateways struct {
	informer cache.SharedIndexInformer
	// namespace is the one namespace cached, "" for all: of another, the
	// cache cannot tell.
	namespace string
	// found says whether the Gateway CRD is there and the cache synced.
	found *Discovery
	deps  Deps
}

// NewGateways returns the Gateways cached by informer, a metadata informer
// of the Gateways of namespace ("" for all), which found says is started
// and synced; and registers its event handlers, which queue the Robots
// whose routes attach to a Gateway made or deleted.
func NewGateways(deps Deps, informer cache.SharedIndexInformer, namespace string, found *Discovery) (*Gateways, error) {
	g := &Gateways{informer: informer, namespace: namespace, found: found, deps: deps}
	// Only whether a Gateway is there matters: its updates say nothing.
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: g.changed, DeleteFunc: g.changed}); err != nil {
		return nil, err
	}
	// The Robots that waited on Gateways the cache could not tell of learn
	// now whether theirs exist.
	found.OnAvailable(g.enqueueRouteRobots)
	return g, nil
}

// Exists reports whether the Gateway namespace/name exists; known is false
// while the cache cannot tell (no Gateway CRD, the cache not synced yet, a
// namespace it does not hold).
func (g *Gateways) Exists(namespace, name string) (exists, known bool) {
	if g == nil || !g.found.Available() || (g.namespace != "" && namespace != g.namespace) {
		return false, false
	}
	_, exists, err := g.informer.GetIndexer().GetByKey(namespace + "/" + name)
	return exists, err == nil
}

// changed queues the Robots whose routes attach to the Gateway obj.
func (g *Gateways) changed(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	gateway, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	robots, err := g.deps.Robots.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, robot := range robots {
		if !workload.WantsRoute(robot) {
			continue
		}
		for _, ref := range robot.Spec.HTTP.Gateways {
			if ref.Name == gateway.GetName() && cmp.Or(ref.Namespace, robot.Namespace) == gateway.GetNamespace() {
				g.deps.Enqueue(cache.MetaObjectToName(robot))
				break
			}
		}
	}
}

// enqueueRouteRobots queues every Robot that asks for a route.
func (g *Gateways) enqueueRouteRobots() {
	robots, err := g.deps.Robots.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, robot := range robots {
		if workload.WantsRoute(robot) {
			g.deps.Enqueue(cache.MetaObjectToName(robot))
		}
	}
}

// GatewayMetadata is the transform of the Gateways' metadata informer: it
// keeps a Gateway's name, namespace and resourceVersion, all that Exists
// and the handlers read.
func GatewayMetadata(obj interface{}) (interface{}, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}}, nil
	}
	return obj, nil
}
