package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

const (
	alphaRobot = `{"apiVersion":"robot.dev/v1alpha1","kind":"Robot","metadata":{"name":"hello","namespace":"team","uid":"u-1","resourceVersion":"7","labels":{"app":"hello"}},"spec":{"image":"registry.example.com/hello:1.0","port":8080,"priorityClassName":"high"},"status":{"observedGeneration":1,"readyReplicas":1}}`
	betaRobot  = `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"web","namespace":"team","uid":"u-2"},"spec":{"image":"registry.example.com/web:1.0","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"metrics","containerPort":9090,"protocol":"TCP"}],"strategy":{"type":"Recreate"},"minReadySeconds":5}}`
)

// observation is one call of the handler's Observer.
type observation struct {
	from, to string
	result   Result
}

// post sends a ConversionReview of objects to the handler and returns the
// HTTP status, the decoded answer, and what the observer was told.
func post(t *testing.T, desired string, objects ...string) (int, *apiextensionsv1.ConversionReview, []observation) {
	t.Helper()
	review := apiextensionsv1.ConversionReview{Request: &apiextensionsv1.ConversionRequest{UID: types.UID("review-1"), DesiredAPIVersion: desired}}
	review.APIVersion, review.Kind = "apiextensions.k8s.io/v1", "ConversionReview"
	for _, object := range objects {
		review.Request.Objects = append(review.Request.Objects, runtime.RawExtension{Raw: []byte(object)})
	}
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	code, answer, observed := send(t, http.MethodPost, "application/json", body)
	if code != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", code, answer)
	}
	var got apiextensionsv1.ConversionReview
	if err := json.Unmarshal(answer, &got); err != nil {
		t.Fatalf("the answer is not a ConversionReview: %v\n%s", err, answer)
	}
	if got.APIVersion != "apiextensions.k8s.io/v1" || got.Kind != "ConversionReview" || got.Response == nil {
		t.Fatalf("the answer is not a ConversionReview v1 with a response: %s", answer)
	}
	if got.Response.UID != "review-1" {
		t.Errorf("response uid %q, want the request's, review-1", got.Response.UID)
	}
	return code, &got, observed
}

// send makes one request of the handler.
func send(t *testing.T, method, contentType string, body []byte) (int, []byte, []observation) {
	t.Helper()
	var observed []observation
	handler, err := NewHandler(func(from, to string, result Result, _ time.Duration) {
		observed = append(observed, observation{from, to, result})
	}, func(reason IgnoreReason) {
		observed = append(observed, observation{result: Result("ignored " + reason)})
	})
	if err != nil {
		t.Fatal(err)
	}
	handler.maxBytes = 64 << 10
	request := httptest.NewRequest(method, Path, bytes.NewReader(body))
	request.Header.Set("Content-Type", contentType)
	recorder := httptest.NewRecorder()
	handler.ServeHTTP(recorder, request)
	return recorder.Code, recorder.Body.Bytes(), observed
}

