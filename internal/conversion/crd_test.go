package conversion

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	celvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// crdPath is the generated CRD, relative to this package.
const crdPath = "../../artifacts/crd/robot.dev_robots.yaml"

// robotSchemas returns the CRD's schema of each version, by name.
func robotSchemas(t testing.TB) map[string]*apiextensionsv1.JSONSchemaProps {
	t.Helper()
	file, err := os.Open(crdPath)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := utilyaml.NewYAMLOrJSONDecoder(file, 4096).Decode(&crd); err != nil {
		t.Fatalf("reading %s: %v", crdPath, err)
	}
	schemas := map[string]*apiextensionsv1.JSONSchemaProps{}
	for _, version := range crd.Spec.Versions {
		schemas[version.Name] = version.Schema.OpenAPIV3Schema
	}
	if len(schemas) != 2 {
		t.Fatalf("the CRD has versions %v, want v1alpha1 and v1beta1", slices.Collect(maps.Keys(schemas)))
	}
	return schemas
}

// TestShapesMatchTheCRD: the keys the conversion accepts, read from the Go
// types, are exactly the CRD's properties, in every object of both
// versions. A field added to the types and not to the CRD (codegen not run),
// or the other way round, fails here.
func TestShapesMatchTheCRD(t *testing.T) {
	schemas := robotSchemas(t)
	for version, robot := range map[string]reflect.Type{
		"v1alpha1": reflect.TypeFor[robotv1alpha1.Robot](),
		"v1beta1":  reflect.TypeFor[robotv1beta1.Robot](),
	} {
		var mismatches []string
		compareShape(schemas[version], shapeOf(robot), version, &mismatches)
		if len(mismatches) > 0 {
			t.Errorf("the Go types and the CRD differ:\n%s", strings.Join(mismatches, "\n"))
		}
	}
}

func compareShape(schema *apiextensionsv1.JSONSchemaProps, s *shape, path string, mismatches *[]string) {
	if path == "v1alpha1.metadata" || path == "v1beta1.metadata" {
		return // passed through, not checked
	}
	switch {
	case len(schema.Properties) > 0 || s.fields != nil:
		crd := slices.Sorted(maps.Keys(schema.Properties))
		types := slices.Sorted(maps.Keys(s.fields))
		if !slices.Equal(crd, types) {
			*mismatches = append(*mismatches, path+": the CRD has "+strings.Join(crd, ",")+"; the Go type "+strings.Join(types, ","))
			return
		}
		for _, name := range crd {
			property := schema.Properties[name]
			compareShape(&property, s.fields[name], path+"."+name, mismatches)
		}
	case schema.Items != nil && schema.Items.Schema != nil:
		if s.elem == nil || s.isMap {
			*mismatches = append(*mismatches, path+": a list in the CRD, not in the Go type")
			return
		}
		compareShape(schema.Items.Schema, s.elem, path+"[]", mismatches)
	case schema.AdditionalProperties != nil && schema.AdditionalProperties.Schema != nil:
		if !s.isMap {
			*mismatches = append(*mismatches, path+": a map in the CRD, not in the Go type")
			return
		}
		compareShape(schema.AdditionalProperties.Schema, s.elem, path+"{}", mismatches)
	}
}

