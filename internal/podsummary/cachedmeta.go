package podsummary

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// cachedMeta is what the pod and ReplicaSet caches keep of an object's
// metadata: the name, namespace and ResourceVersion the informer keys and
// versions it by, and the deletion time the diagnosis reads. It is a
// metav1.Object, so that the informer, its indexes and meta.Accessor treat
// a summary as any other object; the fields it does not keep read as empty
// and are not set. It takes 56 bytes where a metav1.ObjectMeta takes 232,
// on every cached pod.
type cachedMeta struct {
	Name              string
	Namespace         string
	ResourceVersion   string
	DeletionTimestamp *metav1.Time
}

var _ metav1.Object = &cachedMeta{}

func (m *cachedMeta) GetNamespace() string                { return m.Namespace }
func (m *cachedMeta) SetNamespace(namespace string)       { m.Namespace = namespace }
func (m *cachedMeta) GetName() string                     { return m.Name }
func (m *cachedMeta) SetName(name string)                 { m.Name = name }
func (m *cachedMeta) GetResourceVersion() string          { return m.ResourceVersion }
func (m *cachedMeta) SetResourceVersion(version string)   { m.ResourceVersion = version }
func (m *cachedMeta) GetDeletionTimestamp() *metav1.Time  { return m.DeletionTimestamp }
func (m *cachedMeta) SetDeletionTimestamp(t *metav1.Time) { m.DeletionTimestamp = t }

// What the cache does not keep.

func (m *cachedMeta) GetGenerateName() string                       { return "" }
func (m *cachedMeta) SetGenerateName(string)                        {}
func (m *cachedMeta) GetUID() types.UID                             { return "" }
func (m *cachedMeta) SetUID(types.UID)                              {}
func (m *cachedMeta) GetGeneration() int64                          { return 0 }
func (m *cachedMeta) SetGeneration(int64)                           {}
func (m *cachedMeta) GetSelfLink() string                           { return "" }
func (m *cachedMeta) SetSelfLink(string)                            {}
func (m *cachedMeta) GetCreationTimestamp() metav1.Time             { return metav1.Time{} }
func (m *cachedMeta) SetCreationTimestamp(metav1.Time)              {}
func (m *cachedMeta) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (m *cachedMeta) SetDeletionGracePeriodSeconds(*int64)          {}
func (m *cachedMeta) GetLabels() map[string]string                  { return nil }
func (m *cachedMeta) SetLabels(map[string]string)                   {}
func (m *cachedMeta) GetAnnotations() map[string]string             { return nil }
func (m *cachedMeta) SetAnnotations(map[string]string)              {}
func (m *cachedMeta) GetFinalizers() []string                       { return nil }
func (m *cachedMeta) SetFinalizers([]string)                        {}
func (m *cachedMeta) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (m *cachedMeta) SetOwnerReferences([]metav1.OwnerReference)    {}
func (m *cachedMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (m *cachedMeta) SetManagedFields([]metav1.ManagedFieldsEntry)  {}
