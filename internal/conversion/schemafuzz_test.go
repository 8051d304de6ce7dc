package conversion

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// quantityPattern is the pattern the CRD gives every quantity. It admits
// values such as 1e1.5 that Go's resource.ParseQuantity refuses.
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

// quantityRegexp is quantityPattern, compiled.
var quantityRegexp = regexp.MustCompile(quantityPattern)

// schemaFuzzer makes random Robots from the CRD's own schema: every field it
// declares, with the types, enums, bounds, list sizes and quantity pattern
// it says, as the API server could store them (not its CEL rules, except
// those the conversion relies on, below).
type schemaFuzzer struct {
	rand *rand.Rand
	// quantities counts the quantities made that Go cannot parse.
	quantities, unparsable int
}

// maxDepth bounds how deep the fuzzer goes into optional fields, to keep a
// Robot (probes, affinities, projected volumes) small.
const maxDepth = 9

// value returns a random value of schema.
func (f *schemaFuzzer) value(schema *apiextensionsv1.JSONSchemaProps, depth int) any {
	switch {
	case schema.XIntOrString:
		if isQuantity(schema) {
			return f.quantity()
		}
		if f.rand.IntN(2) == 0 {
			return json.Number(fmt.Sprint(f.rand.IntN(5)))
		}
		return fmt.Sprintf("%d%%", 5*f.rand.IntN(21))
	case len(schema.Enum) > 0:
		var value any
		_ = json.Unmarshal(schema.Enum[f.rand.IntN(len(schema.Enum))].Raw, &value)
		return value
	}
	switch schema.Type {
	case "object":
		object := map[string]any{}
		switch {
		case len(schema.Properties) > 0:
			for name, property := range schema.Properties {
				required := false
				for _, r := range schema.Required {
					required = required || r == name
				}
				if required || (depth < maxDepth && f.rand.IntN(3) == 0) {
					object[name] = f.value(&property, depth+1)
				}
			}
		case schema.AdditionalProperties != nil && schema.AdditionalProperties.Schema != nil:
			for i := range 1 + f.rand.IntN(2) {
				object[fmt.Sprintf("key-%d", i)] = f.value(schema.AdditionalProperties.Schema, depth+1)
			}
		}
		return object
	case "array":
		n := 1 + f.rand.IntN(3)
		if schema.MaxItems != nil {
			n = min(n, int(*schema.MaxItems))
		}
		var items []any
		keys := map[string]bool{}
		for range n {
			item := f.value(schema.Items.Schema, depth+1)
			if len(schema.XListMapKeys) > 0 {
				// A list-map holds one item per key.
				object, _ := item.(map[string]any)
				key := fmt.Sprint(object[schema.XListMapKeys[0]])
				if keys[key] {
					continue
				}
				keys[key] = true
			}
			items = append(items, item)
		}
		return items
	case "integer":
		low, high := int64(-1000), int64(1<<40)
		if schema.Format == "int32" {
			high = 1 << 30
		}
		if schema.Minimum != nil {
			low = int64(*schema.Minimum)
		}
		if schema.Maximum != nil {
			high = int64(*schema.Maximum)
		}
		return json.Number(fmt.Sprint(low + f.rand.Int64N(high-low+1)))
	case "number":
		return json.Number(fmt.Sprintf("%.3f", f.rand.Float64()*100))
	case "boolean":
		return f.rand.IntN(2) == 0
	case "string":
		if schema.Format == "date-time" {
			return "2026-11-25T12:00:00Z"
		}
		n := 1 + f.rand.IntN(12)
		if schema.MaxLength != nil {
			n = min(n, int(*schema.MaxLength))
		}
		const letters = "abcdefghijklmnopqrstuvwxyz0123456789-"
		var b strings.Builder
		b.WriteByte('a')
		for range n - 1 {
			b.WriteByte(letters[f.rand.IntN(len(letters))])
		}
		return b.String()
	}
	return map[string]any{} // x-kubernetes-preserve-unknown-fields and the like
}

