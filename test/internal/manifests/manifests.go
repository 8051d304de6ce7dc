// Package manifests renders and compares Kubernetes manifests for the
// tests under test/ that check what the chart and the release files hold:
// it runs the tools (helm, kubectl kustomize) and parses what they print.
package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Tool returns the path that the environment variable env gives a tool,
// failing the test, which target sets it for, when it is not set.
func Tool(t testing.TB, env, target string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		t.Fatalf("$%s is not set: run these tests with make %s", env, target)
	}
	return path
}

// Run runs name with args and returns what it printed on its standard
// output, failing the test with both outputs when it fails.
func Run(t testing.TB, name string, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// Objects parses a stream of YAML or JSON documents, keyed by kind,
// namespace and name. An object rendered twice, or none at all, fails the
// test.
func Objects(t testing.TB, data []byte) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var object map[string]any
		if err := decoder.Decode(&object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("parsing the rendered objects: %v", err)
		}
		if object == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: object}
		key := fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
		if _, dup := out[key]; dup {
			t.Errorf("%s is rendered twice", key)
		}
		out[key] = u
	}
	if len(out) == 0 {
		t.Fatal("no objects rendered")
	}
	return out
}

// Indent returns v as indented JSON, one field a line, so that two
// objects' renderings compare line by line.
func Indent(t testing.TB, v any) string {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// FirstDifference shows where two renderings, named aName and bName, first
// part: a few lines of each from there.
func FirstDifference(aName, a, bName, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	i := 0
	for i < len(x) && i < len(y) && x[i] == y[i] {
		i++
	}
	window := func(lines []string) string { return strings.Join(lines[max(0, i-3):min(len(lines), i+4)], "\n") }
	return fmt.Sprintf("from line %d, %s:\n%s\n%s:\n%s", i+1, aName, window(x), bName, window(y))
}