func TestConvertsToV1beta1(t *testing.T) {
	_, review, observed := post(t, "robot.dev/v1beta1", alphaRobot, betaRobot)
	if review.Response.Result.Status != "Success" {
		t.Fatalf("result %+v, want Success", review.Response.Result)
	}
	if len(review.Response.ConvertedObjects) != 2 {
		t.Fatalf("%d objects converted, want 2", len(review.Response.ConvertedObjects))
	}
	var hello robotv1beta1.Robot
	if err := json.Unmarshal(review.Response.ConvertedObjects[0].Raw, &hello); err != nil {
		t.Fatal(err)
	}
	if hello.APIVersion != "robot.dev/v1beta1" || hello.Kind != "Robot" {
		t.Errorf("converted to %s %s, want robot.dev/v1beta1 Robot", hello.APIVersion, hello.Kind)
	}
	if hello.Name != "hello" || hello.Namespace != "team" || hello.UID != "u-1" || hello.ResourceVersion != "7" || hello.Labels["app"] != "hello" {
		t.Errorf("metadata changed: %+v", hello.ObjectMeta)
	}
	if len(hello.Spec.Ports) != 1 || hello.Spec.Ports[0] != (robotv1beta1.RobotPort{Name: "http", ContainerPort: 8080, Protocol: "TCP"}) {
		t.Errorf("ports %+v, want the one port http: 8080/TCP", hello.Spec.Ports)
	}
	if hello.Spec.Placement.PriorityClassName != "high" || hello.Status.ReadyReplicas != 1 {
		t.Errorf("placement %+v and status %+v, want priorityClassName high and 1 ready replica", hello.Spec.Placement, hello.Status)
	}
	// An object already in the desired version comes back as it was.
	if got := string(review.Response.ConvertedObjects[1].Raw); got != betaRobot {
		t.Errorf("a v1beta1 Robot converted to v1beta1 changed:\n got %s\nwant %s", got, betaRobot)
	}
	if want := []observation{{"robot.dev/v1alpha1", "robot.dev/v1beta1", ResultSuccess}}; !slices.Equal(observed, want) {
		t.Errorf("observed %v, want %v", observed, want)
	}
}

func TestConvertsToV1alpha1KeepingWhatItCannotHold(t *testing.T) {
	_, review, _ := post(t, "robot.dev/v1alpha1", betaRobot)
	if review.Response.Result.Status != "Success" || len(review.Response.ConvertedObjects) != 1 {
		t.Fatalf("result %+v with %d objects, want Success with 1", review.Response.Result, len(review.Response.ConvertedObjects))
	}
	var web robotv1alpha1.Robot
	if err := json.Unmarshal(review.Response.ConvertedObjects[0].Raw, &web); err != nil {
		t.Fatal(err)
	}
	if web.Spec.Port == nil || *web.Spec.Port != 8080 {
		t.Errorf("port %v, want the first port, 8080", web.Spec.Port)
	}
	data := web.Annotations[robotv1alpha1.ConversionDataAnnotation]
	for _, want := range []string{`"metrics"`, `9090`, `"Recreate"`, `"minReadySeconds":5`} {
		if !strings.Contains(data, want) {
			t.Errorf("annotation %s = %s, does not keep %s", robotv1alpha1.ConversionDataAnnotation, data, want)
		}
	}
	// And back: the second port, the strategy and minReadySeconds return.
	_, again, _ := post(t, "robot.dev/v1beta1", string(review.Response.ConvertedObjects[0].Raw))
	var back robotv1beta1.Robot
	if err := json.Unmarshal(again.Response.ConvertedObjects[0].Raw, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Spec.Ports) != 2 || back.Spec.Strategy == nil || back.Spec.Strategy.Type != "Recreate" || back.Spec.MinReadySeconds != 5 || back.Annotations != nil {
		t.Errorf("back in v1beta1: ports %+v, strategy %+v, minReadySeconds %d, annotations %v", back.Spec.Ports, back.Spec.Strategy, back.Spec.MinReadySeconds, back.Annotations)
	}
}