// quantity returns a string that matches quantityPattern, often one that Go
// cannot parse (an exponent with a fraction, 1e1.5), or an integer.
func (f *schemaFuzzer) quantity() any {
	if f.rand.IntN(5) == 0 {
		return json.Number(fmt.Sprint(f.rand.IntN(64)))
	}
	number := func() string {
		switch f.rand.IntN(3) {
		case 0:
			return fmt.Sprint(f.rand.IntN(1000))
		case 1:
			return fmt.Sprintf("%d.%d", f.rand.IntN(100), f.rand.IntN(100))
		}
		return fmt.Sprintf(".%d", f.rand.IntN(100))
	}
	value := []string{"", "+", "-"}[f.rand.IntN(3)] + number()
	switch f.rand.IntN(4) {
	case 0:
		value += []string{"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}[f.rand.IntN(6)]
	case 1:
		value += []string{"n", "u", "m", "k", "M", "G", "T", "P", "E"}[f.rand.IntN(9)]
	case 2:
		value += []string{"e", "E"}[f.rand.IntN(2)] + []string{"", "+", "-"}[f.rand.IntN(3)] + number()
	}
	f.quantities++
	if _, err := resource.ParseQuantity(value); err != nil {
		f.unparsable++
	}
	return value
}

// robot returns a random Robot of version, as JSON.
func (f *schemaFuzzer) robot(version string, schema *apiextensionsv1.JSONSchemaProps, i int) map[string]any {
	spec := f.value(ptr(schema.Properties["spec"]), 1).(map[string]any)
	if version == "v1beta1" {
		f.validBeta(spec)
	}
	robot := map[string]any{
		"apiVersion": "robot.dev/" + version,
		"kind":       "Robot",
		"metadata": map[string]any{
			"name": fmt.Sprintf("robot-%d", i), "namespace": "team", "uid": fmt.Sprintf("uid-%d", i), "resourceVersion": "1",
			"annotations": map[string]any{"owner": "team-a"},
		},
		"spec": spec,
	}
	if f.rand.IntN(2) == 0 {
		robot["status"] = f.value(ptr(schema.Properties["status"]), 1)
	}
	return robot
}

// validBeta makes what v1alpha1 keeps in its annotation valid by v1beta1's
// CEL rules, which the API server checks on every v1beta1 write and the
// fuzzer does not read: the conversion back restores only valid values.
func (f *schemaFuzzer) validBeta(spec map[string]any) {
	if ports, ok := spec["ports"].([]any); ok {
		// A nodePort only for a type that opens ports on the nodes.
		service, _ := spec["service"].(map[string]any)
		serviceType, _ := service["type"].(string)
		nodePorts := serviceType == "NodePort" || serviceType == "LoadBalancer"
		seen := map[string]bool{}
		var valid []any
		for i, item := range ports {
			port := item.(map[string]any)
			port["name"] = []string{"http", "metrics", "grpc", "admin"}[f.rand.IntN(4)]
			if i == 0 && f.rand.IntN(2) == 0 {
				port["name"], port["protocol"] = "http", "TCP" // what v1alpha1's port holds alone
				if f.rand.IntN(2) == 0 {
					delete(port, "servicePort")
					delete(port, "nodePort")
				}
			}
			if !nodePorts {
				delete(port, "nodePort")
			}
			key := fmt.Sprint(port["containerPort"], port["protocol"])
			servicePort := port["containerPort"]
			if number, ok := port["servicePort"]; ok {
				servicePort = number
			}
			serviceKey := fmt.Sprint("service ", servicePort, port["protocol"])
			nodeKey := fmt.Sprint("node ", port["nodePort"], port["protocol"])
			if seen[port["name"].(string)] || seen[key] || seen[serviceKey] || (port["nodePort"] != nil && seen[nodeKey]) ||
				len(validation.IsValidPortName(port["name"].(string))) > 0 {
				continue
			}
			seen[port["name"].(string)], seen[key], seen[serviceKey], seen[nodeKey] = true, true, true, true
			valid = append(valid, port)
		}
		spec["ports"] = valid
	}
	if strategy, ok := spec["strategy"].(map[string]any); ok {
		if strategy["type"] == "Recreate" {
			delete(strategy, "rollingUpdate")
		}
		if rolling, ok := strategy["rollingUpdate"].(map[string]any); ok {
			rolling["maxSurge"] = json.Number("1")
		}
	}
	if service, ok := spec["service"].(map[string]any); ok {
		f.validService(service)
	}
	// An empty placement is no placement, which v1alpha1 cannot tell apart.
	if placement, ok := spec["placement"].(map[string]any); ok && len(placement) == 0 {
		delete(spec, "placement")
	}
	// v1alpha1 has no minReadySeconds, and 0 is its default: unset.
	if spec["minReadySeconds"] == json.Number("0") {
		delete(spec, "minReadySeconds")
	}
	f.validContainers(spec)
	f.validShutdown(spec)
}

// validContainers makes the init containers and sidecars what v1beta1's
// rules admit: container names of their own (DNS labels, not robot), image
// references, sidecar
// ports named as no other port of the pod, each number once, limits at
// least their requests, env sources of one kind, probes of one action. Their
// quantities are made ones Go can parse: the annotation is read back into
// the Go types, which check it, and a quantity Go cannot parse makes it
// ignored. The CRD refuses such a quantity of cpu, memory and
// ephemeral-storage; one of another resource the operator reports as an
// invalid spec all the same.
func (f *schemaFuzzer) validContainers(spec map[string]any) {
	n := 0
	valid := func(container map[string]any) {
		container["name"] = fmt.Sprintf("c%d", n)
		container["image"] = fmt.Sprintf("registry.example:5000/c%d:%d", n, f.rand.IntN(10))
		n++
		parsableQuantities(container)
		// A limit is at least its request.
		if resources, ok := container["resources"].(map[string]any); ok {
			limits, _ := resources["limits"].(map[string]any)
			requests, _ := resources["requests"].(map[string]any)
			for name := range limits {
				if request, ok := requests[name]; ok {
					limits[name] = request
				}
			}
		}
		// A variable has a value or one source; an envFrom entry one
		// source.
		for _, item := range asList(container["env"]) {
			if e := item.(map[string]any); e["valueFrom"] != nil {
				delete(e, "value")
				e["valueFrom"] = map[string]any{"secretKeyRef": map[string]any{"key": "k"}}
			}
		}
		for _, item := range asList(container["envFrom"]) {
			e := item.(map[string]any)
			if _, ok := e["configMapRef"]; !ok || e["secretRef"] != nil {
				delete(e, "configMapRef")
				e["secretRef"] = map[string]any{}
			}
		}
		// A probe has exactly one action.
		for _, name := range []string{"readinessProbe", "livenessProbe", "startupProbe"} {
			if _, ok := container[name]; ok {
				container[name] = map[string]any{"exec": map[string]any{"command": []any{"check"}}}
			}
		}
	}
	for _, item := range asList(spec["initContainers"]) {
		valid(item.(map[string]any))
	}
	for i, item := range asList(spec["sidecars"]) {
		sidecar := item.(map[string]any)
		valid(sidecar)
		for j, p := range asList(sidecar["ports"]) {
			port := p.(map[string]any)
			port["name"] = fmt.Sprintf("side%d-%d", i, j)
			port["containerPort"] = json.Number(fmt.Sprint(20000 + j))
			// Not on the Service: the CRD refuses both.
			delete(port, "servicePort")
			delete(port, "nodePort")
		}
	}
}

// validShutdown makes preStop one of sleep and exec, and a sleep below the
// grace period.
func (f *schemaFuzzer) validShutdown(spec map[string]any) {
	preStop, ok := spec["preStop"].(map[string]any)
	if !ok {
		return
	}
	if _, ok := preStop["exec"]; ok && f.rand.IntN(2) == 0 {
		delete(preStop, "sleep")
		return
	}
	delete(preStop, "exec")
	grace := int64(30)
	if value, ok := spec["terminationGracePeriodSeconds"].(json.Number); ok {
		grace, _ = value.Int64()
	}
	if grace < 2 {
		grace = 2
		spec["terminationGracePeriodSeconds"] = json.Number("2")
	}
	preStop["sleep"] = map[string]any{"seconds": json.Number(fmt.Sprint(1 + f.rand.Int64N(grace-1)))}
}

// parsableQuantities replaces, anywhere in value, a string that looks like
// a quantity and that Go cannot parse with one it can.
func parsableQuantities(value any) {
	switch value := value.(type) {
	case map[string]any:
		for key, item := range value {
			if text, ok := item.(string); ok && quantityRegexp.MatchString(text) {
				if _, err := resource.ParseQuantity(text); err != nil {
					value[key] = "1500m"
				}
				continue
			}
			parsableQuantities(item)
		}
	case []any:
		for _, item := range value {
			parsableQuantities(item)
		}
	}
}

// asList is value as a JSON list, nil if it is none.
func asList(value any) []any {
	list, _ := value.([]any)
	return list
}

// validService makes spec.service what v1beta1's rules admit: keys, values,
// CIDRs and a class of the right syntax, and only the fields its type can
// take (the conversion back drops the others, as the API server drops a
// Service's when its type changes).
func (f *schemaFuzzer) validService(service map[string]any) {
	if labels, ok := service["labels"].(map[string]any); ok {
		for key := range labels {
			labels[key] = []string{"", "blue", "a.b-c_d"}[f.rand.IntN(3)]
		}
	}
	if ranges, ok := service["loadBalancerSourceRanges"].([]any); ok {
		for i := range ranges {
			ranges[i] = []string{"10.0.0.0/8", "192.168.1.0/24", "2001:db8::/32"}[f.rand.IntN(3)]
		}
	}
	if _, ok := service["loadBalancerClass"]; ok {
		service["loadBalancerClass"] = []string{"example.com/internal", "lb"}[f.rand.IntN(2)]
	}
	switch service["type"] {
	case "LoadBalancer":
		return
	case "NodePort":
	default:
		delete(service, "externalTrafficPolicy")
	}
	delete(service, "loadBalancerSourceRanges")
	delete(service, "loadBalancerClass")
}

func ptr[T any](v T) *T { return &v }

// normalized returns raw decoded with numbers kept as written.
func normalized(t *testing.T, raw []byte) any {
	t.Helper()
	var value any
	decoder := json.NewDecoder(strings.NewReader(string(raw)))
	decoder.UseNumber()
	if err := decoder.Decode(&value); err != nil {
		t.Fatal(err)
	}
	return value
}

// TestSchemaFuzzRoundTrips: random Robots made from the CRD's schema, with
// quantities Go cannot parse among them, convert through the webhook's
// handler to the other version and back, with nothing lost, in batches as
// the API server sends them.
func TestSchemaFuzzRoundTrips(t *testing.T) {
	schemas := robotSchemas(t)
	f := &schemaFuzzer{rand: rand.New(rand.NewPCG(28, 1))}
	const batches, perBatch = 50, 10
	// How many v1beta1 Robots had each field the annotation alone keeps:
	// the round trips prove nothing of a field the fuzzer never makes.
	kept := map[string]int{}
	portFields := []string{"servicePort", "nodePort"}
	t.Cleanup(func() {
		for _, field := range keptFields {
			if kept[field] == 0 {
				t.Errorf("no v1beta1 Robot of %d had %s", batches*perBatch, field)
			}
		}
		for _, field := range portFields {
			if kept["ports."+field] == 0 {
				t.Errorf("no v1beta1 Robot of %d had a port with %s", batches*perBatch, field)
			}
		}
	})
	for _, direction := range []struct{ from, to string }{{"v1alpha1", "v1beta1"}, {"v1beta1", "v1alpha1"}} {
		for batch := range batches {
			var originals []string
			for i := range perBatch {
				robot := f.robot(direction.from, schemas[direction.from], batch*perBatch+i)
				if direction.from == "v1beta1" {
					for _, field := range keptFields {
						if present(robot["spec"].(map[string]any), field) {
							kept[field]++
						}
					}
					for _, port := range asList(robot["spec"].(map[string]any)["ports"]) {
						for _, field := range portFields {
							if present(port.(map[string]any), field) {
								kept["ports."+field]++
							}
						}
					}
				}
				raw, err := json.Marshal(robot)
				if err != nil {
					t.Fatal(err)
				}
				originals = append(originals, string(raw))
			}
			_, there, observed := post(t, "robot.dev/"+direction.to, originals...)
			if there.Response.Result.Status != "Success" {
				t.Fatalf("%s → %s: %s\nfirst Robot: %s", direction.from, direction.to, there.Response.Result.Message, originals[0])
			}
			for _, o := range observed {
				if strings.HasPrefix(string(o.result), "ignored") {
					t.Errorf("%s → %s: an annotation was ignored", direction.from, direction.to)
				}
			}
			var converted []string
			for _, object := range there.Response.ConvertedObjects {
				converted = append(converted, string(object.Raw))
			}
			_, back, _ := post(t, "robot.dev/"+direction.from, converted...)
			if back.Response.Result.Status != "Success" {
				t.Fatalf("%s → %s → %s: %s", direction.from, direction.to, direction.from, back.Response.Result.Message)
			}
			for i, object := range back.Response.ConvertedObjects {
				want, got := normalized(t, []byte(originals[i])), normalized(t, object.Raw)
				if !reflect.DeepEqual(want, got) {
					t.Fatalf("%s → %s → %s lost something:\noriginal:  %s\nconverted: %s\nback:      %s", direction.from, direction.to, direction.from, originals[i], converted[i], object.Raw)
				}
			}
		}
	}
	if f.unparsable == 0 || f.unparsable == f.quantities {
		t.Errorf("%d of %d quantities Go cannot parse: want some, not all", f.unparsable, f.quantities)
	}
	t.Logf("%d quantities, %d of them Go cannot parse", f.quantities, f.unparsable)
}

// isQuantity reports whether schema is a quantity's: one with the pattern
// controller-gen gives it, or the rule hack/trimcrd puts in its place.
func isQuantity(schema *apiextensionsv1.JSONSchemaProps) bool {
	if !schema.XIntOrString {
		return false
	}
	if schema.Pattern == quantityPattern {
		return true
	}
	return slices.ContainsFunc(schema.XValidations, func(rule apiextensionsv1.ValidationRule) bool {
		return strings.Contains(rule.Rule, "isQuantity(self)")
	})
}

// TestQuantityPatternIsTheCRDs: the fuzzer makes its quantities for the
// pattern the CRD has, and they match it. The quantities the Robot's
// containers ask for are checked by a rule instead, which is stricter.
func TestQuantityPatternIsTheCRDs(t *testing.T) {
	spec := robotSchemas(t)["v1beta1"].Properties["spec"]
	divisor := spec.Properties["env"].Items.Schema.Properties["valueFrom"].Properties["resourceFieldRef"].Properties["divisor"]
	if divisor.Pattern != quantityPattern {
		t.Fatalf("the CRD's quantity pattern is %s, the fuzzer's %s", divisor.Pattern, quantityPattern)
	}
	limits := spec.Properties["resources"].Properties["limits"].AdditionalProperties.Schema
	if !isQuantity(limits) || limits.Pattern != "" {
		t.Fatalf("the CRD checks the quantities of limits with pattern %q and rules %v, want hack/trimcrd's rule", limits.Pattern, limits.XValidations)
	}
	pattern := regexp.MustCompile(quantityPattern)
	f := &schemaFuzzer{rand: rand.New(rand.NewPCG(1, 2))}
	for range 1000 {
		if value, ok := f.quantity().(string); ok && !pattern.MatchString(value) {
			t.Fatalf("the fuzzer made %q, which the CRD's pattern refuses", value)
		}
	}
	if !pattern.MatchString("1e1.5") {
		t.Fatal("the pattern refuses 1e1.5")
	}
	if _, err := resource.ParseQuantity("1e1.5"); err == nil {
		t.Fatal("Go parses 1e1.5")
	}
}