// TestValidationMatchesTheCRD: the bounds that pkg/apis/robot/v1beta1's
// validation repeats in Go, to check what the conversion restores and what
// the operator builds, are the CRD's.
func TestValidationMatchesTheCRD(t *testing.T) {
	spec := robotSchemas(t)["v1beta1"].Properties["spec"]
	ports := spec.Properties["ports"]
	if ports.MaxItems == nil || *ports.MaxItems != robotv1beta1.MaxPorts {
		t.Errorf("spec.ports maxItems %v, MaxPorts %d", ports.MaxItems, robotv1beta1.MaxPorts)
	}
	port := ports.Items.Schema.Properties
	if number := port["containerPort"]; *number.Minimum != 1 || *number.Maximum != 65535 {
		t.Errorf("containerPort between %v and %v, the validation says 1 and 65535", *number.Minimum, *number.Maximum)
	}
	for _, name := range []string{"servicePort", "nodePort"} {
		if number := port[name]; number.Minimum == nil || number.Maximum == nil || *number.Minimum != 1 || *number.Maximum != 65535 {
			t.Errorf("%s between %v and %v, the validation says 1 and 65535", name, number.Minimum, number.Maximum)
		}
	}
	if got := enum(port["protocol"]); !slices.Equal(got, []string{"SCTP", "TCP", "UDP"}) {
		t.Errorf("protocol enum %v, the validation allows SCTP, TCP, UDP", got)
	}
	if name := port["name"]; *name.MaxLength != 15 {
		t.Errorf("a port name's maxLength is %d, IANA's 15", *name.MaxLength)
	}
	if seconds := spec.Properties["minReadySeconds"]; *seconds.Minimum != 0 || *seconds.Maximum != robotv1beta1.MaxMinReadySeconds {
		t.Errorf("minReadySeconds between %v and %v, the validation says 0 and %d", *seconds.Minimum, *seconds.Maximum, robotv1beta1.MaxMinReadySeconds)
	}
	if got := enum(spec.Properties["strategy"].Properties["type"]); !slices.Equal(got, []string{string(robotv1beta1.StrategyRecreate), string(robotv1beta1.StrategyRollingUpdate)}) {
		t.Errorf("strategy.type enum %v, the validation allows Recreate and RollingUpdate", got)
	}
	if n := spec.Properties["initContainers"].MaxItems; n == nil || *n != robotv1beta1.MaxInitContainers {
		t.Errorf("spec.initContainers maxItems %v, MaxInitContainers %d", n, robotv1beta1.MaxInitContainers)
	}
	sidecars := spec.Properties["sidecars"]
	if n := sidecars.MaxItems; n == nil || *n != robotv1beta1.MaxSidecars {
		t.Errorf("spec.sidecars maxItems %v, MaxSidecars %d", n, robotv1beta1.MaxSidecars)
	}
	if n := sidecars.Items.Schema.Properties["ports"].MaxItems; n == nil || *n != robotv1beta1.MaxPorts {
		t.Errorf("a sidecar's ports maxItems %v, MaxPorts %d", n, robotv1beta1.MaxPorts)
	}
	for _, container := range []apiextensionsv1.JSONSchemaProps{*spec.Properties["initContainers"].Items.Schema, *sidecars.Items.Schema} {
		if image := container.Properties["image"]; *image.MaxLength != 512 || *image.MinLength != 1 {
			t.Errorf("a container's image is %d to %d characters, the validation says 1 to 512", *image.MinLength, *image.MaxLength)
		}
		for list, want := range map[string]int64{"command": 256, "args": 256, "env": 256, "envFrom": 64, "volumeMounts": 64} {
			if n := container.Properties[list].MaxItems; n == nil || *n != want {
				t.Errorf("a container's %s maxItems %v, the validation says %d", list, n, want)
			}
		}
	}
	if grace := spec.Properties["terminationGracePeriodSeconds"]; *grace.Minimum != 0 || *grace.Maximum != robotv1beta1.MaxTerminationGracePeriodSeconds {
		t.Errorf("terminationGracePeriodSeconds between %v and %v, the validation says 0 and %d", *grace.Minimum, *grace.Maximum, robotv1beta1.MaxTerminationGracePeriodSeconds)
	}
	preStop := spec.Properties["preStop"].Properties
	if seconds := preStop["sleep"].Properties["seconds"]; *seconds.Minimum != 1 || *seconds.Maximum != robotv1beta1.MaxTerminationGracePeriodSeconds-1 {
		t.Errorf("preStop.sleep.seconds between %v and %v, the validation says 1 and %d", *seconds.Minimum, *seconds.Maximum, robotv1beta1.MaxTerminationGracePeriodSeconds-1)
	}
	if command := preStop["exec"].Properties["command"]; *command.MinItems != 1 || *command.MaxItems != 256 {
		t.Errorf("preStop.exec.command has %d to %d items, the validation says 1 to 256", *command.MinItems, *command.MaxItems)
	}
	service := spec.Properties["service"].Properties
	for _, name := range []string{"annotations", "labels"} {
		if got := service[name].MaxProperties; got == nil || *got != robotv1beta1.MaxServiceMetadata {
			t.Errorf("service.%s maxProperties %v, MaxServiceMetadata %d", name, got, robotv1beta1.MaxServiceMetadata)
		}
	}
	if got := service["loadBalancerSourceRanges"].MaxItems; got == nil || *got != robotv1beta1.MaxSourceRanges {
		t.Errorf("service.loadBalancerSourceRanges maxItems %v, MaxSourceRanges %d", got, robotv1beta1.MaxSourceRanges)
	}
	for _, name := range []string{"externalTrafficPolicy", "internalTrafficPolicy"} {
		if got := enum(service[name]); !slices.Equal(got, []string{"Cluster", "Local"}) {
			t.Errorf("service.%s enum %v, the validation allows Cluster and Local", name, got)
		}
	}
	// The rules that keep the operator's own keys out name each of them.
	rules := func(schema apiextensionsv1.JSONSchemaProps) string {
		var all []string
		for _, rule := range schema.XValidations {
			all = append(all, rule.Rule)
		}
		return strings.Join(all, "\n")
	}
	for _, key := range robotv1beta1.ReservedLabels {
		if !strings.Contains(rules(service["labels"]), "'"+key+"'") {
			t.Errorf("no rule of service.labels refuses %s", key)
		}
		if !strings.Contains(rules(spec.Properties["podLabels"]), "'"+key+"'") {
			t.Errorf("no rule of podLabels refuses %s", key)
		}
	}
	// Every image is checked with the expression ValidateImage uses.
	for path, image := range map[string]apiextensionsv1.JSONSchemaProps{
		"spec.image":                  spec.Properties["image"],
		"spec.initContainers[].image": spec.Properties["initContainers"].Items.Schema.Properties["image"],
		"spec.sidecars[].image":       sidecars.Items.Schema.Properties["image"],
	} {
		if !strings.Contains(rules(image), "self.matches(r'"+robotv1beta1.ImageReferencePattern+"')") {
			t.Errorf("no rule of %s matches ImageReferencePattern", path)
		}
	}
	for _, key := range []string{robotv1beta1.AnnotationSpecHash, robotv1beta1.AnnotationLoadBalancerSourceRanges} {
		if !strings.Contains(rules(service["annotations"]), "'"+key+"'") {
			t.Errorf("no rule of service.annotations refuses %s", key)
		}
	}
}

