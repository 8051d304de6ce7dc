package robotclient

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/workload"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	"github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/scheme"
)

// robotJSON is a Robot as the API server sends it, with spec as given.
func robotJSON(name, spec string) string {
	return `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"` + name +
		`","namespace":"ns","uid":"uid-` + name + `","resourceVersion":"7","generation":3},"spec":` + spec +
		`,"status":{"observedGeneration":2,"deploymentName":"` + name + `"}}`
}

// jsonDecoder is the operator's Robot decoder for JSON, as its REST client
// gets it.
func jsonDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	s := tolerantSerializer{rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion()}
	info, ok := runtime.SerializerInfoForMediaType(s.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	return s.DecoderToVersion(info.Serializer, robotv1beta1.SchemeGroupVersion)
}

func TestUndecodableRobotIsDecodedAsItsMetadata(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       []string // what the annotation must say
	}{
		{"quantity", `{"image":"a","resources":{"limits":{"cpu":"1e1.5"}}}`,
			[]string{`spec.resources is {"limits":{"cpu":"1e1.5"}}`, "quantities must match"}},
		{"replicas-string", `{"image":"a","replicas":"two"}`,
			[]string{`spec.replicas is "two"`, "cannot unmarshal string"}},
		{"env-string", `{"env":"A=1","image":"a"}`, []string{`spec.env is "A=1"`}},
		{"spec-not-object", `"run it"`, []string{`spec is "run it", which is not an object`}},
		{"long-value", `{"image":"a","args":"` + strings.Repeat("x", 500) + `"}`,
			[]string{`spec.args is "` + strings.Repeat("x", maxQuotedValue-1) + "…"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decoder := jsonDecoder(t)
			for _, into := range []runtime.Object{nil, &robotv1beta1.Robot{}} {
				obj, _, err := decoder.Decode([]byte(robotJSON(tc.name, tc.spec)), nil, into)
				if err != nil {
					t.Fatalf("decoding into %T: %v", into, err)
				}
				if into != nil && obj != into {
					t.Fatalf("decoded into a new object, not the one given: a typed client would see nothing")
				}
				robot := obj.(*robotv1beta1.Robot)
				if robot.Name != tc.name || robot.Namespace != "ns" || string(robot.UID) != "uid-"+tc.name || robot.ResourceVersion != "7" || robot.Generation != 3 {
					t.Errorf("metadata not kept: %+v", robot.ObjectMeta)
				}
				if robot.Status.ObservedGeneration != 2 || robot.Status.DeploymentName != tc.name {
					t.Errorf("status not kept: %+v", robot.Status)
				}
				err = workload.UndecodableSpec(robot)
				if err == nil {
					t.Fatal("not marked as undecodable")
				}
				for _, want := range tc.want {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%q does not say %q", err, want)
					}
				}
				_, buildErr := workload.NewDeployment(robot)
				var invalid *outcome.InvalidSpecError
				if !errors.As(buildErr, &invalid) {
					t.Errorf("newDeployment: %v, want an invalid spec error", buildErr)
				}
			}
		})
	}
}

