package transform

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ObjectMetadata is the transform of a metadata informer whose objects are
// only ever asked who they are and which version: it keeps an object's
// namespace, name, UID and resourceVersion, and drops the rest of its
// metadata (labels, annotations, managedFields, owners), which for a
// ConfigMap or a Secret applied with kubectl holds its data again, in
// kubectl's last-applied-configuration annotation. Any other object is
// kept as it is.
func ObjectMetadata(obj interface{}) (interface{}, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion}}, nil
}
