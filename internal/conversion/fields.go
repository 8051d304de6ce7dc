package conversion

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// shape is the set of JSON keys a Go type allows, read from its fields' json
// tags, so that the conversion can refuse a field the operator does not know
// without parsing any value. The API types are the source: the CRD's schema
// is generated from them, and TestShapesMatchTheCRD fails when the two part.
type shape struct {
	// fields are a struct's keys and what each holds; nil for anything
	// but a struct.
	fields map[string]*shape
	// elem is what a slice's items or a map's values hold.
	elem *shape
	// isMap: a map, whose keys are data, not fields.
	isMap bool
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	objectMeta      = reflect.TypeFor[metav1.ObjectMeta]()
)

// shapes memoizes shapeOf, by type.
var shapes sync.Map

// shapeOf returns the keys that a value of type t may hold in JSON. A type
// that reads its own JSON (a quantity, an int-or-string, a time) is a leaf,
// and so is ObjectMeta: the conversion passes metadata through, and a field
// that a newer API server adds to it must not fail every conversion.
func shapeOf(t reflect.Type) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	s := buildShape(t, map[reflect.Type]*shape{})
	actual, _ := shapes.LoadOrStore(t, s)
	return actual.(*shape)
}

func buildShape(t reflect.Type, building map[reflect.Type]*shape) *shape {
	if s, ok := building[t]; ok {
		return s
	}
	leaf := &shape{}
	if t == objectMeta || t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return leaf
	}
	switch t.Kind() {
	case reflect.Pointer:
		return buildShape(t.Elem(), building)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return leaf // []byte is a base64 string
		}
		s := &shape{}
		building[t] = s
		s.elem = buildShape(t.Elem(), building)
		return s
	case reflect.Map:
		s := &shape{isMap: true}
		building[t] = s
		s.elem = buildShape(t.Elem(), building)
		return s
	case reflect.Struct:
		s := &shape{fields: map[string]*shape{}}
		building[t] = s
		addFields(s, t, building)
		return s
	}
	return leaf
}

// addFields adds t's fields to s, those of inlined and embedded structs
// included, as encoding/json does.
func addFields(s *shape, t reflect.Type, building map[reflect.Type]*shape) {
	for field := range t.Fields() {
		tag := field.Tag.Get("json")
		if tag == "-" || (!field.IsExported() && !field.Anonymous) {
			continue
		}
		name, options, _ := strings.Cut(tag, ",")
		if name == "" && (field.Anonymous || slices.Contains(strings.Split(options, ","), "inline")) {
			embedded := field.Type
			if embedded.Kind() == reflect.Pointer {
				embedded = embedded.Elem()
			}
			if embedded.Kind() == reflect.Struct {
				addFields(s, embedded, building)
				continue
			}
		}
		if name == "" {
			name = field.Name
		}
		s.fields[name] = buildShape(field.Type, building)
	}
}

// unknownFields returns the paths of the keys in value that s does not
// allow, under path. A value of another JSON type than s expects is not its
// business: the conversion passes values through, and the API server's
// schema checked them.
func (s *shape) unknownFields(value any, path string) []string {
	var unknown []string
	switch value := value.(type) {
	case map[string]any:
		switch {
		case s.isMap:
			for key, item := range value {
				unknown = append(unknown, s.elem.unknownFields(item, fmt.Sprintf("%s[%q]", path, key))...)
			}
		case s.fields != nil:
			for key, item := range value {
				field, ok := s.fields[key]
				if !ok {
					unknown = append(unknown, path+"."+key)
					continue
				}
				unknown = append(unknown, field.unknownFields(item, path+"."+key)...)
			}
		}
	case []any:
		if s.elem != nil {
			for i, item := range value {
				unknown = append(unknown, s.elem.unknownFields(item, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return unknown
}
