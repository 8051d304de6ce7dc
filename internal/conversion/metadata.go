package conversion

import (
	"maps"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
)

// The API server keeps the original's metadata in a conversion's answer but
// for the labels and the annotations, which it takes from the answer, and
// checks each of them when it differs from the original's
// (apiextensions-apiserver's restoreObjectMeta). An answer it refuses fails
// the whole LIST or WATCH that needed it, and is tried again many times a
// second. So the conversion checks its answer as the API server will, with
// the same functions, before it sends it.

// metadataMaps are the fields of metadata that the API server takes from a
// conversion's answer.
var metadataMaps = []string{"labels", "annotations"}

// labelsAndAnnotations returns a copy of object's labels and annotations:
// the original that a conversion's answer is checked against.
func labelsAndAnnotations(object robotObject) map[string]any {
	metadata := child(object, "metadata")
	original := map[string]any{}
	for _, name := range metadataMaps {
		if value, ok := metadata[name].(map[string]any); ok {
			original[name] = maps.Clone(value)
		}
	}
	return original
}

// refusedMetadata returns what the API server would refuse in the labels
// and annotations of converted, a conversion's answer for an object whose
// labels and annotations were original (from labelsAndAnnotations).
func refusedMetadata(original map[string]any, converted robotObject) fieldpath.ErrorList {
	metadata := child(converted, "metadata")
	var refused fieldpath.ErrorList
	for _, name := range metadataMaps {
		value, ok := metadata[name]
		if !ok || value == nil {
			continue // the API server drops them, and checks nothing
		}
		path := fieldpath.NewPath("metadata", name)
		answer, ok := value.(map[string]any)
		if !ok {
			refused = append(refused, fieldpath.Invalid(path, value, "must be an object"))
			continue
		}
		before, _ := original[name].(map[string]any)
		changed := len(before) != len(answer)
		values := make(map[string]string, len(answer))
		for key, item := range answer {
			text, ok := item.(string)
			if !ok {
				refused = append(refused, fieldpath.Invalid(path.Key(key), item, "must be a string"))
				continue
			}
			values[key] = text
			changed = changed || before[key] != item
		}
		if !changed {
			continue
		}
		if name == "labels" {
			refused = append(refused, metav1validation.ValidateLabels(values, path)...)
		} else {
			refused = append(refused, apivalidation.ValidateAnnotations(values, path)...)
		}
	}
	return refused
}