// enum returns a schema's enum values, sorted.
func enum(schema apiextensionsv1.JSONSchemaProps) []string {
	var values []string
	for _, value := range schema.Enum {
		values = append(values, strings.Trim(string(value.Raw), `"`))
	}
	slices.Sort(values)
	return values
}

// TestVersionsDifferOnlyInWhatTheConversionMoves: every field but those the
// conversion moves has the same shape in both versions, down to the
// leaves, status included. The conversion passes those through; a field
// added to one version alone would be dropped by the other's schema without
// a word, so it must be moved by the conversion, and listed here.
func TestVersionsDifferOnlyInWhatTheConversionMoves(t *testing.T) {
	alpha := shapeOf(reflect.TypeFor[robotv1alpha1.Robot]())
	beta := shapeOf(reflect.TypeFor[robotv1beta1.Robot]())
	alphaSpec, betaSpec := maps.Clone(alpha.fields["spec"].fields), maps.Clone(beta.fields["spec"].fields)
	delete(alphaSpec, fieldPort)
	for _, name := range placementFields {
		delete(alphaSpec, name)
	}
	for _, name := range append([]string{fieldPorts, fieldPlacement, fieldStrategy, fieldMinReady}, keptFields...) {
		delete(betaSpec, name)
	}
	betaService := &shape{fields: maps.Clone(betaSpec[fieldService].fields)}
	for _, name := range serviceFields {
		delete(betaService.fields, name)
	}
	betaSpec[fieldService] = betaService
	var differences []string
	sameShape(&shape{fields: alphaSpec}, &shape{fields: betaSpec}, "spec", &differences)
	sameShape(alpha.fields["status"], beta.fields["status"], "status", &differences)
	for _, name := range placementFields {
		sameShape(alpha.fields["spec"].fields[name], beta.fields["spec"].fields[fieldPlacement].fields[name], "spec."+name, &differences)
	}
	if len(differences) > 0 {
		t.Errorf("the versions differ beyond what the conversion moves:\n%s", strings.Join(differences, "\n"))
	}
}

