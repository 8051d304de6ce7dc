package drift

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/robot-operator/robot-operator/internal/workload"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// CreatedFieldsEntry returns the position in managedFields of the entry that
// the operator's create of the Deployment left, or -1 when there is none. It
// is the operator's Update of the Deployment itself: the operator writes
// Deployments by create and apply, and its patch of managedFields
// (claimCreatedFields) sets no field of its own. Its RecreatePatch does set
// one, spec.strategy.type, in the same entry; the apply that follows it owns
// that field as well, so the entry is handled as the create's.
func CreatedFieldsEntry(entries []metav1.ManagedFieldsEntry) int {
	return slices.IndexFunc(entries, func(e metav1.ManagedFieldsEntry) bool {
		return IsOwnEntry(e) && e.Operation == metav1.ManagedFieldsOperationUpdate
	})
}

// HasAppliedEntry reports whether managedFields hold the operator's Apply
// entry.
func HasAppliedEntry(entries []metav1.ManagedFieldsEntry) bool {
	return slices.ContainsFunc(entries, func(e metav1.ManagedFieldsEntry) bool {
		return IsOwnEntry(e) && e.Operation == metav1.ManagedFieldsOperationApply
	})
}

// IsOwnEntry reports whether a managedFields entry is the operator's, about
// the Deployment itself rather than a subresource.
func IsOwnEntry(e metav1.ManagedFieldsEntry) bool {
	return e.Manager == workload.FieldManager && e.Subresource == ""
}

// jsonPatchOperation is one operation of a JSON patch (RFC 6902).
type jsonPatchOperation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// ClaimPatch is the JSON patch that turns entry i of object's managedFields,
// the create's, into the operator's Apply entry, or removes it when there is
// one already. The API server takes the managedFields that a patch sets as
// they are. The patch applies only to the object as it was read: where the
// entry is depends on the others.
func ClaimPatch(object metav1.Object, i int) ([]byte, error) {
	entry := fmt.Sprintf("/metadata/managedFields/%d", i)
	patch := []jsonPatchOperation{
		{Op: "test", Path: "/metadata/resourceVersion", Value: object.GetResourceVersion()},
		{Op: "test", Path: entry + "/manager", Value: workload.FieldManager},
		{Op: "test", Path: entry + "/operation", Value: metav1.ManagedFieldsOperationUpdate},
	}
	if HasAppliedEntry(object.GetManagedFields()) {
		patch = append(patch, jsonPatchOperation{Op: "remove", Path: entry})
	} else {
		patch = append(patch, jsonPatchOperation{Op: "replace", Path: entry + "/operation", Value: metav1.ManagedFieldsOperationApply})
	}
	return json.Marshal(patch)
}

// ForeignOwner returns the fields at or under (or above) the path invalidField
// (as the API server's validation names it, "spec.template.spec.containers[0].securityContext")
// that a writer other than the operator owns in managedFields, joined with
// "and", and that writer; "" when there is none. List indexes and keys are ignored in the
// comparison, which is enough to name the writer.
func ForeignOwner(managedFields []metav1.ManagedFieldsEntry, invalidField string) (string, string) {
	want := stripListSelectors(invalidField)
	for _, entry := range managedFields {
		if entry.Manager == workload.FieldManager || entry.Subresource != "" || entry.FieldsV1 == nil {
			continue
		}
		var owned fieldpath.Set
		if err := owned.FromJSON(bytes.NewReader(entry.FieldsV1.Raw)); err != nil {
			continue
		}
		var found []string
		owned.Leaves().Iterate(func(path fieldpath.Path) {
			got := stripListSelectors(path.String())
			if got == want || strings.HasPrefix(got, want+".") || strings.HasPrefix(want, got+".") {
				found = append(found, strings.TrimPrefix(path.String(), "."))
			}
		})
		if len(found) > 0 {
			slices.Sort(found)
			return strings.Join(found, " and "), entry.Manager
		}
	}
	return "", ""
}

// stripListSelectors turns "a.b[0].c" and ".a.b[name=\"x\"].c" into "a.b.c".
func stripListSelectors(path string) string {
	var out strings.Builder
	depth := 0
	for _, r := range strings.TrimPrefix(path, ".") {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			out.WriteRune(r)
		}
	}
	return out.String()
}
