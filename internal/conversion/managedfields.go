package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// A Robot written through a newer release's CRD may hold spec fields that
// this binary's Go types do not have. Decoding drops them without a word,
// and a Deployment built from what is left would take from the Robot's pods
// what the newer release gave them: the operator applies with one field
// manager, and server-side apply removes what an apply no longer sends.
// The fields are gone once decoded, but managedFields still list every field
// a client set, by the apiVersion it was set in: NewerFields compares those
// with the Go types.

// NewerFields returns the spec fields that entries, a Robot's managedFields,
// say a client set, and that this binary's Go type of the version it was set
// in has no field for; a field set through a version this binary does not
// know counts whole. Each is named with the writer and the version. What is
// outside spec (metadata, the status) is not looked at: the operator never
// writes it from the spec. A subresource's entry of another API group (the
// scale subresource's autoscaling/v1) names its fields as the Robot's
// storage version does.
func NewerFields(entries []metav1.ManagedFieldsEntry) []string {
	var newer []string
	for _, entry := range entries {
		// Most entries set no spec field (a status writer's, every one of
		// the operator's): they are told without being parsed, as this
		// runs on every Robot the informer decodes.
		if entry.FieldsV1 == nil || !bytes.Contains(entry.FieldsV1.Raw, specKey) {
			continue
		}
		var fields map[string]any
		if json.Unmarshal(entry.FieldsV1.Raw, &fields) != nil {
			continue
		}
		spec, ok := fields["f:spec"].(map[string]any)
		if !ok {
			continue
		}
		by := fmt.Sprintf("set by %q as %s", entry.Manager, entry.APIVersion)
		if entry.FieldsType != "FieldsV1" {
			newer = append(newer, fmt.Sprintf("spec (%s, in fields of type %q)", by, entry.FieldsType))
			continue
		}
		robot := robotTypeOf(entry.APIVersion)
		if robot == nil {
			newer = append(newer, fmt.Sprintf("spec (%s, a version this operator does not know)", by))
			continue
		}
		for _, path := range shapeOf(robot).fields["spec"].setFieldsUnknown(spec, "spec") {
			newer = append(newer, fmt.Sprintf("%s (%s)", path, by))
		}
	}
	slices.Sort(newer)
	return slices.Compact(newer)
}

// specKey is how an entry's fields name spec, quoted as in their JSON.
var specKey = []byte(`"f:spec"`)

// robotTypeOf returns the Go type of a Robot set through apiVersion, nil for
// a version of robot.dev this binary does not know.
func robotTypeOf(apiVersion string) reflect.Type {
	switch apiVersion {
	case robotv1alpha1.SchemeGroupVersion.String():
		return reflect.TypeFor[robotv1alpha1.Robot]()
	case robotv1beta1.SchemeGroupVersion.String():
		return reflect.TypeFor[robotv1beta1.Robot]()
	}
	if gv, err := schema.ParseGroupVersion(apiVersion); err == nil && gv.Group != robotv1beta1.SchemeGroupVersion.Group {
		return reflect.TypeFor[robotv1beta1.Robot]()
	}
	return nil
}

// setFieldsUnknown returns the paths, under path, of the fields in set, a
// FieldsV1 set (structured-merge-diff's: "f:" a field or a map key, "k:" a
// list item by its keys, "v:" a set's value, "i:" a list item by index, "."
// the item itself), that s does not allow.
func (s *shape) setFieldsUnknown(set map[string]any, path string) []string {
	var unknown []string
	for key, value := range set {
		children, _ := value.(map[string]any)
		kind, name, _ := strings.Cut(key, ":")
		switch {
		case key == ".":
		case kind == "f" && s.isMap:
			unknown = append(unknown, s.elem.setFieldsUnknown(children, fmt.Sprintf("%s[%q]", path, name))...)
		case kind == "f" && s.fields != nil:
			field, ok := s.fields[name]
			if !ok {
				unknown = append(unknown, path+"."+name)
				continue
			}
			unknown = append(unknown, field.setFieldsUnknown(children, path+"."+name)...)
		case (kind == "k" || kind == "v" || kind == "i") && s.elem != nil:
			unknown = append(unknown, s.elem.setFieldsUnknown(children, path+"["+name+"]")...)
		}
	}
	return unknown
}
