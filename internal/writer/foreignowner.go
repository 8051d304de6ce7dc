package writer

import (
	"bytes"
	"slices"
	"strings"

	"github.com/robot-operator/robot-operator/internal/workload"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// foreignOwner returns the fields at or under (or above) the path invalidField
// (as the API server's validation names it, "spec.template.spec.containers[0].securityContext")
// that a writer other than the operator owns in managedFields, joined with
// "and", and that writer; "" when there is none. List indexes and keys are ignored in the
// comparison, which is enough to name the writer.
func foreignOwner(managedFields []metav1.ManagedFieldsEntry, invalidField string) (string, string) {
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