func TestDecodableRobotIsDecodedAsItIs(t *testing.T) {
	obj, _, err := jsonDecoder(t).Decode([]byte(robotJSON("web", `{"image":"a","replicas":2,"resources":{"limits":{"cpu":"1500m"}}}`)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	robot := obj.(*robotv1beta1.Robot)
	if _, ok := robot.Annotations[workload.UndecodableSpecAnnotation]; ok || workload.UndecodableSpec(robot) != nil {
		t.Errorf("a decodable Robot is marked: %v", robot.Annotations)
	}
	if robot.Spec.Image != "a" || ptr.Deref(robot.Spec.Replicas, 0) != 2 || robot.Spec.Resources.Limits.Cpu().MilliValue() != 1500 {
		t.Errorf("spec not decoded: %+v", robot.Spec)
	}
}

// TestListWithAnUndecodableRobot: one Robot that cannot be decoded does not
// fail the list that carries it, which would stop the informer for all.
func TestListWithAnUndecodableRobot(t *testing.T) {
	list := `{"apiVersion":"robot.dev/v1beta1","kind":"RobotList","metadata":{"resourceVersion":"42"},"items":[` +
		robotJSON("good", `{"image":"a","replicas":2}`) + "," + robotJSON("bad", `{"image":"a","replicas":"two"}`) + `]}`
	into := &robotv1beta1.RobotList{}
	obj, _, err := jsonDecoder(t).Decode([]byte(list), nil, into)
	if err != nil {
		t.Fatal(err)
	}
	if obj != into {
		t.Fatal("decoded into a new object, not the one given")
	}
	if into.ResourceVersion != "42" || len(into.Items) != 2 {
		t.Fatalf("list: resourceVersion %q, %d items", into.ResourceVersion, len(into.Items))
	}
	if good := into.Items[0]; workload.UndecodableSpec(&good) != nil || ptr.Deref(good.Spec.Replicas, 0) != 2 {
		t.Errorf("the decodable Robot: %+v", good)
	}
	if bad := into.Items[1]; bad.Name != "bad" || workload.UndecodableSpec(&bad) == nil {
		t.Errorf("the undecodable Robot: %+v", bad)
	}
}

// TestOtherDecodeErrorsAreKept: the fallback is for Robots alone.
func TestOtherDecodeErrorsAreKept(t *testing.T) {
	for name, data := range map[string]string{
		"not JSON":          `{"apiVersion":"robot.dev/v1beta1","kind":"Robot",`,
		"another group":     `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"},"spec":{"replicas":"two"}}`,
		"metadata unusable": `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":7},"spec":{}}`,
	} {
		if _, _, err := jsonDecoder(t).Decode([]byte(data), nil, nil); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}

// TestRobotDecodedDirectlyAsTheSerializerWould: a Robot as the API server
// writes it (a custom resource's fields in the order of their names, as
// unstructured objects encode) is decoded without the Serializer's reading
// of its kind first, into the same Robot, whether or not the caller gives
// one; anything else still goes through the Serializer.
func TestRobotDecodedDirectlyAsTheSerializerWould(t *testing.T) {
	robot := &robotv1beta1.Robot{Spec: robotv1beta1.RobotSpec{Image: "a", Replicas: ptr.To[int32](2)}}
	robot.SetGroupVersionKind(robotKind)
	robot.Name, robot.Namespace, robot.UID, robot.ResourceVersion, robot.Generation = "web", "ns", "uid-web", "7", 3
	robot.Labels = map[string]string{"team": "a"}
	robot.Status.ObservedGeneration = 2
	fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(robot)
	if err != nil {
		t.Fatal(err)
	}
	var data bytes.Buffer
	if err := unstructured.UnstructuredJSONScheme.Encode(&unstructured.Unstructured{Object: fields}, &data); err != nil {
		t.Fatal(err)
	}
	if _, ok := decodeRobotDirectly(data.Bytes(), nil); !ok {
		t.Fatalf("a Robot as the API server writes it is not decoded directly: %.80s", data.String())
	}
	standard := rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion()
	info, _ := runtime.SerializerInfoForMediaType(standard.SupportedMediaTypes(), runtime.ContentTypeJSON)
	want, wantKind, err := info.Serializer.Decode(data.Bytes(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, into := range []runtime.Object{nil, &robotv1beta1.Robot{}} {
		got, gotKind, err := tolerantDecoder{info.Serializer}.Decode(data.Bytes(), nil, into)
		if err != nil {
			t.Fatalf("decoding into %T: %v", into, err)
		}
		if into != nil && got != into {
			t.Errorf("decoded into a new object, not the one given")
		}
		if *gotKind != *wantKind || !reflect.DeepEqual(got, want) {
			t.Errorf("decoding into %T: %v %+v, the Serializer decodes %v %+v", into, gotKind, got, wantKind, want)
		}
	}
	for _, other := range []string{
		`{"apiVersion":"robot.dev/v1beta1","kind":"RobotList","metadata":{},"items":[]}`,
		`{"apiVersion":"robot.dev/v1beta1","kind":"Robots","metadata":{"name":"x"}}`,
		`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"NotFound","code":404}`,
	} {
		if _, ok := decodeRobotDirectly([]byte(other), nil); ok {
			t.Errorf("%s decoded directly as a Robot", other)
		}
	}
}

// TestWatchEventDecodedAsTheSerializerWould: the Robot watch's events are
// decoded without the Serializer's reading of their kind first, into the
// same event, and the codec factory the serializer wraps, shared, is left
// as it was.
func TestWatchEventDecodedAsTheSerializerWould(t *testing.T) {
	standard := rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion()
	wantInfo, _ := runtime.SerializerInfoForMediaType(standard.SupportedMediaTypes(), runtime.ContentTypeJSON)
	gotInfo, _ := runtime.SerializerInfoForMediaType(tolerantSerializer{standard}.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if _, ok := gotInfo.StreamSerializer.Serializer.(eventDecoder); !ok {
		t.Fatalf("the watch's events are decoded by %T", gotInfo.StreamSerializer.Serializer)
	}
	if _, ok := wantInfo.StreamSerializer.Serializer.(eventDecoder); ok {
		t.Fatal("the codec factory's own stream serializer was changed")
	}
	for _, data := range []string{
		`{"type":"MODIFIED","object":` + robotJSON("web", `{"image":"a","replicas":2}`) + `}`,
		`{"type":"BOOKMARK","object":{"kind":"Robot","apiVersion":"robot.dev/v1beta1","metadata":{"resourceVersion":"12"}}}`,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410}}`,
	} {
		var got, want metav1.WatchEvent
		gotObject, gotKind, gotErr := gotInfo.StreamSerializer.Serializer.Decode([]byte(data), nil, &got)
		_, wantKind, wantErr := wantInfo.StreamSerializer.Serializer.Decode([]byte(data), nil, &want)
		if gotErr != nil || wantErr != nil {
			t.Fatalf("decoding %s: %v; the Serializer: %v", data, gotErr, wantErr)
		}
		if gotObject != &got {
			t.Errorf("decoded into a new event, not the one given: the watch fails")
		}
		if *gotKind != *wantKind || !reflect.DeepEqual(got, want) {
			t.Errorf("%s decoded as %v %+v, by the Serializer as %v %+v", data, gotKind, got, wantKind, want)
		}
	}
}
