package webhookcert

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// SecretWatch keeps a Source up to date with the webhook's Secret, on every
// replica, and tells the leader's Manager when the Secret changes. It
// watches that one Secret by name, which is all the operator may read of
// Secrets.
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
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	informer := w.factory.Core().V1().Secrets().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    update,
		UpdateFunc: func(_, obj any) { update(obj) },
	}); err != nil {
		return err
	}
	w.factory.Start(ctx.Done())
	<-ctx.Done()
	w.factory.Shutdown()
	return nil
}
