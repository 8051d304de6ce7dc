package robottest

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/diff"
	core "k8s.io/client-go/testing"
)

// CheckActions fails t unless actual, the requests a fake clientset got,
// are expected, in order: verb, resource, subresource, name and body.
// client names the clientset in the failures.
func CheckActions(t *testing.T, client string, expected, actual []core.Action) {
	t.Helper()
	for i, action := range actual {
		if i >= len(expected) {
			t.Errorf("%s client: %d unexpected requests, the first: %s", client, len(actual)-len(expected), Describe(action))
			return
		}
		CheckAction(t, expected[i], action)
	}
	if len(expected) > len(actual) {
		t.Errorf("%s client: %d more requests expected, the first: %s", client, len(expected)-len(actual), Describe(expected[len(actual)]))
	}
}

// CheckAction compares verb, resource, subresource, name and body.
func CheckAction(t *testing.T, expected, actual core.Action) {
	t.Helper()
	if Describe(expected) != Describe(actual) {
		t.Errorf("expected request %s, got %s", Describe(expected), Describe(actual))
		return
	}
	if e, ok := expected.(core.CreateAction); ok {
		if d := diff.Diff(e.GetObject(), actual.(core.CreateAction).GetObject()); d != "" {
			t.Errorf("%s: object differs (-want +got):\n%s", Describe(actual), d)
		}
		return
	}
	if e, ok := expected.(core.DeleteAction); ok {
		if d := diff.Diff(e.GetDeleteOptions(), actual.(core.DeleteAction).GetDeleteOptions()); d != "" {
			t.Errorf("%s: options differ (-want +got):\n%s", Describe(actual), d)
		}
		return
	}
	e, ok := expected.(core.PatchAction)
	if !ok {
		return
	}
	a := actual.(core.PatchAction)
	if e.GetPatchType() != a.GetPatchType() {
		t.Errorf("%s: expected patch type %s, got %s", Describe(actual), e.GetPatchType(), a.GetPatchType())
	}
	var want, got any
	if err := json.Unmarshal(e.GetPatch(), &want); err != nil {
		t.Fatalf("expected patch of %s: %v", Describe(expected), err)
	}
	if err := json.Unmarshal(a.GetPatch(), &got); err != nil {
		t.Fatalf("patch of %s: %v", Describe(actual), err)
	}
	if d := diff.Diff(want, got); d != "" {
		t.Errorf("%s: patch differs (-want +got):\n%s", Describe(actual), d)
	}
}

// Describe says a request in one line: verb, resource, subresource,
// namespace and name.
func Describe(action core.Action) string {
	s := action.GetVerb() + " " + action.GetResource().Resource
	if sub := action.GetSubresource(); sub != "" {
		s += "/" + sub
	}
	s += " " + action.GetNamespace()
	switch a := action.(type) {
	case core.GetAction: // deletes too
		s += "/" + a.GetName()
	case core.PatchAction:
		s += "/" + a.GetName()
	case core.CreateAction:
		if object, err := meta.Accessor(a.GetObject()); err == nil {
			s += "/" + object.GetName()
		}
	}
	return s
}

// FilterInformerActions drops the list and watch requests of the
// informers, and the events the broadcaster may send.
func FilterInformerActions(actions []core.Action) []core.Action {
	var out []core.Action
	for _, action := range actions {
		if action.Matches("list", action.GetResource().Resource) ||
			action.Matches("watch", action.GetResource().Resource) ||
			action.GetResource().Resource == "events" {
			continue
		}
		out = append(out, action)
	}
	return out
}