func sameShape(a, b *shape, path string, differences *[]string) {
	if a == nil || b == nil {
		if a != b {
			*differences = append(*differences, path+": in one version only")
		}
		return
	}
	if a.isMap != b.isMap || (a.fields == nil) != (b.fields == nil) || (a.elem == nil) != (b.elem == nil) {
		*differences = append(*differences, path+": of another kind")
		return
	}
	for name := range a.fields {
		if _, ok := b.fields[name]; !ok {
			*differences = append(*differences, path+"."+name+": in v1alpha1 only")
		}
	}
	for name, field := range b.fields {
		other, ok := a.fields[name]
		if !ok {
			*differences = append(*differences, path+"."+name+": in v1beta1 only")
			continue
		}
		if other != field {
			sameShape(other, field, path+"."+name, differences)
		}
	}
	if a.elem != nil && a.elem != b.elem {
		sameShape(a.elem, b.elem, path+"[]", differences)
	}
}

// crdRules checks a Robot of one version as the API server checks a write of
// it: the CRD schema's structural validation and its CEL rules, and that it
// holds no field the API server would prune.
type crdRules struct {
	schema     apiservervalidation.SchemaValidator
	structural *structuralschema.Structural
	cel        *celvalidation.Validator
}

// robotRulesOnce builds the rules of both versions once: compiling the CEL
// rules takes a while, and a fuzz target checks many Robots.
var robotRulesOnce = sync.OnceValues(func() (map[string]*crdRules, error) {
	file, err := os.Open(crdPath)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := utilyaml.NewYAMLOrJSONDecoder(file, 4096).Decode(&crd); err != nil {
		return nil, err
	}
	rules := map[string]*crdRules{}
	for _, version := range crd.Spec.Versions {
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(version.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			return nil, err
		}
		schema, _, err := apiservervalidation.NewSchemaValidator(&internal)
		if err != nil {
			return nil, err
		}
		structural, err := structuralschema.NewStructural(&internal)
		if err != nil {
			return nil, err
		}
		rules[version.Name] = &crdRules{schema: schema, structural: structural, cel: celvalidation.NewValidator(structural, true, celconfig.PerCallLimit)}
	}
	return rules, nil
})

// robotRules returns the rules of each version, by name.
func robotRules(t testing.TB) map[string]*crdRules {
	t.Helper()
	rules, err := robotRulesOnce()
	if err != nil {
		t.Fatalf("reading the CRD's rules from %s: %v", crdPath, err)
	}
	return rules
}

// stored returns raw, a Robot of the rules' version as JSON, with the
// schema's defaults set, as the API server stores it and reads it back.
func (r *crdRules) stored(raw []byte) ([]byte, error) {
	var object map[string]any
	if err := utiljson.Unmarshal(raw, &object); err != nil {
		return nil, err
	}
	structuraldefaulting.Default(object, r.structural)
	return json.Marshal(object)
}

// check returns what the API server would refuse or prune in raw, a Robot
// of the rules' version as JSON, once defaulted.
func (r *crdRules) check(raw []byte) fieldpath.ErrorList {
	var object map[string]any
	if err := utiljson.Unmarshal(raw, &object); err != nil {
		return fieldpath.ErrorList{fieldpath.InternalError(nil, err)}
	}
	structuraldefaulting.Default(object, r.structural)
	refused := apiservervalidation.ValidateCustomResource(nil, object, r.schema)
	celErrors, _ := r.cel.Validate(context.Background(), nil, r.structural, object, nil, celconfig.RuntimeCELCostBudget)
	refused = append(refused, celErrors...)
	for _, path := range structuralpruning.PruneWithOptions(runtime.DeepCopyJSON(object), r.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		refused = append(refused, fieldpath.Forbidden(fieldpath.NewPath(path), "a field the API server prunes"))
	}
	return refused
}
