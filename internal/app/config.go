package app

import (
	"context"

	"github.com/robot-operator/robot-operator/internal/transform"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// watchConfig makes the metadata informers of the ConfigMaps and the Secrets
// that Robots rolling on config changes read, each only if the operator may
// list and watch that kind (mayWatch). Reading Secrets, even their metadata,
// is a privilege the RBAC shipped grants only when asked: without it a
// Robot that reads one says so, and the Secrets' informer, which would be
// refused and retry forever, is never made.
func (i *informers) watchConfig(ctx context.Context, kube kubernetes.Interface, client metadata.Interface) {
	logger := klog.FromContext(ctx)
	for _, kind := range []struct {
		resource string
		informer *cache.SharedIndexInformer
	}{{"configmaps", &i.configMaps}, {"secrets", &i.secrets}} {
		if !mayWatch(ctx, kube, kind.resource, i.namespace) {
			logger.Info("Not watching the metadata of this kind, which the operator may not list and watch: Robots rolling on config changes that read one say so",
				"resource", kind.resource, "namespace", namespaceOrAll(i.namespace))
			continue
		}
		*kind.informer = metadataInformer(client, corev1.SchemeGroupVersion.WithResource(kind.resource), i.namespace)
	}
}

// metadataInformer returns the informer of the metadata of resource in
// namespace ("" for all), each object kept as its identity and version
// (transform.ObjectMetadata). No resync: an update that brings no new
// version queues nothing.
func metadataInformer(client metadata.Interface, resource schema.GroupVersionResource, namespace string) cache.SharedIndexInformer {
	informer := metadatainformer.NewFilteredMetadataInformer(client, resource, namespace, 0, cache.Indexers{}, nil).Informer()
	if err := informer.SetTransform(transform.ObjectMetadata); err != nil {
		// Only a started informer refuses a transform: the metadata would
		// be cached whole, which costs memory, not truth.
		utilruntime.HandleError(err)
	}
	return informer
}

// mayWatch asks the API server, once, whether the operator may list and
// watch resource (of the core group) in namespace ("" for all). A review
// that fails answers no: the operator then says so in the log and on the
// Robots that need it, rather than retry a refused watch forever.
func mayWatch(ctx context.Context, kube kubernetes.Interface, resource, namespace string) bool {
	for _, verb := range []string{"list", "watch"} {
		review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Verb: verb, Resource: resource, Version: "v1"}},
		}, metav1.CreateOptions{})
		if err != nil {
			klog.FromContext(ctx).Error(err, "Asking whether the operator may watch a kind", "resource", resource, "verb", verb)
			return false
		}
		if !review.Status.Allowed {
			return false
		}
	}
	return true
}
