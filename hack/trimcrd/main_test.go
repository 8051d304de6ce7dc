package main

import (
	"os"
	"path/filepath"
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
