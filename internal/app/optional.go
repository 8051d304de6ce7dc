package app

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/robot-operator/robot-operator/internal/owned"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// watchOptionalAPIs watches the CRD of each optional kind's API (owned.APIs)
// until ctx ends (watchOptionalAPI).
func watchOptionalAPIs(ctx context.Context, crds apiextensionsclient.Interface, apis *owned.APIs) {
	var watches sync.WaitGroup
	for _, api := range apis.Watched() {
		watches.Go(func() { watchOptionalAPI(ctx, crds, api) })
	}
	watches.Wait()
}

// watchOptionalAPI watches the CRD of an optional kind's API, by name. Once
// it is there, established and serving the kind's version, it starts the
// kind's informer, and once its cache has synced tells api.Found; when the
// CRD goes, it tells api.Found it is gone (the informer stays, and catches
// up if it comes back). A cluster that installs the API after the operator
// started gets the kind with no restart, and one that never does costs one
// watch of one CRD. Its first answer, there or not, comes once the CRD's
// cache has synced: until then api.Found has not answered, and no Robot
// syncs. It returns when ctx ends, once the kind's informer has stopped.
func watchOptionalAPI(ctx context.Context, crds apiextensionsclient.Interface, api owned.OptionalAPI) {
	logger := klog.FromContext(ctx).WithValues("kind", api.Kind, "crd", api.CRD)
	found := api.Found
	factory := apiextensionsinformers.NewSharedInformerFactoryWithOptions(crds, 0,
		apiextensionsinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", api.CRD).String()
		}))
	informer := factory.Apiextensions().V1().CustomResourceDefinitions().Informer()
	changed := make(chan bool, 1)
	seen := func(obj any) {
		there := servesObject(obj, api.Version)
		select {
		case <-changed:
		default:
		}
		changed <- there
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
		DeleteFunc: func(any) { seen(nil) },
	}); err != nil {
		logger.Error(err, "Watching for an optional API")
		found.SetAvailable(false) // rather than hold the workers back forever
		return
	}
	// An operator that may not read the CRD or the kind's objects (its
	// RBAC lacks the rule) would wait for their cache forever: it answers
	// "not there", and the cache, still trying, says otherwise if it is
	// ever allowed.
	crdForbidden, kindForbidden := make(chan error, 1), make(chan error, 1)
	for _, watched := range []struct {
		informer  cache.SharedIndexInformer
		forbidden chan error
	}{{informer, crdForbidden}, {api.Informer, kindForbidden}} {
		if err := watched.informer.SetWatchErrorHandlerWithContext(tellForbidden(watched.forbidden)); err != nil {
			logger.Error(err, "Watching for an optional API")
			found.SetAvailable(false) // rather than hold the workers back forever
			return
		}
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	var running sync.WaitGroup
	defer running.Wait()
	if !waitForCache(ctx, informer.HasSynced, crdForbidden, found, "the CRD", logger) {
		return
	}
	started := false
	// answer tells found whether the API is there. It returns false when
	// ctx ended first.
	answer := func(there bool) bool {
		if found.Answered() && there == found.Available() {
			return true
		}
		if !there {
			if found.Answered() {
				logger.Info("An optional API is gone: Robots that ask for its kind say so")
			} else {
				logger.Info("An optional API is not installed: Robots that ask for its kind say so until it is")
			}
			found.SetAvailable(false)
			return true
		}
		if !started {
			logger.Info("An optional API is installed: watching its kind")
			running.Go(func() { api.Informer.RunWithContext(ctx) })
			started = true
		}
		if !waitForCache(ctx, api.Informer.HasSynced, kindForbidden, found, "the kind's objects", logger) {
			logger.Info("The kind's cache did not sync before shutdown")
			return false
		}
		found.SetAvailable(true)
		return true
	}
	// The first answer is the synced cache's: it holds the CRD if it is
	// there, and what the handler says later is no older.
	crd, _, _ := informer.GetStore().GetByKey(api.CRD)
	if !answer(servesObject(crd, api.Version)) {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case there := <-changed:
			if !answer(there) {
				return
			}
		}
	}
}

// tellForbidden returns a watch error handler that logs as the default one
// does, and sends a Forbidden error to forbidden, unless one waits there.
func tellForbidden(forbidden chan<- error) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, r *cache.Reflector, err error) {
		cache.DefaultWatchErrorHandler(ctx, r, err)
		if apierrors.IsForbidden(err) {
			select {
			case forbidden <- err:
			default:
			}
		}
	}
}

// waitForCache waits until synced says a cache has synced, and returns true
// then. Told that what it holds may not be read, it answers found "not
// there", unless found has answered, and waits on. It returns false when
// ctx ends first.
func waitForCache(ctx context.Context, synced cache.InformerSynced, forbidden <-chan error, found *owned.Discovery, what string, logger klog.Logger) bool {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !synced() {
		select {
		case <-ctx.Done():
			return false
		case err := <-forbidden:
			if !found.Answered() {
				logger.Error(err, "Cannot read "+what+": Robots that ask for the kind say its API is missing until the operator may")
				found.SetAvailable(false)
			}
		case <-tick.C:
		}
	}
	return true
}

// servesObject reports whether obj is a CRD that is established and serves
// version.
func servesObject(obj any, version string) bool {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	return ok && serves(crd, version)
}

// serves reports whether crd is established and serves version.
func serves(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	established := slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
		return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
	})
	return established && slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
		return v.Name == version && v.Served
	})
}
