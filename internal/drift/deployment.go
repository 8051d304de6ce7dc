package drift

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/robot-operator/robot-operator/internal/workload"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// deploymentTypes knows the schema that server-side apply uses for built-in
// types: which lists are keyed by which fields, which are atomic.
var deploymentTypes = applyconfigurations.NewTypeConverter(scheme.Scheme)

// DeploymentDrift says how current differs from desired in the fields that
// desired sets, or returns "" when it does not. Only those fields count:
// what another writer adds to a field the Robot leaves unset (args, an env
// var, a sidecar, a label) is theirs, and an apply that does not carry the
// field would never remove it anyway. A field the Robot no longer sets shows
// as a change of the spec hash annotation. The difference found first is
// described as "what the Deployment has; what the Robot asks for", which
// reads right whether the Robot changed or someone edited the Deployment.
func DeploymentDrift(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) string {
	return DeploymentDriftSkippingSpecs(desired, current, false)
}

// DeploymentDriftSkippingSpecs is DeploymentDrift, without the costly
// comparison of specs when the caller knows them to match.
func DeploymentDriftSkippingSpecs(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment, specsMatch bool) string {
	if drift := ownerDrift(desired, current); drift != "" {
		return drift
	}
	if !specsMatch {
		if drift := specDrift(desired, current); drift != "" {
			return drift
		}
	}
	return annotationDrift(desired.Annotations, current.Annotations)
}

// ownerDrift compares the labels and the controller reference.
func ownerDrift(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) string {
	if key, ok := missingFrom(desired.Labels, current.Labels); !ok {
		return describeMapDrift("metadata.labels", key, desired.Labels, current.Labels)
	}
	if !controlledAs(current, desired.OwnerReferences[0]) {
		return "its controller reference changed"
	}
	return ""
}

// annotationDrift compares the annotations of what the operator applies,
// want, with those of the object, got, the spec hash among them.
func annotationDrift(want, got map[string]string) string {
	key, ok := missingFrom(want, got)
	switch {
	case ok:
		return ""
	case key == workload.AnnotationSpecHash:
		// No field the Robot sets differs, but the Robot asks for
		// something else than was applied: a field was removed from it.
		return "the Robot's spec changed"
	}
	return describeMapDrift("metadata.annotations", key, want, got)
}

func describeMapDrift(field, key string, want, got map[string]string) string {
	if value, ok := got[key]; ok {
		return fmt.Sprintf("%s.%s is %q; the Robot asks for %q", field, key, value, want[key])
	}
	return fmt.Sprintf("%s.%s is not set; the Robot asks for %q", field, key, want[key])
}

// specDrift compares the Deployment's spec the way server-side apply merges
// it, by the schema of the Deployment type: an env var or a port is found by
// its key, args are compared whole, and only the fields desired sets are
// looked at. It is the costly part of a drift check.
func specDrift(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) string {
	// Only the specs: the rest is compared above, and converting it would
	// cost as much again.
	desiredSpec := &appsv1ac.DeploymentApplyConfiguration{TypeMetaApplyConfiguration: desired.TypeMetaApplyConfiguration, Spec: desired.Spec}
	currentSpec := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		Spec:     current.Spec,
	}
	if drift := describeSpecDrift(desiredSpec, currentSpec); drift != "" {
		return drift
	}
	return initContainerOrderDrift(desired, current)
}

// initContainerOrderDrift compares the order of the init containers the
// Robot sets (its sidecars, then its init containers) with their order in
// the Deployment. Server-side apply finds them by name, so a field-by-field
// comparison sees no difference when someone reorders them; but the kubelet
// starts them in that order, and an init step that needs a sidecar must come
// after it. Another writer's init containers may sit anywhere among them. An
// apply puts them back in the Robot's order.
func initContainerOrderDrift(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) string {
	if desired.Spec == nil || desired.Spec.Template == nil || desired.Spec.Template.Spec == nil || len(desired.Spec.Template.Spec.InitContainers) < 2 {
		return ""
	}
	var want []string
	for _, c := range desired.Spec.Template.Spec.InitContainers {
		if c.Name != nil {
			want = append(want, *c.Name)
		}
	}
	var got []string
	for _, c := range current.Spec.Template.Spec.InitContainers {
		if slices.Contains(want, c.Name) {
			got = append(got, c.Name)
		}
	}
	if len(got) != len(want) || slices.Equal(got, want) {
		// A missing one is told by the comparison of fields.
		return ""
	}
	return fmt.Sprintf("spec.template.spec.initContainers are in the order %s; the Robot asks for %s", strings.Join(got, ", "), strings.Join(want, ", "))
}

// describeSpecDrift tells how current, an object of a built-in kind with its
// type meta and spec, differs from desired, an apply configuration of that
// kind, in the fields desired sets, or returns "" when it does not.
func describeSpecDrift(desired any, current runtime.Object) string {
	return describeSpecDriftWith(deploymentTypes, desired, current)
}

// describeSpecDriftWith is describeSpecDrift for a kind whose schema types
// knows.
func describeSpecDriftWith(types managedfields.TypeConverter, desired any, current runtime.Object) string {
	path, err := firstDifference(types, desired, current)
	switch {
	case err != nil:
		// Not expected for what the API server has stored: say so, and
		// call it drift, so that the apply's answer decides.
		return "it cannot be compared with what the Robot asks for: " + err.Error()
	case path == nil:
		return ""
	}
	return describeDifference(path, desired, current)
}

