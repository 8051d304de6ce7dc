package writer

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestReplaced: only the API server's refusal of an apply for naming
// another object's UID counts as the object replaced; any other refusal is
// what it is.
func TestReplaced(t *testing.T) {
	kind := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the UID refused", apierrors.NewInvalid(kind, "web", field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), "b0a9", "field is immutable")}), true},
		{"another field refused", apierrors.NewInvalid(kind, "web", field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), -1, "must be positive")}), false},
		{"a conflict", apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New("modified")), false},
		{"no error", nil, false},
	} {
		if got := replaced(tc.err); got != tc.want {
			t.Errorf("%s: replaced = %v, want %v", tc.name, got, tc.want)
		}
	}
}