// TestFailureConvertsNothing: one Robot that cannot be converted fails the
// whole review, naming that Robot, and returns no object at all.
func TestFailureConvertsNothing(t *testing.T) {
	unknownField := strings.Replace(alphaRobot, `"port":8080`, `"port":8080,"replicaz":3`, 1)
	configMap := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team"}}`
	tests := []struct {
		name    string
		desired string
		objects []string
		want    []string
	}{
		{"a field the operator does not know", "robot.dev/v1beta1", []string{betaRobot, unknownField}, []string{"object 2 of 2", "Robot team/hello", "does not know", `"spec.replicaz"`}},
		{"a field the operator does not know, deep", "robot.dev/v1alpha1", []string{strings.Replace(betaRobot, `"protocol":"TCP"}]`, `"protocol":"TCP","hostPort":80}]`, 1)}, []string{"Robot team/web", `"spec.ports[1].hostPort"`}},
		{"a version the operator does not know, of an object", "robot.dev/v1beta1", []string{strings.Replace(alphaRobot, "robot.dev/v1alpha1", "robot.dev/v2", 1)}, []string{"Robot team/hello (robot.dev/v2)", "newer than the operator"}},
		{"not a Robot", "robot.dev/v1beta1", []string{configMap}, []string{"ConfigMap team/c"}},
		{"a version the operator does not know", "robot.dev/v2", []string{alphaRobot}, []string{`"robot.dev/v2"`, "newer than the operator"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, review, observed := post(t, tt.desired, tt.objects...)
			if review.Response.Result.Status != "Failure" {
				t.Fatalf("result %+v, want Failure", review.Response.Result)
			}
			if len(review.Response.ConvertedObjects) != 0 {
				t.Errorf("%d objects converted alongside a failure, want none", len(review.Response.ConvertedObjects))
			}
			for _, want := range tt.want {
				if !strings.Contains(review.Response.Result.Message, want) {
					t.Errorf("message %q does not say %q", review.Response.Result.Message, want)
				}
			}
			if len(observed) != 1 || observed[0].result != ResultFailure {
				t.Errorf("observed %v, want one failure", observed)
			}
		})
	}
}

func TestRefusesWhatIsNotAReview(t *testing.T) {
	v1beta1Review := `{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview","request":{"uid":"x","desiredAPIVersion":"robot.dev/v1beta1","objects":[]}}`
	tests := []struct {
		name        string
		method      string
		contentType string
		body        string
		code        int
		want        string
	}{
		{"GET", http.MethodGet, "application/json", "", http.StatusMethodNotAllowed, "by POST"},
		{"not JSON", http.MethodPost, "text/plain", "hello", http.StatusUnsupportedMediaType, "application/json"},
		{"not a review", http.MethodPost, "application/json", "[1,2]", http.StatusBadRequest, "not a ConversionReview"},
		{"a v1beta1 review", http.MethodPost, "application/json", v1beta1Review, http.StatusBadRequest, "conversionReviewVersions must be [v1]"},
		{"no request", http.MethodPost, "application/json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`, http.StatusBadRequest, "no request"},
		{"too large", http.MethodPost, "application/json", strings.Repeat(" ", 64<<10+1), http.StatusRequestEntityTooLarge, "over"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, observed := send(t, tt.method, tt.contentType, []byte(tt.body))
			if code != tt.code || !strings.Contains(string(body), tt.want) {
				t.Errorf("answered %d %q, want %d saying %q", code, body, tt.code, tt.want)
			}
			if len(observed) != 1 || observed[0].result != ResultInvalid {
				t.Errorf("observed %v, want one invalid", observed)
			}
		})
	}
}

