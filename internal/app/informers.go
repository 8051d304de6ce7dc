package app

import (
	"sync"

	"github.com/robot-operator/robot-operator/internal/owned"
	"github.com/robot-operator/robot-operator/internal/podsummary"
	"github.com/robot-operator/robot-operator/internal/transform"
	"github.com/robot-operator/robot-operator/internal/workload"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	robotinformers "github.com/robot-operator/robot-operator/pkg/generated/informers/externalversions"
)

// informers are the operator's informer factories.
type informers struct {
	// kube holds the managed objects of the built-in kinds a Robot owns.
	kube kubeinformers.SharedInformerFactory
	// pods holds the summaries of the managed pods and ReplicaSets.
	pods   kubeinformers.SharedInformerFactory
	robots robotinformers.SharedInformerFactory
	// gateway holds the managed objects of the Gateway API's kinds, each
	// started once its CRD is found (watchOptionalAPIs), which apis then
	// says.
	gateway gatewayinformers.SharedInformerFactory
	apis    *owned.APIs
	// gateways holds the Gateways' metadata; started once their CRD is
	// found (watchGateways), which gatewaysFound then says.
	gateways      cache.SharedIndexInformer
	gatewaysFound *owned.Discovery
	namespace     string
	// newerFields is the Robot informer's transform, which remembers the
	// Robots holding fields this release does not know.
	newerFields *transform.NewerFields
	// configMaps and secrets hold the metadata of the ConfigMaps and the
	// Secrets (watchConfig); nil where the operator may not watch them.
	// running waits for them to stop.
	configMaps cache.SharedIndexInformer
	secrets    cache.SharedIndexInformer
	running    sync.WaitGroup
}

// newInformers builds the informer factories; they start nothing yet.
func newInformers(opts Options, c *clients) *informers {
	managed := func(o *metav1.ListOptions) {
		o.LabelSelector = labels.SelectorFromSet(labels.Set{workload.LabelManagedBy: workload.LabelManagedByValue}).String()
	}
	// A Robot's managedFields are dropped, once they were read for the
	// fields this release does not know.
	newerFields := &transform.NewerFields{}
	robotFactory := robotinformers.NewSharedInformerFactoryWithOptions(c.robots, opts.ResyncPeriod,
		robotinformers.WithNamespace(opts.Namespace),
		robotinformers.WithTransform(newerFields.Transform))
	robotLister := robotFactory.Robot().V1beta1().Robots().Lister()
	// The Robots that roll on config changes, by the config they read: a
	// change of it queues them.
	if err := robotFactory.Robot().V1beta1().Robots().Informer().AddIndexers(cache.Indexers{owned.ConfigIndex: owned.ConfigIndexFunc}); err != nil {
		// Only a started informer refuses an index.
		utilruntime.HandleError(err)
	}
	robots := func(namespace, name string) (*robotv1beta1.Robot, bool) {
		robot, err := robotLister.Robots(namespace).Get(name)
		return robot, err == nil
	}
	return &informers{
		// Only the objects the operator manages are cached, so memory follows the Robots, not
		// the cluster: those a Robot controls whole but for the little of
		// their managedFields the controller reads, any other with the
		// label as a stub (transform.Workloads).
		kube: kubeinformers.NewSharedInformerFactoryWithOptions(c.kube, opts.ResyncPeriod,
			kubeinformers.WithNamespace(opts.Namespace),
			kubeinformers.WithTweakListOptions(managed),
			kubeinformers.WithTransform(transform.Workloads(robots))),
		// The pods and ReplicaSets of those Deployments, by the same label
		// (a ReplicaSet has its pod template's labels), summarized to what
		// says why the pods of each Deployment's current ReplicaSet do not
		// run (internal/podsummary, read by internal/status). No resync: the Robots' own resync
		// rechecks them.
		pods: kubeinformers.NewSharedInformerFactoryWithOptions(c.kube, 0,
			kubeinformers.WithNamespace(opts.Namespace),
			kubeinformers.WithTweakListOptions(managed),
			kubeinformers.WithTransform(podsummary.Summarize)),
		gateway: gatewayinformers.NewSharedInformerFactoryWithOptions(c.gateway, opts.ResyncPeriod,
			gatewayinformers.WithNamespace(opts.Namespace),
			gatewayinformers.WithTweakListOptions(managed),
			gatewayinformers.WithTransform(transform.Workloads(robots))),
		apis:          &owned.APIs{},
		gateways:      gatewaysInformer(c, opts.Namespace),
		gatewaysFound: &owned.Discovery{},
		namespace:     opts.Namespace,
		robots:        robotFactory,
		newerFields:   newerFields,
	}
}

// gatewaysInformer returns the informer of the metadata of the Gateways of
// namespace ("" for all), each kept as its name alone
// (owned.GatewayMetadata): whether a Gateway exists is all it is asked.
func gatewaysInformer(c *clients, namespace string) cache.SharedIndexInformer {
	informer := metadatainformer.NewFilteredMetadataInformer(c.metadata, gatewayv1.SchemeGroupVersion.WithResource("gateways"), namespace, 0,
		cache.Indexers{}, nil).Informer()
	if err := informer.SetTransform(owned.GatewayMetadata); err != nil {
		// Only a started informer refuses a transform: the Gateways'
		// metadata would be cached whole, which costs memory, not truth.
		utilruntime.HandleError(err)
	}
	return informer
}

// owned returns the sources of the kinds a Robot owns: each kind picks its
// informer from the factories.
func (i *informers) owned(c *clients) owned.Sources {
	return owned.Sources{
		Kube:             c.kube,
		KubeInformers:    i.kube,
		Gateway:          c.gateway,
		GatewayInformers: i.gateway,
		APIs:             i.apis,
		Gateways:         i.gateways,
		GatewaysFound:    i.gatewaysFound,
		Namespace:        i.namespace,
		ConfigMaps:       i.configMaps,
		Secrets:          i.secrets,
		RobotIndexer:     i.robots.Robot().V1beta1().Robots().Informer().GetIndexer(),
		PreflightClient:  c.preflight,
	}
}

// start starts the informers the Controller asked for, until stop closes:
// the Robots' and the pods' at once, and those of the kinds a Robot owns
// once the Robot cache has synced, since their transform asks it
// whose each object is (transform.Workloads). It does not wait: the Robot
// cache may need the conversion webhook, whose certificate comes from an
// upkeep that starts after.
func (i *informers) start(stop <-chan struct{}) {
	i.robots.Start(stop)
	i.pods.Start(stop)
	for _, informer := range []cache.SharedIndexInformer{i.configMaps, i.secrets} {
		if informer != nil {
			i.running.Go(func() { informer.Run(stop) })
		}
	}
	go func() {
		if i.waitForRobots(stop) {
			i.kube.Start(stop)
		}
	}()
}

// waitForRobots waits until the Robot cache has synced, and says whether
// it has (false: stop closed first).
func (i *informers) waitForRobots(stop <-chan struct{}) bool {
	for _, synced := range i.robots.WaitForCacheSync(stop) {
		if !synced {
			return false
		}
	}
	return true
}

// shutdown waits for the informers to stop, once their stop channel has
// closed.
func (i *informers) shutdown() {
	i.kube.Shutdown()
	i.pods.Shutdown()
	i.robots.Shutdown()
	i.gateway.Shutdown()
	i.running.Wait()
}
