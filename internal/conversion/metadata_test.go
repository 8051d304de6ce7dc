package conversion

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// bigRobot returns a v1beta1 Robot with an annotation of size bytes and two
// ports, which v1alpha1 keeps in its conversion-data annotation.
func bigRobot(size int, extraSpec string) string {
	return `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"big","namespace":"tenant-b","uid":"u-big","resourceVersion":"9","annotations":{"big":"` + strings.Repeat("x", size) + `"}},` +
		`"spec":{"image":"registry.example.com/web:1.0","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"metrics","containerPort":9090,"protocol":"TCP"}]` + extraSpec + `}}`
}

// annotationsOf returns the annotations of a Robot as JSON.
func annotationsOf(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	var object struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &object); err != nil {
		t.Fatal(err)
	}
	return object.Metadata.Annotations
}

// TestLeavesOutWhatTheAPIServerWouldRefuse: the API server checks the
// annotations of the webhook's answer as it checks a write's
// (ValidateAnnotations, 256 KiB in all), and fails the whole LIST or WATCH
// when they do not pass. A Robot whose annotations and kept fields would
// not fit is converted to v1alpha1 without the conversion-data annotation,
// and that is told; one that fits keeps it.
func TestLeavesOutWhatTheAPIServerWouldRefuse(t *testing.T) {
	hugeArgs := `,"sidecars":[{"name":"proxy","image":"proxy:1","args":["` + strings.Repeat("a", 300<<10) + `"]}]`
	tests := []struct {
		name     string
		robot    string
		wantKept bool
	}{
		{name: "user annotations just under the limit and a second port", robot: bigRobot(262068, ""), wantKept: false},
		{name: "kept fields alone over the limit", robot: bigRobot(10, hugeArgs), wantKept: false},
		{name: "user annotations and a second port that fit", robot: bigRobot(200<<10, ""), wantKept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ignored, err := Convert([]byte(tt.robot), "robot.dev/v1alpha1")
			if err != nil {
				t.Fatal(err)
			}
			annotations := annotationsOf(t, out)
			if errs := apivalidation.ValidateAnnotations(annotations, fieldpath.NewPath("metadata", "annotations")); len(errs) > 0 {
				t.Fatalf("the API server would refuse the answer: %v", errs.ToAggregate())
			}
			_, kept := annotations[robotv1alpha1.ConversionDataAnnotation]
			if kept != tt.wantKept {
				t.Errorf("conversion-data kept %v, want %v", kept, tt.wantKept)
			}
			if len(annotations["big"]) != len(annotationsOf(t, []byte(tt.robot))["big"]) {
				t.Errorf("the Robot's own annotation changed")
			}
			switch {
			case tt.wantKept && ignored != nil:
				t.Errorf("told %+v, want nothing", ignored)
			case !tt.wantKept && (ignored == nil || ignored.Reason != "too_large"):
				t.Errorf("told %+v, want too_large", ignored)
			}
		})
	}
}

// TestLogsALeftOutAnnotationOnce: the API server converts a Robot at every
// read of v1alpha1, and retries a WATCH many times a second. A Robot whose
// conversion-data is left out is counted each time and logged once per
// resourceVersion, by name.
func TestLogsALeftOutAnnotationOnce(t *testing.T) {
	var told []IgnoreReason
	handler, err := NewHandler(nil, func(reason IgnoreReason) { told = append(told, reason) })
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	logger := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
	body, err := json.Marshal(apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: "r", DesiredAPIVersion: "robot.dev/v1alpha1", Objects: []runtime.RawExtension{{Raw: []byte(bigRobot(262068, ""))}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		serveLogged(t, handler, logger, body)
	}
	if len(told) != 20 || told[0] != "too_large" {
		t.Errorf("told %d times (%v), want 20 too_large", len(told), told[:min(len(told), 1)])
	}
	if len(lines) != 1 {
		t.Fatalf("logged %d lines, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, want := range []string{"tenant-b", `"uid"="u-big"`, `"resourceVersion"="9"`, "too_large"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %s does not say %s", lines[0], want)
		}
	}
}

// TestFailsRatherThanAnswerWhatTheAPIServerRefuses: annotations the API
// server would refuse once the conversion changes them (stored before a
// rule existed) fail the conversion, counted and logged as a failure,
// rather than an answer that the API server refuses with no word of it.
func TestFailsRatherThanAnswerWhatTheAPIServerRefuses(t *testing.T) {
	planted := `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"old","namespace":"team","annotations":{"bad key":"x","robot.dev/conversion-data":"{}"}},"spec":{"image":"x"}}`
	_, _, err := Convert([]byte(planted), "robot.dev/v1alpha1")
	if err == nil || !strings.Contains(err.Error(), "the API server would refuse its metadata") || !strings.Contains(err.Error(), "bad key") {
		t.Errorf("error %v, want the API server's refusal of the annotation key", err)
	}
	unchanged := strings.Replace(planted, `,"robot.dev/conversion-data":"{}"`, ``, 1)
	if _, _, err := Convert([]byte(unchanged), "robot.dev/v1alpha1"); err != nil {
		t.Errorf("annotations the conversion leaves as they are: %v; the API server checks them only when they change", err)
	}
}
