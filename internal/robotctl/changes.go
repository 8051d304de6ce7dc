package robotctl

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// leading are the spec's fields named first in a summary: those a person
// changes most.
var leading = []string{"image", "replicas"}

// Changes returns what changed from the spec previous to the spec next,
// both as JSON, one short phrase per top-level field that differs:
// "image nginx:1.27 → nginx:1.28", "env LOG_LEVEL added", "ports changed".
func Changes(previous, next []byte) ([]string, error) {
	var before, after map[string]any
	if err := json.Unmarshal(previous, &before); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(next, &after); err != nil {
		return nil, err
	}
	var fields []string
	for field := range before {
		fields = append(fields, field)
	}
	for field := range after {
		if _, ok := before[field]; !ok {
			fields = append(fields, field)
		}
	}
	slices.SortFunc(fields, func(a, b string) int {
		ia, ib := rank(a), rank(b)
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	var changes []string
	for _, field := range fields {
		old, hadOld := before[field]
		value, hasNew := after[field]
		if reflect.DeepEqual(old, value) {
			continue
		}
		changes = append(changes, change(field, old, hadOld, value, hasNew)...)
	}
	return changes, nil
}

// rank orders the leading fields first, the others after them.
func rank(field string) int {
	if i := slices.Index(leading, field); i >= 0 {
		return i
	}
	return len(leading)
}

// change says how field went from old to value, which differ.
func change(field string, old any, hadOld bool, value any, hasNew bool) []string {
	// A list of named items that comes or goes is told item by item too.
	if !hadOld {
		old = []any{}
	}
	if !hasNew {
		value = []any{}
	}
	if changes, ok := namedChanges(field, old, value); ok {
		return changes
	}
	switch {
	case !hadOld:
		if s, ok := scalar(value); ok {
			return []string{fmt.Sprintf("%s %s set", field, s)}
		}
		return []string{field + " added"}
	case !hasNew:
		return []string{field + " removed"}
	}
	if from, ok := scalar(old); ok {
		if to, ok := scalar(value); ok {
			return []string{fmt.Sprintf("%s %s → %s", field, from, to)}
		}
	}
	return []string{field + " changed"}
}

// scalar returns v as it reads when it is a string, number or boolean.
func scalar(v any) (string, bool) {
	switch v := v.(type) {
	case string, float64, bool:
		return fmt.Sprint(v), true
	}
	return "", false
}

// namedChanges tells the change of a list whose items all have a name
// (env, ports, volumes) item by item: added, removed, or changed (an
// environment variable's value from one to the other). It returns false
// for any other list.
func namedChanges(field string, old, value any) ([]string, bool) {
	before, ok := byName(old)
	if !ok {
		return nil, false
	}
	after, ok := byName(value)
	if !ok {
		return nil, false
	}
	var changes []string
	for _, item := range before.order {
		next, kept := after.items[item]
		switch {
		case !kept:
			changes = append(changes, fmt.Sprintf("%s %s removed", field, item))
		case !reflect.DeepEqual(before.items[item], next):
			from, fromOK := scalar(before.items[item]["value"])
			to, toOK := scalar(next["value"])
			if fromOK && toOK && len(before.items[item]) == 2 && len(next) == 2 {
				changes = append(changes, fmt.Sprintf("%s %s %s → %s", field, item, from, to))
			} else {
				changes = append(changes, fmt.Sprintf("%s %s changed", field, item))
			}
		}
	}
	for _, item := range after.order {
		if _, had := before.items[item]; !had {
			changes = append(changes, fmt.Sprintf("%s %s added", field, item))
		}
	}
	if len(changes) == 0 {
		// The same items in another order.
		changes = append(changes, field+" reordered")
	}
	return changes, true
}

// named is a list's items by their name, and the names in the list's order.
type named struct {
	items map[string]map[string]any
	order []string
}

// byName returns the items of v by name, when v is a list of objects each
// with a distinct name.
func byName(v any) (named, bool) {
	list, ok := v.([]any)
	if !ok {
		return named{}, false
	}
	n := named{items: map[string]map[string]any{}}
	for _, item := range list {
		object, ok := item.(map[string]any)
		if !ok {
			return named{}, false
		}
		name, ok := object["name"].(string)
		if _, seen := n.items[name]; !ok || seen {
			return named{}, false
		}
		n.items[name] = object
		n.order = append(n.order, name)
	}
	return n, true
}
