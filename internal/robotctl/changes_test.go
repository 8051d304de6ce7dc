package robotctl

import (
	"strings"
	"testing"
)

// TestChanges: a revision's JSON is read as a spec and told as the Ready
// message tells it: image and replicas first, env and ports by name, any
// other field by its name; an unchanged spec written otherwise is no change.
func TestChanges(t *testing.T) {
	for _, tc := range []struct {
		name, before, after, want string
	}{
		{"same", `{"image":"a:1","replicas":1}`, `{"replicas":1,"image":"a:1"}`, ""},
		{"image", `{"image":"a:1"}`, `{"image":"a:2"}`, "image a:1 → 2"},
		{"image and replicas first", `{"minReadySeconds":5,"image":"a:1","replicas":1}`, `{"minReadySeconds":10,"image":"a:2","replicas":2}`,
			"image a:1 → 2; replicas 1 → 2; minReadySeconds changed"},
		{"env added, removed, changed", `{"env":[{"name":"A","value":"1"},{"name":"B","value":"x"}]}`,
			`{"env":[{"name":"A","value":"2"},{"name":"D","value":"y"}]}`,
			"env A changed; env D added; env B removed"},
		{"env first set", `{"image":"a"}`, `{"image":"a","env":[{"name":"LOG_LEVEL","value":"debug"}]}`, "env LOG_LEVEL added"},
		{"env reordered", `{"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}`, `{"env":[{"name":"B","value":"2"},{"name":"A","value":"1"}]}`, "env reordered"},
		{"ports by name", `{"ports":[{"name":"http","containerPort":80}]}`, `{"ports":[{"name":"http","containerPort":8080}]}`, "port http 80 → 8080"},
		{"a list without names", `{"args":["a"]}`, `{"args":["a","b"]}`, "args changed"},
		{"resources", `{"resources":{"limits":{"cpu":"1"}}}`, `{"resources":{"limits":{"cpu":"2"}}}`, "cpu limit 1 → 2"},
		{"resources written otherwise", `{"resources":{"limits":{"cpu":"1"}}}`, `{"resources":{"limits":{"cpu":"1000m"}}}`, ""},
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