// firstDifference returns the path of a field that desired, an apply
// configuration of a built-in kind, sets and current, an object of that kind
// with its type meta, lacks or holds with another value, or nil when there
// is none.
func firstDifference(types managedfields.TypeConverter, desired any, current runtime.Object) (fieldpath.Path, error) {
	want, err := typedApplyConfiguration(types, desired)
	if err != nil {
		return nil, fmt.Errorf("the desired object: %w", err)
	}
	got, err := types.ObjectToTyped(current, typed.AllowDuplicates)
	if err != nil {
		return nil, fmt.Errorf("the live object: %w", err)
	}
	fields, err := want.ToFieldSet()
	if err != nil {
		return nil, err
	}
	comparison, err := want.Compare(got.ExtractItems(fields.Leaves(), typed.WithAppendKeyFields()))
	if err != nil {
		return nil, err
	}
	if comparison.IsSame() {
		return nil, nil
	}
	// Modified: both have it, with other values. Removed: desired sets it,
	// current lacks it. (Added cannot happen: only desired's fields were
	// extracted.) The first in path order, so the message is stable.
	var first fieldpath.Path
	for _, set := range []*fieldpath.Set{comparison.Modified, comparison.Removed, comparison.Added} {
		set.Leaves().Iterate(func(p fieldpath.Path) {
			if first == nil || p.String() < first.String() {
				first = p.Copy()
			}
		})
		if first != nil {
			break
		}
	}
	return first, nil
}

// typedApplyConfiguration is an apply configuration as server-side apply
// sees it.
func typedApplyConfiguration(types managedfields.TypeConverter, applyConfiguration any) (*typed.TypedValue, error) {
	data, err := json.Marshal(applyConfiguration)
	if err != nil {
		return nil, err
	}
	var object map[string]any
	// apimachinery's json keeps integers as int64, as the schema wants.
	if err := utiljson.Unmarshal(data, &object); err != nil {
		return nil, err
	}
	return types.ObjectToTyped(&unstructured.Unstructured{Object: object}, typed.AllowDuplicates)
}

// describeDifference tells a person what differs at path.
func describeDifference(path fieldpath.Path, desired, current any) string {
	field := strings.TrimPrefix(path.String(), ".")
	// Name the outermost thing that is missing: a whole env var, not its
	// name.
	for i := 1; i <= len(path); i++ {
		if _, found := valueAt(current, path[:i]); !found {
			want, _ := valueAt(desired, path[:i])
			return fmt.Sprintf("%s is not set; the Robot asks for %s", strings.TrimPrefix(path[:i].String(), "."), want)
		}
	}
	want, _ := valueAt(desired, path)
	got, _ := valueAt(current, path)
	return fmt.Sprintf("%s is %s; the Robot asks for %s", field, got, want)
}

// valueAt returns the value at path in object, as short JSON.
func valueAt(object any, path fieldpath.Path) (string, bool) {
	data, err := json.Marshal(object)
	if err != nil {
		return "", false
	}
	var v any
	if err := utiljson.Unmarshal(data, &v); err != nil {
		return "", false
	}
	for _, element := range path {
		switch {
		case element.FieldName != nil:
			m, ok := v.(map[string]any)
			if !ok {
				return "", false
			}
			if v, ok = m[*element.FieldName]; !ok {
				return "", false
			}
		case element.Key != nil:
			items, _ := v.([]any)
			i := slices.IndexFunc(items, func(item any) bool {
				m, ok := item.(map[string]any)
				if !ok {
					return false
				}
				for _, key := range *element.Key {
					if !reflect.DeepEqual(m[key.Name], key.Value.Unstructured()) {
						return false
					}
				}
				return true
			})
			if i < 0 {
				return "", false
			}
			v = items[i]
		default:
			return "", false
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	const maxValue = 200
	if len(out) > maxValue {
		return string(out[:maxValue-3]) + "...", true
	}
	return string(out), true
}

// missingFrom returns the first key of want, in sorted order, whose value
// got lacks.
func missingFrom(want, got map[string]string) (string, bool) {
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if v, ok := got[key]; !ok || v != want[key] {
			return key, false
		}
	}
	return "", true
}

// PodTemplateDrift says how current's pod template differs from desired's,
// in the fields desired sets, or returns "" when it does not: a change that
// an apply makes there rolls the Deployment's pods, one elsewhere (the
// replicas, the strategy, a label of the Deployment) does not.
func PodTemplateDrift(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) string {
	if desired.Spec == nil || desired.Spec.Template == nil {
		return ""
	}
	desiredTemplate := &appsv1ac.DeploymentApplyConfiguration{TypeMetaApplyConfiguration: desired.TypeMetaApplyConfiguration,
		Spec: &appsv1ac.DeploymentSpecApplyConfiguration{Template: desired.Spec.Template}}
	currentTemplate := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		Spec:     appsv1.DeploymentSpec{Template: current.Spec.Template},
	}
	if drift := describeSpecDrift(desiredTemplate, currentTemplate); drift != "" {
		return drift
	}
	return initContainerOrderDrift(desired, current)
}