// convertOne converts one object to desired and returns it as JSON
// decoded into a map, failing the test unless the review succeeded.
func convertOne(t *testing.T, desired, object string) map[string]any {
	t.Helper()
	_, review, _ := post(t, desired, object)
	if review.Response.Result.Status != "Success" || len(review.Response.ConvertedObjects) != 1 {
		t.Fatalf("converting to %s: result %+v with %d objects, want Success with 1", desired, review.Response.Result, len(review.Response.ConvertedObjects))
	}
	var out map[string]any
	if err := json.Unmarshal(review.Response.ConvertedObjects[0].Raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// field returns the value at path in object, nil if there is none.
func field(object map[string]any, path ...string) any {
	var value any = object
	for _, key := range path {
		m, ok := value.(map[string]any)
		if !ok {
			return nil
		}
		value = m[key]
	}
	return value
}

// TestConvertsValuesGoCannotParse: the schema admits quantities such as
// 1e1.5 that Go cannot parse. A Robot holding one converts both ways with
// the value as it was, alone or beside other Robots.
func TestConvertsValuesGoCannotParse(t *testing.T) {
	odd := `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"odd","namespace":"team","uid":"u-3"},"spec":{"image":"registry.example.com/odd:1.0","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],"resources":{"limits":{"cpu":"1e1.5"},"requests":{"memory":"0.5e3Mi"}}}}`
	_, review, _ := post(t, "robot.dev/v1alpha1", betaRobot, odd)
	if review.Response.Result.Status != "Success" || len(review.Response.ConvertedObjects) != 2 {
		t.Fatalf("result %+v with %d objects, want Success with 2", review.Response.Result, len(review.Response.ConvertedObjects))
	}
	alpha := string(review.Response.ConvertedObjects[1].Raw)
	var got map[string]any
	if err := json.Unmarshal([]byte(alpha), &got); err != nil {
		t.Fatal(err)
	}
	if cpu := field(got, "spec", "resources", "limits", "cpu"); cpu != "1e1.5" {
		t.Errorf("v1alpha1 limits.cpu = %v, want 1e1.5 as stored", cpu)
	}
	if port := field(got, "spec", "port"); port != float64(8080) {
		t.Errorf("v1alpha1 port = %v, want 8080", port)
	}
	back := convertOne(t, "robot.dev/v1beta1", alpha)
	if cpu, memory := field(back, "spec", "resources", "limits", "cpu"), field(back, "spec", "resources", "requests", "memory"); cpu != "1e1.5" || memory != "0.5e3Mi" {
		t.Errorf("back in v1beta1: cpu %v and memory %v, want 1e1.5 and 0.5e3Mi as stored", cpu, memory)
	}
}

// TestIgnoresAnAnnotationItDidNotWrite: before the conversion existed, the
// annotation's key meant nothing, and anyone could set it. A Robot holding
// one that is not the conversion's JSON still converts to v1beta1: the
// annotation restores nothing and is dropped.
func TestIgnoresAnAnnotationItDidNotWrite(t *testing.T) {
	for _, value := range []string{"set by a user of the old release", `{"ports":"eighty"}`, `{"replicas":3}`, `null`} {
		t.Run(value, func(t *testing.T) {
			annotated := strings.Replace(alphaRobot, `"labels":{"app":"hello"}`, `"annotations":{"robot.dev/conversion-data":`+strconvQuote(value)+`,"note":"kept"}`, 1)
			got := convertOne(t, "robot.dev/v1beta1", annotated)
			annotations, _ := field(got, "metadata", "annotations").(map[string]any)
			if _, ok := annotations["robot.dev/conversion-data"]; ok || annotations["note"] != "kept" {
				t.Errorf("annotations %v, want note kept and the conversion's dropped", annotations)
			}
			ports, _ := field(got, "spec", "ports").([]any)
			if len(ports) != 1 {
				t.Errorf("ports %v, want the one from port", ports)
			}
		})
	}
}

// TestRestoresNothingInvalid: what the annotation would restore is checked
// against v1beta1's rules. An annotation written through v1alpha1 with more
// ports than v1beta1 allows, or values beyond its bounds, restores nothing.
func TestRestoresNothingInvalid(t *testing.T) {
	var many []string
	for i := range 40 {
		many = append(many, fmt.Sprintf(`{"name":"p%d","containerPort":%d,"protocol":"TCP"}`, i, 9000+i))
	}
	tests := map[string]string{
		"40 ports":                                    `{"ports":[` + strings.Join(many, ",") + `]}`,
		"minReadySeconds 100000":                      `{"minReadySeconds":100000}`,
		"negative minReadySeconds":                    `{"minReadySeconds":-1}`,
		"strategy Sideways":                           `{"strategy":{"type":"Sideways"}}`,
		"Recreate with rollingUpdate":                 `{"strategy":{"type":"Recreate","rollingUpdate":{"maxSurge":1}}}`,
		"a port name that is not IANA":                `{"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"Not_A_Name","containerPort":9090,"protocol":"TCP"}]}`,
		"a port number out of range":                  `{"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"big","containerPort":70000,"protocol":"TCP"}]}`,
		"a protocol that is not one":                  `{"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"icmp","containerPort":9090,"protocol":"ICMP"}]}`,
		"two ports of one name":                       `{"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"http","containerPort":9090,"protocol":"TCP"}]}`,
		"two ports of one number":                     `{"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"again","containerPort":8080,"protocol":"TCP"}]}`,
		"a sidecar named robot":                       `{"sidecars":[{"name":"robot","image":"proxy:1"}]}`,
		"a sidecar and an init container of one name": `{"sidecars":[{"name":"proxy","image":"proxy:1"}],"initContainers":[{"name":"proxy","image":"migrate:1"}]}`,
		"five init containers":                        `{"initContainers":[{"name":"a","image":"x"},{"name":"b","image":"x"},{"name":"c","image":"x"},{"name":"d","image":"x"},{"name":"e","image":"x"}]}`,
		"an init container with no image":             `{"initContainers":[{"name":"migrate"}]}`,
		"a sidecar with an unknown field":             `{"sidecars":[{"name":"proxy","image":"proxy:1","privileged":true}]}`,
		"a preStop sleep of the grace period":         `{"terminationGracePeriodSeconds":10,"preStop":{"sleep":{"seconds":10}}}`,
		"a preStop with sleep and exec":               `{"preStop":{"sleep":{"seconds":1},"exec":{"command":["x"]}}}`,
		"a grace period of two days":                  `{"terminationGracePeriodSeconds":172800}`,
	}
	for name, value := range tests {
		t.Run(name, func(t *testing.T) {
			annotated := strings.Replace(alphaRobot, `"labels":{"app":"hello"}`, `"annotations":{"robot.dev/conversion-data":`+strconvQuote(value)+`}`, 1)
			got := convertOne(t, "robot.dev/v1beta1", annotated)
			spec, _ := got["spec"].(map[string]any)
			if ports, _ := spec["ports"].([]any); len(ports) != 1 {
				t.Errorf("%d ports, want the one from port", len(ports))
			}
			for _, key := range append([]string{"strategy", "minReadySeconds"}, keptFields...) {
				if value, ok := spec[key]; ok {
					t.Errorf("%s = %v restored, want nothing", key, value)
				}
			}
			if annotations := field(got, "metadata", "annotations"); annotations != nil {
				t.Errorf("annotations %v, want none", annotations)
			}
		})
	}
}

// TestRewritesThePlantedAnnotation: v1beta1 stores annotations as written,
// so anyone can plant the conversion's key through it. Read as v1alpha1,
// the annotation says what the v1beta1 Robot really holds, or is absent, so
// that a later write through v1alpha1 (kubectl scale) restores nothing else.
func TestRewritesThePlantedAnnotation(t *testing.T) {
	planted := `{"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"admin","containerPort":9999,"protocol":"TCP"}],"minReadySeconds":99,"strategy":{"type":"Recreate"}}`
	plain := `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"planted","namespace":"team","annotations":{"robot.dev/conversion-data":` + strconvQuote(planted) + `}},"spec":{"image":"registry.example.com/web:1.0","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}]}}`
	alpha := convertOne(t, "robot.dev/v1alpha1", plain)
	if annotations := field(alpha, "metadata", "annotations"); annotations != nil {
		t.Errorf("read as v1alpha1, annotations %v, want none: the Robot holds nothing v1alpha1 cannot", annotations)
	}
	twoPorts := strings.Replace(betaRobot, `"uid":"u-2"`, `"uid":"u-2","annotations":{"robot.dev/conversion-data":`+strconvQuote(planted)+`}`, 1)
	alpha = convertOne(t, "robot.dev/v1alpha1", twoPorts)
	data, _ := field(alpha, "metadata", "annotations", "robot.dev/conversion-data").(string)
	if strings.Contains(data, "admin") || strings.Contains(data, "99,") || !strings.Contains(data, "metrics") {
		t.Errorf("read as v1alpha1, the annotation is %s, want the Robot's own ports, strategy and minReadySeconds", data)
	}
}

func strconvQuote(s string) string {
	quoted, _ := json.Marshal(s)
	return string(quoted)
}

// TestLogsAnIgnoredAnnotationOnce: the API server retries a failed LIST or
// WATCH many times a second and converts a v1alpha1-stored Robot at every
// read. Each ignored annotation is counted, and logged once per Robot and
// resourceVersion.
func TestLogsAnIgnoredAnnotationOnce(t *testing.T) {
	var ignored []IgnoreReason
	handler, err := NewHandler(nil, func(reason IgnoreReason) { ignored = append(ignored, reason) })
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	annotated := strings.Replace(alphaRobot, `"labels":{"app":"hello"}`, `"annotations":{"robot.dev/conversion-data":"set by hand"}`, 1)
	review := func(object string) {
		body, err := json.Marshal(apiextensionsv1.ConversionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
			Request:  &apiextensionsv1.ConversionRequest{UID: "r", DesiredAPIVersion: "robot.dev/v1beta1", Objects: []runtime.RawExtension{{Raw: []byte(object)}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		serveLogged(t, handler, logger, body)
	}
	for range 50 {
		review(annotated)
	}
	review(strings.Replace(annotated, `"resourceVersion":"7"`, `"resourceVersion":"8"`, 1))
	if len(ignored) != 51 || ignored[0] != IgnoredNotJSON {
		t.Errorf("told of %d ignored annotations (%v...), want 51 not_conversion_data", len(ignored), ignored[:min(len(ignored), 1)])
	}
	if len(lines) != 2 {
		t.Fatalf("logged %d lines, want 2, one per resourceVersion:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, want := range []string{`"robot"`, "team", "hello", `"uid"="u-1"`, `"resourceVersion"="7"`, "not_conversion_data"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %s does not say %s", lines[0], want)
		}
	}
}

// TestKeepsContainersAsWritten: a v1beta1 Robot's init containers, sidecars,
// grace period and preStop hook go into the annotation when it is read as
// v1alpha1, and come back from it value for value, quantities spelled as
// they were (1000m is not rewritten 1).
func TestKeepsContainersAsWritten(t *testing.T) {
	spec := `"sidecars":[{"name":"proxy","image":"proxy:1","resources":{"requests":{"cpu":"1000m","memory":"0.5Gi"}},"ports":[{"name":"proxy","containerPort":15001,"protocol":"TCP"}],"readinessProbe":{"tcpSocket":{"port":"proxy"}}}],` +
		`"initContainers":[{"name":"migrate","image":"migrate:1","args":["up"]}],"terminationGracePeriodSeconds":45,"preStop":{"sleep":{"seconds":10}}`
	beta := strings.Replace(betaRobot, `"minReadySeconds":5`, `"minReadySeconds":5,`+spec, 1)
	alpha := convertOne(t, "robot.dev/v1alpha1", beta)
	alphaSpec, _ := alpha["spec"].(map[string]any)
	for _, key := range keptFields {
		if value, ok := alphaSpec[key]; ok {
			t.Errorf("read as v1alpha1, spec.%s = %v: v1alpha1 has no such field", key, value)
		}
	}
	data, _ := field(alpha, "metadata", "annotations", "robot.dev/conversion-data").(string)
	if !strings.Contains(data, `"1000m"`) || !strings.Contains(data, `"migrate"`) {
		t.Errorf("annotation %s, want the containers as written", data)
	}
	raw, err := json.Marshal(alpha)
	if err != nil {
		t.Fatal(err)
	}
	back := convertOne(t, "robot.dev/v1beta1", string(raw))
	want := map[string]any{}
	if err := json.Unmarshal([]byte(beta), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(want, back) {
		t.Errorf("v1beta1 → v1alpha1 → v1beta1 changed the Robot:\nwant %v\ngot  %v", want, back)
	}
}

// TestRestoresNothingFromCaseFoldedKeys: Go's encoding/json matches a key
// to a field whatever its case, and the last match wins, while a map keeps
// each key as written. An annotation with a key that is not a field's name
// exactly, or with a key twice, is not the conversion's JSON: it restores
// nothing, so that what is restored is always what was checked.
func TestRestoresNothingFromCaseFoldedKeys(t *testing.T) {
	var sidecars []string
	for i := range 5 {
		sidecars = append(sidecars, fmt.Sprintf(`{"name":"s%d","image":"proxy:1"}`, i))
	}
	five := `[` + strings.Join(sidecars, ",") + `]`
	tests := map[string]string{
		"five sidecars beside one":           `{"sidecars":` + five + `,"SIDECARS":[{"name":"proxy","image":"proxy:1"}]}`,
		"a grace period of 104 days":         `{"terminationGracePeriodSeconds":9000000000,"TerminationGracePeriodSeconds":30}`,
		"six init containers beside none":    `{"initContainers":[{"name":"robot","image":"x"},{"name":"a","image":"x"},{"name":"b","image":"x"},{"name":"c","image":"x"},{"name":"d","image":"x"},{"name":"e","image":"x"}],"INITCONTAINERS":[]}`,
		"a folded key inside a sidecar":      `{"sidecars":[{"name":"proxy","image":"proxy:1","Image":"other:2"}]}`,
		"a folded key in a preStop":          `{"terminationGracePeriodSeconds":30,"preStop":{"sleep":{"seconds":5,"Seconds":10}}}`,
		"a key twice":                        `{"sidecars":` + five + `,"sidecars":[{"name":"proxy","image":"proxy:1"}]}`,
		"a key twice inside a sidecar":       `{"sidecars":[{"name":"proxy","image":"proxy:1","image":"other:2"}]}`,
		"a folded key alone":                 `{"Sidecars":[{"name":"proxy","image":"proxy:1"}]}`,
		"a map key twice in a Service field": `{"service":{"labels":{"a":"1","a":"2"}}}`,
	}
	for name, value := range tests {
		t.Run(name, func(t *testing.T) {
			annotated := strings.Replace(alphaRobot, `"labels":{"app":"hello"}`, `"annotations":{"robot.dev/conversion-data":`+strconvQuote(value)+`}`, 1)
			_, review, observed := post(t, "robot.dev/v1beta1", annotated)
			if review.Response.Result.Status != "Success" || len(review.Response.ConvertedObjects) != 1 {
				t.Fatalf("result %+v, want Success", review.Response.Result)
			}
			var got map[string]any
			if err := json.Unmarshal(review.Response.ConvertedObjects[0].Raw, &got); err != nil {
				t.Fatal(err)
			}
			spec, _ := got["spec"].(map[string]any)
			for _, key := range append([]string{"strategy", "minReadySeconds"}, keptFields...) {
				if value, ok := spec[key]; ok {
					t.Errorf("%s = %v restored, want nothing", key, value)
				}
			}
			if service, _ := spec["service"].(map[string]any); service["labels"] != nil {
				t.Errorf("service labels %v restored, want nothing", service["labels"])
			}
			if want := (observation{result: "ignored " + Result(IgnoredNotJSON)}); !slices.Contains(observed, want) {
				t.Errorf("observed %v, want the annotation ignored as not_conversion_data", observed)
			}
		})
	}
}

// TestAFailureSaysLittleOfWhatTheReviewSent: a failure's message, which the
// webhook logs and answers, names what it is about but does not repeat the
// review's text at length: anyone who reaches the webhook writes it, and a
// review of a few megabytes must not make a log line of as many.
func TestAFailureSaysLittleOfWhatTheReviewSent(t *testing.T) {
	long := strings.Repeat("x", 40<<10)
	var unknown strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&unknown, `,"unknownField%05d":1`, i)
	}
	tests := []struct {
		name    string
		desired string
		object  string
		want    []string
	}{
		{"many unknown fields", "robot.dev/v1alpha1", strings.Replace(betaRobot, `"minReadySeconds":5`, `"minReadySeconds":5`+unknown.String(), 1),
			[]string{"Robot team/web", `"spec.unknownField00000"`, "and 1990 more"}},
		{"a long name with an unknown field", "robot.dev/v1alpha1", strings.Replace(strings.Replace(betaRobot, `"name":"web"`, `"name":"`+long+`"`, 1), `"minReadySeconds":5`, `"minReadySeconds":5,"other":1`, 1),
			[]string{"Robot team/xxxx", `"spec.other"`}},
		{"a long kind", "robot.dev/v1beta1", strings.Replace(betaRobot, `"kind":"Robot"`, `"kind":"`+long+`"`, 1), []string{"this webhook converts Robots"}},
		{"a long version", "robot.dev/" + long, betaRobot, []string{"newer than the operator"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, answer, _ := send(t, http.MethodPost, "application/json", reviewOf(t, tt.desired, tt.object))
			var review apiextensionsv1.ConversionReview
			if err := json.Unmarshal(answer, &review); err != nil || review.Response == nil {
				t.Fatalf("status %d, answer %.200s: not a review (%v)", code, answer, err)
			}
			message := review.Response.Result.Message
			if review.Response.Result.Status != "Failure" {
				t.Fatalf("result %+v, want Failure", review.Response.Result.Status)
			}
			if len(message) > 2<<10 {
				t.Errorf("the failure's message is %d bytes long (%.200s…), want at most 2 KiB", len(message), message)
			}
			for _, want := range tt.want {
				if !strings.Contains(message, want) {
					t.Errorf("message %.300q does not say %q", message, want)
				}
			}
		})
	}
}

// serveLogged sends the review body to handler with logger in the request's
// context, and fails the test unless the answer is a success.
func serveLogged(t *testing.T, handler *Handler, logger logr.Logger, body []byte) {
	t.Helper()
	request := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
	request.Header.Set("Content-Type", "application/json")
	request = request.WithContext(klog.NewContext(request.Context(), logger))
	recorder := httptest.NewRecorder()
	handler.ServeHTTP(recorder, request)
	if !strings.Contains(recorder.Body.String(), `"status":"Success"`) {
		t.Fatalf("answer %.300s, want Success", recorder.Body)
	}
}

// reviewOf returns the JSON of a ConversionReview of object to desired.
func reviewOf(t *testing.T, desired, object string) []byte {
	t.Helper()
	review := apiextensionsv1.ConversionReview{Request: &apiextensionsv1.ConversionRequest{UID: types.UID("review-1"), DesiredAPIVersion: desired,
		Objects: []runtime.RawExtension{{Raw: []byte(object)}}}}
	review.APIVersion, review.Kind = "apiextensions.k8s.io/v1", "ConversionReview"
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestRemembersLittleOfTheIgnoredAnnotationsItLogged: the webhook remembers
// which Robots' ignored annotations it logged, and anyone who reaches it
// writes the UID and resourceVersion it is told: each is remembered in a
// few bytes, however long, and logged clipped.
func TestRemembersLittleOfTheIgnoredAnnotationsItLogged(t *testing.T) {
	handler, err := NewHandler(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	logger := funcr.New(func(prefix, args string) { logged.WriteString(args + "\n") }, funcr.Options{})
	long := strings.Repeat("x", 40<<10)
	for i := range 20 {
		annotated := strings.Replace(alphaRobot, `"labels":{"app":"hello"}`, `"annotations":{"robot.dev/conversion-data":"set by hand"}`, 1)
		annotated = strings.Replace(annotated, `"uid":"u-1"`, fmt.Sprintf(`"uid":"%d-%s"`, i, long), 1)
		annotated = strings.Replace(annotated, `"resourceVersion":"7"`, `"resourceVersion":"`+long+`"`, 1)
		serveLogged(t, handler, logger, reviewOf(t, "robot.dev/v1beta1", annotated))
	}
	remembered := 0
	for key := range handler.logged {
		remembered += len(key)
	}
	if len(handler.logged) != 20 || remembered > 20*64 {
		t.Errorf("remembers %d Robots in %d bytes of keys, want 20 in at most %d", len(handler.logged), remembered, 20*64)
	}
	if logged.Len() > 20*(4<<10) {
		t.Errorf("logged %d bytes for 20 ignored annotations, want at most 4 KiB each", logged.Len())
	}
}
