package robotctl

import (
	"strings"
	"testing"
)

// TestChanges: each top-level field that differs, image and replicas first,
// in a short phrase; a named list item by item.
func TestChanges(t *testing.T) {
	for _, tc := range []struct {
		name, before, after, want string
	}{
		{"same", `{"image":"a:1","replicas":1}`, `{"replicas":1,"image":"a:1"}`, ""},
		{"image", `{"image":"a:1"}`, `{"image":"a:2"}`, "image a:1 → a:2"},
		{"image and replicas first", `{"minReadySeconds":5,"image":"a:1","replicas":1}`, `{"minReadySeconds":10,"image":"a:2","replicas":2}`,
			"image a:1 → a:2; replicas 1 → 2; minReadySeconds 5 → 10"},
		{"a scalar set and removed", `{"image":"a","imagePullPolicy":"Always"}`, `{"image":"a","minReadySeconds":10}`,
			"imagePullPolicy removed; minReadySeconds 10 set"},
		{"env added, removed, changed", `{"env":[{"name":"A","value":"1"},{"name":"B","value":"x"},{"name":"C","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]}`,
			`{"env":[{"name":"A","value":"2"},{"name":"C","valueFrom":{"secretKeyRef":{"name":"s","key":"l"}}},{"name":"D","value":"y"}]}`,
			"env A 1 → 2; env B removed; env C changed; env D added"},
		{"env first set", `{"image":"a"}`, `{"image":"a","env":[{"name":"LOG_LEVEL","value":"debug"}]}`, "env LOG_LEVEL added"},
		{"env all gone", `{"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}`, `{}`, "env A removed; env B removed"},
		{"env reordered", `{"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}`, `{"env":[{"name":"B","value":"2"},{"name":"A","value":"1"}]}`, "env reordered"},
		{"ports by name", `{"ports":[{"name":"http","port":80}]}`, `{"ports":[{"name":"http","port":8080}]}`, "ports http changed"},
		{"a list without names", `{"args":["a"]}`, `{"args":["a","b"]}`, "args changed"},
		{"an object", `{"resources":{"limits":{"cpu":"1"}}}`, `{"resources":{"limits":{"cpu":"2"}}}`, "resources changed"},
		{"an object added and removed", `{"strategy":{"type":"Recreate"}}`, `{"http":{"path":"/"}}`, "http added; strategy removed"},
	} {
		changes, err := Changes([]byte(tc.before), []byte(tc.after))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := strings.Join(changes, "; "); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if _, err := Changes([]byte(`{`), []byte(`{}`)); err == nil {
		t.Error("a revision that is not JSON: no error")
	}
}
