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
// before: only the descriptions go.
//
// In every version it also says two things of the schema that the Go types'
// markers cannot reach, since they are inside Kubernetes' own types or a
// map's values:
//
//   - A quantity of a container's resources or an emptyDir's sizeLimit is
//     checked by a CEL rule whose message says what a quantity looks
//     like, in place of the pattern controller-gen gives it, whose message
//     would quote the regular expression. The rule is stricter too: it
//     refuses what no Kubernetes client can read (1e1.5), and a negative
//     quantity, which the API server refuses in a pod. A quantity is at
//     most 64 characters, and requests and limits name at most 16
//     resources each, so that the rule's cost is bounded.
//   - A label value is at most 63 characters (maxLength), which bounds the
//     cost of the rules that check the values of podLabels, service.labels
//     and placement.nodeSelector: without it the API server estimates them
//     on values of megabytes and refuses the CRD.
//
// The rest of the file is written as controller-gen writes it.
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
	for _, item := range served {
		version, _ := item.(map[string]any)
		schema, _ := version["schema"].(map[string]any)
		root, _ := schema["openAPIV3Schema"].(map[string]any)
		checkQuantities(root)
		boundLabelValues(root)
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

// quantityPattern is the pattern controller-gen gives every quantity.
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

// quantityRule checks a quantity in place of quantityPattern. Its message
// quotes the value and, for the units of other tools (64MB, 2 cores), says
// how Kubernetes writes them.
var quantityRule = map[string]any{
	"rule": "type(self) == int ? self >= 0 : isQuantity(self) && !self.startsWith('-')",
	"messageExpression": `'must be a quantity such as 128Mi, 1Gi, 500m or 0.5; "' + string(self) + '" is not one' + (` +
		`string(self).matches('^[0-9.]+[kK][bB]$') ? ': write ' + string(self).substring(0, size(string(self)) - 2) + 'k or ' + string(self).substring(0, size(string(self)) - 2) + 'Ki' : ` +
		`string(self).matches('^[0-9.]+[MGTPE][bB]$') ? ': write ' + string(self).substring(0, size(string(self)) - 1) + ' or ' + string(self).substring(0, size(string(self)) - 1) + 'i' : ` +
		`string(self).matches('^-') ? ': it cannot be negative' : ` +
		`string(self).matches('[a-z]{2,}$') ? ': the unit is a suffix of one or two letters (m, k, M, G, Ki, Mi, Gi), and cpu is in cores (1.5 or 1500m)' : '')`,
}

// maxQuantityLength is the length a quantity may have: far more than any
// real one (1.5Gi, 250m, 1e3) needs.
const maxQuantityLength = 64

// maxResources is the number of resources that a container's requests, or
// its limits, may name: cpu, memory, ephemeral-storage, hugepages of a few
// sizes and a few extended resources fit with room to spare.
const maxResources = 16

// checkQuantities replaces quantityPattern with quantityRule in the
// requests and limits of every container's resources and in an emptyDir's
// sizeLimit, inside schema. The other quantities (a resourceFieldRef's
// divisor) keep the pattern: they are deep in lists of lists, where the
// rule's cost, counted for every item each list may have, would exceed the
// API server's budget.
func checkQuantities(schema map[string]any) {
	walk(schema, func(s map[string]any) {
		properties, _ := s["properties"].(map[string]any)
		for name, property := range properties {
			p, _ := property.(map[string]any)
			switch name {
			case "limits", "requests":
				if values, ok := p["additionalProperties"].(map[string]any); ok && isQuantity(values) {
					checkQuantity(values)
					p["maxProperties"] = maxResources
				}
			case "sizeLimit":
				if isQuantity(p) {
					checkQuantity(p)
				}
			}
		}
	})
}

// isQuantity reports whether schema is that of a quantity, as controller-gen
// writes it.
func isQuantity(schema map[string]any) bool {
	return schema["pattern"] == quantityPattern && schema["x-kubernetes-int-or-string"] == true
}

// checkQuantity makes schema, a quantity's, check it with quantityRule.
func checkQuantity(schema map[string]any) {
	delete(schema, "pattern")
	// The bound keeps the rule's cost, which grows with the length of the
	// value, within the API server's budget.
	schema["maxLength"] = maxQuantityLength
	rules, _ := schema["x-kubernetes-validations"].([]any)
	schema["x-kubernetes-validations"] = append(rules, quantityRule)
}

// labelMaps are the maps of labels of a Robot's spec, whose values are
// label values.
var labelMaps = [][]string{{"spec", "podLabels"}, {"spec", "service", "labels"}, {"spec", "placement", "nodeSelector"}}

// boundLabelValues gives the values of each of labelMaps that the schema
// has the length a label value may have.
func boundLabelValues(root map[string]any) {
	for _, path := range labelMaps {
		schema := root
		for _, name := range path {
			properties, _ := schema["properties"].(map[string]any)
			schema, _ = properties[name].(map[string]any)
		}
		if values, ok := schema["additionalProperties"].(map[string]any); ok {
			values["maxLength"] = 63
		}
	}
}

// walk calls visit on schema and on every schema inside it.
func walk(schema map[string]any, visit func(map[string]any)) {
	visit(schema)
	if properties, ok := schema["properties"].(map[string]any); ok {
		for _, property := range properties {
			if p, ok := property.(map[string]any); ok {
				walk(p, visit)
			}
		}
	}
	for _, key := range []string{"items", "additionalProperties", "not"} {
		if inner, ok := schema[key].(map[string]any); ok {
			walk(inner, visit)
		}
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := schema[key].([]any); ok {
			for _, item := range list {
				if inner, ok := item.(map[string]any); ok {
					walk(inner, visit)
				}
			}
		}
	}
}
