package conversion

import (
	"context"
	"os"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// TestTheAPIServerAcceptsTheCRD: the CRD passes the API server's own
// validation of a CRD, which includes the estimated cost of its CEL rules
// against the per-rule and per-CRD budgets: a rule that may run too long
// makes the API server refuse the whole CRD. The e2e suite proves it on
// each supported Kubernetes; this finds it in seconds.
func TestTheAPIServerAcceptsTheCRD(t *testing.T) {
	file, err := os.Open(crdPath)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := utilyaml.NewYAMLOrJSONDecoder(file, 4096).Decode(&crd); err != nil {
		t.Fatalf("reading %s: %v", crdPath, err)
	}
	// The API server records the stored versions; a new CRD has its storage version.
	crd.Status.StoredVersions = []string{"v1beta1"}
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&crd, &internal, nil); err != nil {
		t.Fatal(err)
	}
	for _, err := range validation.ValidateCustomResourceDefinition(context.Background(), &internal) {
		t.Errorf("the API server would refuse the CRD: %v", err)
	}
}
