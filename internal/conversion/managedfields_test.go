package conversion

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// entry is a managedFields entry of manager, by apiVersion, on
// subresource, that set fields.
func entry(manager, apiVersion, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: apiVersion,
		Subresource: subresource, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

// TestNewerFields: the spec fields managedFields say a client set, that the
// Go types of this binary do not know, are named; what it knows, in either
// version, in lists and maps, and outside the spec, is not.
func TestNewerFields(t *testing.T) {
	for _, tt := range []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    []string
	}{
		{"none", nil, nil},
		{"known v1beta1 fields", []metav1.ManagedFieldsEntry{entry("kubectl", "robot.dev/v1beta1", "",
			`{"f:metadata":{"f:labels":{"f:team":{}}},"f:spec":{"f:image":{},"f:replicas":{},"f:env":{"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:value":{}}},`+
				`"f:resources":{"f:limits":{"f:cpu":{},"f:example.com/gpu":{}}},"f:sidecars":{"k:{\"name\":\"proxy\"}":{".":{},"f:image":{},"f:name":{}}},`+
				`"f:terminationGracePeriodSeconds":{},"f:preStop":{"f:sleep":{"f:seconds":{}}},"f:podLabels":{"f:a":{}},"f:args":{}}}`)}, nil},
		{"known v1alpha1 fields", []metav1.ManagedFieldsEntry{entry("old-client", "robot.dev/v1alpha1", "",
			`{"f:spec":{"f:image":{},"f:port":{},"f:replicas":{}}}`)}, nil},
		{"the operator's status", []metav1.ManagedFieldsEntry{entry("robot-operator", "robot.dev/v1beta1", "status",
			`{"f:status":{"f:conditions":{},"f:somethingNew":{}}}`)}, nil},
		{"a new spec field", []metav1.ManagedFieldsEntry{entry("kubectl", "robot.dev/v1beta1", "",
			`{"f:spec":{"f:image":{},"f:debugPort":{}}}`)}, []string{`spec.debugPort (set by "kubectl" as robot.dev/v1beta1)`}},
		{"a new field inside a sidecar and a probe", []metav1.ManagedFieldsEntry{entry("kubectl", "robot.dev/v1beta1", "",
			`{"f:spec":{"f:sidecars":{"k:{\"name\":\"proxy\"}":{".":{},"f:name":{},"f:restartAfter":{}}},"f:readinessProbe":{"f:httpGet":{"f:path":{},"f:newThing":{}}}}}`)},
			[]string{`spec.readinessProbe.httpGet.newThing (set by "kubectl" as robot.dev/v1beta1)`,
				`spec.sidecars[{"name":"proxy"}].restartAfter (set by "kubectl" as robot.dev/v1beta1)`}},
		{"a field v1alpha1 has no room for", []metav1.ManagedFieldsEntry{entry("old-client", "robot.dev/v1alpha1", "",
			`{"f:spec":{"f:image":{},"f:sidecars":{}}}`)}, []string{`spec.sidecars (set by "old-client" as robot.dev/v1alpha1)`}},
		{"a version this binary does not know", []metav1.ManagedFieldsEntry{entry("kubectl", "robot.dev/v1", "",
			`{"f:spec":{"f:image":{}}}`)}, []string{`spec (set by "kubectl" as robot.dev/v1, a version this operator does not know)`}},
		{"a version it does not know, without spec", []metav1.ManagedFieldsEntry{entry("robot-operator", "robot.dev/v1", "status",
			`{"f:status":{"f:conditions":{}}}`)}, nil},
		{"the scale subresource", []metav1.ManagedFieldsEntry{entry("kubectl", "autoscaling/v1", "scale",
			`{"f:spec":{"f:replicas":{}}}`)}, nil},
		{"not FieldsV1", []metav1.ManagedFieldsEntry{{Manager: "x", APIVersion: "robot.dev/v1beta1", FieldsType: "FieldsV2",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:new":{}}}`)}}}, []string{`spec (set by "x" as robot.dev/v1beta1, in fields of type "FieldsV2")`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewerFields(tt.entries); !slices.Equal(got, tt.want) {
				t.Errorf("NewerFields = %q, want %q", got, tt.want)
			}
		})
	}
}
