package app

import (
	"context"
	"sync"

	"github.com/robot-operator/robot-operator/internal/owned"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// gatewaysCRD is the CRD of the Gateway API's Gateways.
const gatewaysCRD = "gateways.gateway.networking.k8s.io"

// watchGateways watches the Gateway API's Gateway CRD, by name, as
// watchOptionalAPI watches an optional kind's. Once it is there, established
// and serving v1, it starts gateways, the informer of the Gateways'
// metadata, and once its cache has synced tells found; when the CRD goes,
// it tells found it is gone. A cluster with no Gateway CRD costs one watch
// of one CRD, and no failing list of Gateways. An operator that may not
// read them never has its cache synced: found never says it is there, and
// no Robot is told its Gateway is missing on a guess. It returns when ctx
// ends, and the informer with it.
func watchGateways(ctx context.Context, crds apiextensionsclient.Interface, gateways cache.SharedIndexInformer, found *owned.Discovery) {
	logger := klog.FromContext(ctx)
	factory := apiextensionsinformers.NewSharedInformerFactoryWithOptions(crds, 0,
		apiextensionsinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", gatewaysCRD).String()
		}))
	informer := factory.Apiextensions().V1().CustomResourceDefinitions().Informer()
	changed := make(chan bool, 1)
	seen := func(obj any) {
		select {
		case <-changed:
		default:
		}
		changed <- servesObject(obj, "v1")
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
		DeleteFunc: func(any) { seen(nil) },
	}); err != nil {
		logger.Error(err, "Watching for the Gateway API's Gateways")
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	var running sync.WaitGroup
	defer running.Wait()
	started := false
	for {
		var there bool
		select {
		case <-ctx.Done():
			return
		case there = <-changed:
		}
		if !there {
			if found.Available() {
				logger.Info("The Gateway CRD is gone: a missing Gateway is no longer told")
			}
			found.SetAvailable(false)
			continue
		}
		if !started {
			logger.Info("The Gateway CRD is installed: watching the Gateways' metadata")
			running.Go(func() { gateways.RunWithContext(ctx) })
			started = true
		}
		if !cache.WaitForCacheSync(ctx.Done(), gateways.HasSynced) {
			return
		}
		found.SetAvailable(true)
	}
}
