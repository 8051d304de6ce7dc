package webhookcert

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// SecretWatch keeps a Source up to date with the webhook's Secret, on every
// replica, and tells the Manager when the Secret changes or goes. It
// watches that one Secret by name, which is all the operator may read of
// Secrets. A deleted Secret changes nothing in the Source: the replica
// serves the certificate it has until the Manager has made a new one.
type SecretWatch struct {
	factory kubeinformers.SharedInformerFactory
	source  *Source
	name    string
	changed chan struct{}
}

// NewSecretWatch returns a watch of Secret namespace/name feeding source.
func NewSecretWatch(client kubernetes.Interface, namespace, name string, source *Source) *SecretWatch {
	return &SecretWatch{
		factory: kubeinformers.NewSharedInformerFactoryWithOptions(client, 0,
			kubeinformers.WithNamespace(namespace),
			kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
			})),
		source:  source,
		name:    namespace + "/" + name,
		changed: make(chan struct{}, 1),
	}
}

// Changed receives a value after the Secret changed; several changes in a
// row may come as one.
func (w *SecretWatch) Changed() <-chan struct{} { return w.changed }

// Run watches until ctx ends.
func (w *SecretWatch) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	update := func(obj any) {
		secret, ok := obj.(*corev1.Secret)
		if !ok {
			return
		}
		if err := w.source.Update(secret.Data); err != nil {
			logger.Info("The webhook serves no new certificate", "secret", w.name, "reason", err.Error())
		} else {
			logger.V(2).Info("The webhook serves the certificate of its Secret", "secret", w.name, "resourceVersion", secret.ResourceVersion)
		}
		notify(w.changed)
	}
	informer := w.factory.Core().V1().Secrets().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    update,
		UpdateFunc: func(_, obj any) { update(obj) },
		DeleteFunc: func(any) {
			logger.Info("The webhook's Secret was deleted; serving the certificate it held until a new one is made", "secret", w.name)
			notify(w.changed)
		},
	}); err != nil {
		return err
	}
	w.factory.Start(ctx.Done())
	<-ctx.Done()
	w.factory.Shutdown()
	return nil
}

// CRDWatch tells the Manager when the CRD changes (a replace that dropped
// the caBundle, another writer's conversion), so that it is put right in
// seconds. It watches that one CRD by name.
type CRDWatch struct {
	factory apiextensionsinformers.SharedInformerFactory
	changed chan struct{}
}

// NewCRDWatch returns a watch of the CRD called name.
func NewCRDWatch(client apiextensionsclientset.Interface, name string) *CRDWatch {
	return &CRDWatch{
		factory: apiextensionsinformers.NewSharedInformerFactoryWithOptions(client, 0,
			apiextensionsinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
			})),
		changed: make(chan struct{}, 1),
	}
}

// Changed receives a value after the CRD changed.
func (w *CRDWatch) Changed() <-chan struct{} { return w.changed }

// Run watches until ctx ends.
func (w *CRDWatch) Run(ctx context.Context) error {
	informer := w.factory.Apiextensions().V1().CustomResourceDefinitions().Informer()
	// The CRD's schema is large and never read here: keep only what tells
	// a change.
	if err := informer.SetTransform(func(obj any) (any, error) {
		if m, err := meta(obj); err == nil {
			return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), ResourceVersion: m.GetResourceVersion()}}, nil
		}
		return obj, nil
	}); err != nil {
		return err
	}
	kick := func(any) { notify(w.changed) }
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    kick,
		UpdateFunc: func(_, obj any) { kick(obj) },
		DeleteFunc: kick,
	}); err != nil {
		return err
	}
	w.factory.Start(ctx.Done())
	<-ctx.Done()
	w.factory.Shutdown()
	return nil
}

// meta returns obj's object metadata.
func meta(obj any) (metav1.Object, error) {
	if m, ok := obj.(metav1.Object); ok {
		return m, nil
	}
	return nil, errors.New("not an object")
}

// notify sends on changed unless a value is already waiting there.
func notify(changed chan struct{}) {
	select {
	case changed <- struct{}{}:
	default:
	}
}

// Upkeep is the webhook's certificates' upkeep as every replica runs it:
// the Secret watch feeding the served certificate, the CRD watch, and the
// Manager, which both watches wake.
type Upkeep struct {
	Secret  *SecretWatch
	CRD     *CRDWatch
	Manager *Manager
}

// Run runs the upkeep until ctx ends.
func (u *Upkeep) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- u.Secret.Run(ctx) }()
	go func() { errs <- u.CRD.Run(ctx) }()
	kick := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		u.Manager.Run(ctx, kick)
	}()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-u.Secret.Changed():
			case <-u.CRD.Changed():
			}
			notify(kick)
		}
	}()
	err := errors.Join(<-errs)
	cancel()
	err = errors.Join(err, <-errs)
	<-done
	return err
}
