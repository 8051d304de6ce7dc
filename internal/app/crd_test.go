package app

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// crdOf returns a Robot CRD serving versions, storing the one marked.
func crdOf(storage string, served ...string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = robotsCRD
	for _, version := range served {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: version, Served: true, Storage: version == storage})
	}
	return crd
}

// TestStorageVersionCheck: the operator refuses to start against a Robot
// CRD that stores a version it does not serve, a newer release's, in one
// line that names the version and what to do; a CRD this release or the
// previous one installed passes.
func TestStorageVersionCheck(t *testing.T) {
	for _, tt := range []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		want []string // in the error; none: no error
	}{
		{"this release's CRD", crdOf("v1beta1", "v1alpha1", "v1beta1"), nil},
		{"storing v1alpha1", crdOf("v1alpha1", "v1alpha1", "v1beta1"), nil},
		{"a newer release's CRD", crdOf("v1", "v1alpha1", "v1beta1", "v1"),
			[]string{`stores robot.dev/v1`, "v1alpha1, v1beta1", "newer release", "Rolling back"}},
		{"no storage version", crdOf("", "v1beta1"), []string{"no storage version"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := storageVersionError(tt.crd, "v9.9.9")
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("error %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one with %q", tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is more than one line", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}
