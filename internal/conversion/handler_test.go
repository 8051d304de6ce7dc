package conversion

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

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
	broken := strings.Replace(alphaRobot, `"labels":{"app":"hello"}`, `"annotations":{"robot.dev/conversion-data":"{oops"}`, 1)
	unknownField := strings.Replace(alphaRobot, `"port":8080`, `"port":8080,"replicaz":3`, 1)
	configMap := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team"}}`
	tests := []struct {
		name    string
		desired string
		objects []string
		want    []string
	}{
		{"an annotation the conversion cannot read", "robot.dev/v1beta1", []string{betaRobot, broken}, []string{"object 2 of 2", "Robot team/hello", "robot.dev/conversion-data", "remove it"}},
		{"a field the operator does not know", "robot.dev/v1beta1", []string{unknownField}, []string{"Robot team/hello", "does not know", "replicaz"}},
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
