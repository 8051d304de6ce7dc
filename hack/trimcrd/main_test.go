package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestTrim: the descriptions of the versions named go, from every schema
// inside them, and a property named description stays; the other versions
// keep theirs, and the file keeps controller-gen's form.
func TestTrim(t *testing.T) {
	const crd = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: robots.robot.dev
spec:
  versions:
  - name: v1alpha1
    schema:
      openAPIV3Schema:
        description: Robot runs a container image.
        properties:
          spec:
            description: Spec is what the Robot asks for.
            properties:
              description:
                description: A field named description.
                type: string
              env:
                items:
                  description: An env var.
                  type: object
                type: array
            type: object
        type: object
  - name: v1beta1
    schema:
      openAPIV3Schema:
        description: Robot runs a container image.
        type: object
`
	const want = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: robots.robot.dev
spec:
  versions:
  - name: v1alpha1
    schema:
      openAPIV3Schema:
        properties:
          spec:
            properties:
              description:
                type: string
              env:
                items:
                  type: object
                type: array
            type: object
        type: object
  - name: v1beta1
    schema:
      openAPIV3Schema:
        description: Robot runs a container image.
        type: object
`
	path := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(path, []byte(crd), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := trim(path, []string{"v1alpha1"}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("trimmed:\n%s\nwant:\n%s", got, want)
	}
	if err := trim(path, []string{"v2"}); err == nil || !strings.Contains(err.Error(), "found 0 of the versions [v2]") {
		t.Errorf("a version the CRD does not have: error %v, want one that says so", err)
	}
}

// TestQuantitiesAndLabelValues: in every version, the quantities of
// requests, limits and sizeLimit get the rule in place of the pattern, with
// bounds; other quantities keep the pattern; label values get a length.
func TestQuantitiesAndLabelValues(t *testing.T) {
	quantity := func() map[string]any {
		return map[string]any{"x-kubernetes-int-or-string": true, "pattern": quantityPattern}
	}
	root := map[string]any{"properties": map[string]any{"spec": map[string]any{"properties": map[string]any{
		"resources": map[string]any{"properties": map[string]any{
			"limits":   map[string]any{"additionalProperties": quantity()},
			"requests": map[string]any{"additionalProperties": quantity()},
		}},
		"emptyDir":  map[string]any{"properties": map[string]any{"sizeLimit": quantity()}},
		"divisor":   quantity(),
		"podLabels": map[string]any{"additionalProperties": map[string]any{"type": "string"}},
	}}}}
	checkQuantities(root)
	boundLabelValues(root)
	spec := root["properties"].(map[string]any)["spec"].(map[string]any)["properties"].(map[string]any)
	resources := spec["resources"].(map[string]any)["properties"].(map[string]any)
	for _, got := range []map[string]any{
		resources["limits"].(map[string]any)["additionalProperties"].(map[string]any),
		resources["requests"].(map[string]any)["additionalProperties"].(map[string]any),
		spec["emptyDir"].(map[string]any)["properties"].(map[string]any)["sizeLimit"].(map[string]any),
	} {
		rules, _ := got["x-kubernetes-validations"].([]any)
		if _, ok := got["pattern"]; ok || got["maxLength"] != maxQuantityLength || len(rules) != 1 || !reflect.DeepEqual(rules[0], quantityRule) {
			t.Errorf("quantity %v, want the rule, a maxLength and no pattern", got)
		}
	}
	if got := resources["limits"].(map[string]any)["maxProperties"]; got != maxResources {
		t.Errorf("limits' maxProperties %v, want %d", got, maxResources)
	}
	if got := spec["divisor"].(map[string]any); got["pattern"] != quantityPattern || got["x-kubernetes-validations"] != nil {
		t.Errorf("divisor %v, want the pattern kept", got)
	}
	if got := spec["podLabels"].(map[string]any)["additionalProperties"].(map[string]any)["maxLength"]; got != 63 {
		t.Errorf("podLabels' values have maxLength %v, want 63", got)
	}
}
