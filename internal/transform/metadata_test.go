package transform

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestObjectMetadata(t *testing.T) {
	in := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db", UID: "u-1", ResourceVersion: "7", Generation: 2,
			Labels:        map[string]string{"app": "db"},
			Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"c2VjcmV0"}}`},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
	}
	got, err := ObjectMetadata(in)
	if err != nil {
		t.Fatal(err)
	}
	want := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db", UID: "u-1", ResourceVersion: "7"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ObjectMetadata = %+v, want %+v", got, want)
	}
	other := "not metadata"
	if got, err := ObjectMetadata(other); err != nil || got != other {
		t.Errorf("ObjectMetadata(%q) = %v, %v; want it as it is", other, got, err)
	}
}
