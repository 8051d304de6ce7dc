/*
Copyright The robot-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command trimcrd removes the descriptions from the schemas of some versions
// of a generated CRD, in place:
//
//	go run ./hack/trimcrd artifacts/crd/robot.dev_robots.yaml v1alpha1
//
// kubectl apply (client-side, as `kubectl apply -k artifacts/deploy` does)
// keeps a copy of the whole object in an annotation, and annotations may
// not exceed 256 KiB. The Robot CRD carries the schema of each version, with
// Kubernetes' own long descriptions inside every core type it embeds, and
// outgrew that. The descriptions of v1beta1, the version the API server
// prefers and `kubectl explain` shows, are kept; those of v1alpha1, served
// for the clients written against it, are dropped. Its schema validates as
// before: only the descriptions go. The rest of the file is written as
// controller-gen writes it.
package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: trimcrd CRD-FILE VERSION...")
		os.Exit(2)
	}
	if err := trim(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "trimcrd:", err)
		os.Exit(1)
	}
}

// documentStart is what controller-gen writes before the CRD.
const documentStart = "---\n"

func trim(path string, versions []string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(bytes.TrimPrefix(data, []byte(documentStart)), &crd); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	spec, _ := crd["spec"].(map[string]any)
	served, _ := spec["versions"].([]any)
	found := 0
	for _, item := range served {
		version, _ := item.(map[string]any)
		if !slices.Contains(versions, fmt.Sprint(version["name"])) {
			continue
		}
		schema, _ := version["schema"].(map[string]any)
		root, ok := schema["openAPIV3Schema"].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: version %v has no openAPIV3Schema", path, version["name"])
		}
		dropDescriptions(root)
		found++
	}
	if found != len(versions) {
		return fmt.Errorf("%s: found %d of the versions %v", path, found, versions)
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(documentStart), out...), 0o644)
}

// dropDescriptions removes the description of schema and of every schema
// inside it. A property named "description" is a field, not a description,
// and stays.
func dropDescriptions(schema map[string]any) {
	delete(schema, "description")
	if properties, ok := schema["properties"].(map[string]any); ok {
		for _, property := range properties {
			if p, ok := property.(map[string]any); ok {
				dropDescriptions(p)
			}
		}
	}
	for _, key := range []string{"items", "additionalProperties", "not"} {
		if inner, ok := schema[key].(map[string]any); ok {
			dropDescriptions(inner)
		}
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := schema[key].([]any); ok {
			for _, item := range list {
				if inner, ok := item.(map[string]any); ok {
					dropDescriptions(inner)
				}
			}
		}
	}
}
