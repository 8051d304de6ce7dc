package drift

import (
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClaimPatch: the patch applies only to the Deployment as it was read.
func TestClaimPatch(t *testing.T) {
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42", ManagedFields: []metav1.ManagedFieldsEntry{robottest.OthersInCache, robottest.CreatedInCache}}}
	patch, err := ClaimPatch(deployment, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},` +
		`{"op":"test","path":"/metadata/managedFields/1/manager","value":"robot-operator"},` +
		`{"op":"test","path":"/metadata/managedFields/1/operation","value":"Update"},` +
		`{"op":"replace","path":"/metadata/managedFields/1/operation","value":"Apply"}]`
	if string(patch) != want {
		t.Errorf("patch\n%s\nwant\n%s", patch, want)
	}
	deployment.ManagedFields = []metav1.ManagedFieldsEntry{robottest.AppliedInCache, robottest.OthersInCache, robottest.CreatedInCache}
	if patch, err = ClaimPatch(deployment, 2); err != nil {
		t.Fatal(err)
	}
	want = `[{"op":"test","path":"/metadata/resourceVersion","value":"42"},` +
		`{"op":"test","path":"/metadata/managedFields/2/manager","value":"robot-operator"},` +
		`{"op":"test","path":"/metadata/managedFields/2/operation","value":"Update"},` +
		`{"op":"remove","path":"/metadata/managedFields/2"}]`
	if string(patch) != want {
		t.Errorf("with an Apply entry already: patch\n%s\nwant\n%s", patch, want)
	}
}
