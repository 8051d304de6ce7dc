package conversion

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// FuzzConversionFitsTheAPIServer converts random v1beta1 Robots, made from
// the CRD's schema as the API server could store them (schemaFuzzer) with an
// annotation of up to the API server's limit beside, to v1alpha1 and back,
// and checks each answer as the API server checks a write: its metadata by
// apimachinery's ValidateObjectMeta, the rest by the CRD's structural
// schema and CEL rules, with no field it would prune. When the v1alpha1
// form fits, the round trip loses nothing; when it does not, the answer
// says so (too_large) and leaves the Robot's own annotations as they are.
// Its seeds are in testdata/fuzz/FuzzConversionFitsTheAPIServer, so that go
// test runs them; make fuzz runs it for FUZZTIME.
func FuzzConversionFitsTheAPIServer(f *testing.F) {
	f.Add(uint64(1), uint32(0))
	f.Add(uint64(2), uint32(262000))
	rules := robotRules(f)
	schemas := robotSchemas(f)
	f.Fuzz(func(t *testing.T, seed uint64, annotationBytes uint32) {
		fuzzer := &schemaFuzzer{rand: rand.New(rand.NewPCG(seed, uint64(annotationBytes)))}
		robot := fuzzer.robot("v1beta1", schemas["v1beta1"], 0)
		fitTheCRDsRules(robot)
		metadata := robot["metadata"].(map[string]any)
		// One annotation beside the fuzzer's, of up to what the API
		// server admits in all.
		metadata["annotations"].(map[string]any)["example.com/note"] = strings.Repeat("n", int(annotationBytes%(256<<10-64)))
		raw, err := json.Marshal(robot)
		if err != nil {
			t.Fatal(err)
		}
		original, err := rules["v1beta1"].stored(raw)
		if err != nil {
			t.Fatal(err)
		}
		if refused := apiServerRefuses(rules["v1beta1"], original); len(refused) > 0 {
			t.Skipf("the API server would not store the Robot the fuzzer made: %v", refused.ToAggregate())
		}

		alpha, ignored, err := Convert(original, "robot.dev/v1alpha1")
		if err != nil {
			t.Fatalf("to v1alpha1: %v\n%.2000s", err, original)
		}
		if refused := apiServerRefuses(rules["v1alpha1"], alpha); len(refused) > 0 {
			t.Fatalf("the API server would refuse the v1alpha1 answer: %v\n%.2000s", refused.ToAggregate(), alpha)
		}
		if ignored != nil && ignored.Reason != IgnoredTooLarge {
			t.Fatalf("to v1alpha1, told %+v", ignored)
		}
		back, backIgnored, err := Convert(alpha, "robot.dev/v1beta1")
		if err != nil || backIgnored != nil {
			t.Fatalf("back to v1beta1: error %v, ignored %+v\n%.2000s", err, backIgnored, alpha)
		}
		if refused := apiServerRefuses(rules["v1beta1"], back); len(refused) > 0 {
			t.Fatalf("the API server would refuse the v1beta1 answer: %v\n%.2000s", refused.ToAggregate(), back)
		}
		var want, got map[string]any
		want, _ = normalized(t, original).(map[string]any)
		got, _ = normalized(t, back).(map[string]any)
		if ignored == nil {
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("v1beta1 → v1alpha1 → v1beta1 lost something:\noriginal: %.2000s\nback:     %.2000s", original, back)
			}
			return
		}
		// Left out: the Robot's own annotations are as they were, and the
		// answer is what the API server would refuse with the annotation.
		if !reflect.DeepEqual(field(want, "metadata", "annotations"), field(got, "metadata", "annotations")) {
			t.Errorf("the Robot's own annotations changed through v1alpha1")
		}
		if !strings.Contains(ignored.Err.Error(), "Too long") {
			t.Errorf("left out for %v, want the annotations' size", ignored.Err)
		}
	})
}

// apiServerRefuses returns what the API server would refuse in a write of
// raw: its metadata by apimachinery's own validation, the rest by the CRD's
// rules of its version.
func apiServerRefuses(rules *crdRules, raw []byte) fieldpath.ErrorList {
	var object struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &object); err != nil {
		return fieldpath.ErrorList{fieldpath.InternalError(nil, err)}
	}
	refused := apivalidation.ValidateObjectMeta(&object.Metadata, true, apivalidation.NameIsDNSSubdomain, fieldpath.NewPath("metadata"))
	if _, ok := object.Metadata.Annotations[robotv1alpha1.ConversionDataAnnotation]; ok && strings.Contains(string(raw), `"apiVersion":"robot.dev/v1beta1"`) {
		refused = append(refused, fieldpath.Forbidden(fieldpath.NewPath("metadata", "annotations"), "the conversion's annotation on a v1beta1 Robot"))
	}
	return append(refused, rules.check(raw)...)
}

// fitTheCRDsRules keeps of a Robot from schemaFuzzer the fields that the
// conversion moves between the versions, image (required) and resources
// (quantities Go cannot parse), and takes out what of them the CRD's CEL
// rules refuse and the fuzzer does not know of:
// volume mounts of volumes the Robot does not have. The status goes: its
// patterns are not the fuzzer's, and the conversion passes it through.
func fitTheCRDsRules(robot map[string]any) {
	delete(robot, "status")
	spec := robot["spec"].(map[string]any)
	for key := range spec {
		switch key {
		case "image", "ports", fieldPlacement, "resources", "strategy", fieldMinReady, fieldService, "initContainers", "sidecars", "terminationGracePeriodSeconds", "preStop":
		default:
			delete(spec, key)
		}
	}
	for _, list := range []string{"initContainers", "sidecars"} {
		for _, item := range asList(spec[list]) {
			delete(item.(map[string]any), "volumeMounts")
		}
	}
}
