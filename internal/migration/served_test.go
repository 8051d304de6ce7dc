package migration

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
)

// serve runs ServeVersion on definition and returns the CRD after, the
// patches it sent, whether it says it changed the CRD, and its error.
func serve(t *testing.T, definition *apiextensionsv1.CustomResourceDefinition, version string, served bool) (*apiextensionsv1.CustomResourceDefinition, []string, bool, error) {
	t.Helper()
	definition.ResourceVersion = "7"
	client := apiextensionsfake.NewSimpleClientset(definition)
	_, ctx := ktesting.NewTestContext(t)
	m := &Migrator{CRDs: client.ApiextensionsV1().CustomResourceDefinitions(), CRDName: crdName}
	changed, err := m.ServeVersion(ctx, version, served)
	var patches []string
	for _, action := range client.Actions() {
		if action.GetVerb() != "get" {
			patch, ok := action.(k8stesting.PatchAction)
			if !ok {
				t.Fatalf("unexpected %s %s", action.GetVerb(), action.GetResource().Resource)
			}
			patches = append(patches, string(patch.GetPatch()))
		}
	}
	after, getErr := client.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crdName, metav1.GetOptions{})
	if getErr != nil {
		t.Fatal(getErr)
	}
	return after, patches, changed, err
}

func servedOf(crd *apiextensionsv1.CustomResourceDefinition) map[string]bool {
	served := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		served[v.Name] = v.Served
	}
	return served
}

func TestServeVersionStopsServingV1alpha1Alone(t *testing.T) {
	after, patches, changed, err := serve(t, crd("v1beta1", "v1beta1"), "v1alpha1", false)
	if err != nil {
		t.Fatal(err)
	}
	if !changed || len(patches) != 1 {
		t.Fatalf("changed %t, patches %q: want one patch", changed, patches)
	}
	for _, want := range []string{`{"op":"test","path":"/metadata/resourceVersion","value":"7"}`, `{"op":"test","path":"/spec/versions/0/name","value":"v1alpha1"}`} {
		if !strings.Contains(patches[0], want) {
			t.Errorf("patch %s lacks %s", patches[0], want)
		}
	}
	if got := servedOf(after); got["v1alpha1"] || !got["v1beta1"] {
		t.Errorf("served after: %v, want v1alpha1 false and v1beta1 true", got)
	}
	if len(after.Spec.Versions) != 2 || strings.Join(after.Status.StoredVersions, ",") != "v1beta1" {
		t.Errorf("versions %d, storedVersions %v: want both versions kept and storedVersions untouched", len(after.Spec.Versions), after.Status.StoredVersions)
	}
}

func TestServeVersionServesAgain(t *testing.T) {
	definition := crd("v1beta1", "v1beta1")
	definition.Spec.Versions[0].Served = false
	after, patches, changed, err := serve(t, definition, "v1alpha1", true)
	if err != nil || !changed || len(patches) != 1 {
		t.Fatalf("changed %t, patches %q, err %v: want one patch", changed, patches, err)
	}
	if got := servedOf(after); !got["v1alpha1"] || !got["v1beta1"] {
		t.Errorf("served after: %v, want both", got)
	}
}

func TestServeVersionFindsTheVersionWhereverItIs(t *testing.T) {
	definition := crd("v1beta1", "v1beta1")
	definition.Spec.Versions[0], definition.Spec.Versions[1] = definition.Spec.Versions[1], definition.Spec.Versions[0]
	after, patches, _, err := serve(t, definition, "v1alpha1", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(patches) != 1 || !strings.Contains(patches[0], `"path":"/spec/versions/1/served"`) {
		t.Errorf("patches %q, want one of /spec/versions/1/served", patches)
	}
	if got := servedOf(after); got["v1alpha1"] || !got["v1beta1"] {
		t.Errorf("served after: %v, want v1alpha1 false and v1beta1 true", got)
	}
}

func TestServeVersionWritesNothingWhenAsAsked(t *testing.T) {
	_, patches, changed, err := serve(t, crd("v1beta1", "v1beta1"), "v1alpha1", true)
	if err != nil || changed || len(patches) != 0 {
		t.Errorf("changed %t, patches %q, err %v: want no write", changed, patches, err)
	}
}

func TestServeVersionRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		version string
		want    string
	}{
		"the storage version": {"v1beta1", "cannot stop serving"},
		"a version it lacks":  {"v2", "has no version v2"},
	} {
		t.Run(name, func(t *testing.T) {
			after, patches, changed, err := serve(t, crd("v1beta1", "v1beta1"), tc.version, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one with %q", err, tc.want)
			}
			if changed || len(patches) != 0 || !servedOf(after)["v1beta1"] {
				t.Errorf("changed %t, patches %q, served %v: want no write", changed, patches, servedOf(after))
			}
		})
	}
}
