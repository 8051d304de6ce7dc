package app

import (
	"github.com/robot-operator/robot-operator/internal/podsummary"
	"github.com/robot-operator/robot-operator/internal/transform"
	"github.com/robot-operator/robot-operator/internal/workload"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubeinformers "k8s.io/client-go/informers"

	robotinformers "github.com/robot-operator/robot-operator/pkg/generated/informers/externalversions"
)

// informers are the operator's informer factories.
type informers struct {
	// kube holds the managed Deployments and Services.
	kube kubeinformers.SharedInformerFactory
	// pods holds the summaries of the managed pods and ReplicaSets.
	pods   kubeinformers.SharedInformerFactory
	robots robotinformers.SharedInformerFactory
}

// newInformers builds the informer factories; they start nothing yet.
func newInformers(opts Options, c *clients) *informers {
	managed := func(o *metav1.ListOptions) {
		o.LabelSelector = labels.SelectorFromSet(labels.Set{workload.LabelManagedBy: workload.LabelManagedByValue}).String()
	}
	return &informers{
		// Only the Deployments, Services and PodDisruptionBudgets the
		// operator manages are cached, so memory follows the Robots, not
		// the cluster: those a Robot controls whole but for the little of
		// their managedFields the controller reads, any other with the
		// label as a stub (transform.Workloads).
		kube: kubeinformers.NewSharedInformerFactoryWithOptions(c.kube, opts.ResyncPeriod,
			kubeinformers.WithNamespace(opts.Namespace),
			kubeinformers.WithTweakListOptions(managed),
			kubeinformers.WithTransform(transform.Workloads)),
		// The pods and ReplicaSets of those Deployments, by the same label
		// (a ReplicaSet has its pod template's labels), summarized to what
		// says why the pods of each Deployment's current ReplicaSet do not
		// run (internal/podsummary, read by internal/status). No resync: the Robots' own resync
		// rechecks them.
		pods: kubeinformers.NewSharedInformerFactoryWithOptions(c.kube, 0,
			kubeinformers.WithNamespace(opts.Namespace),
			kubeinformers.WithTweakListOptions(managed),
			kubeinformers.WithTransform(podsummary.Summarize)),
		// A Robot's managedFields are never read, and dropped.
		robots: robotinformers.NewSharedInformerFactoryWithOptions(c.robots, opts.ResyncPeriod,
			robotinformers.WithNamespace(opts.Namespace),
			robotinformers.WithTransform(transform.StripManagedFields)),
	}
}

// start starts the informers the Controller asked for, until stop closes.
func (i *informers) start(stop <-chan struct{}) {
	i.kube.Start(stop)
	i.pods.Start(stop)
	i.robots.Start(stop)
}

// shutdown waits for the informers to stop, once their stop channel has
// closed.
func (i *informers) shutdown() {
	i.kube.Shutdown()
	i.pods.Shutdown()
	i.robots.Shutdown()
}
