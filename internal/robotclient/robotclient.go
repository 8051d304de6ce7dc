package robotclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/robot-operator/robot-operator/internal/workload"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	kjson "sigs.k8s.io/json"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
	"github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/scheme"
)

// The API server stores Robots that the operator cannot decode: the CRD's
// schema admits quantities such as "1e1.5" that Go cannot parse, and a
// cluster keeps the Robots written while its CRD was looser than it is now.
// client-go decodes a list or a watch stream whole, so one such Robot would
// fail every list and end every watch of the Robot informer, and stop the
// operator for every Robot in the cluster. The operator's Robot client
// therefore decodes a Robot it cannot read as its metadata alone, marked with
// what could not be read; the sync handler reports that on the Robot as
// InvalidSpec and leaves its Deployment as it is.

// maxQuotedValue bounds how much of a value that cannot be read is quoted in
// the message that says so.
const maxQuotedValue = 200

// NewForConfig returns the Robot clientset the operator runs with: the
// generated one, over a REST client that decodes an undecodable Robot as
// described above.
func NewForConfig(cfg *rest.Config) (*clientset.Clientset, error) {
	config := rest.CopyConfig(cfg)
	gv := robotv1beta1.SchemeGroupVersion
	config.GroupVersion = &gv
	config.APIPath = "/apis"
	config.NegotiatedSerializer = tolerantSerializer{rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion()}
	if config.UserAgent == "" {
		config.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	restClient, err := rest.RESTClientFor(config)
	if err != nil {
		return nil, err
	}
	return clientset.New(restClient), nil
}

// tolerantSerializer is a NegotiatedSerializer whose JSON decoder falls back
// to decodeRobotLeniently for Robots and Robot lists it cannot decode.
type tolerantSerializer struct {
	runtime.NegotiatedSerializer
}

// SupportedMediaTypes wraps the JSON serializer; Robots travel as JSON.
func (s tolerantSerializer) SupportedMediaTypes() []runtime.SerializerInfo {
	infos := slices.Clone(s.NegotiatedSerializer.SupportedMediaTypes())
	for i := range infos {
		if infos[i].MediaType == runtime.ContentTypeJSON {
			infos[i].Serializer = tolerantDecoder{infos[i].Serializer}
			if infos[i].StreamSerializer != nil {
				// A copy: the codec factory's own is shared.
				stream := *infos[i].StreamSerializer
				stream.Serializer = eventDecoder{stream.Serializer}
				infos[i].StreamSerializer = &stream
			}
		}
	}
	return infos
}

// watchEventPrefix is how the API server begins a watch event in JSON.
var watchEventPrefix = []byte(`{"type":"`)

// eventDecoder decodes the events of a watch as its Serializer does, but
// without reading each first for its kind, which a watch event does not
// say: the watch tells what it decodes each into.
type eventDecoder struct {
	runtime.Serializer
}

// Decode implements runtime.Decoder.
func (d eventDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if event, ok := into.(*metav1.WatchEvent); ok && event != nil && bytes.HasPrefix(data, watchEventPrefix) {
		kinds, _, err := scheme.Scheme.ObjectKinds(event)
		if err == nil && kjson.UnmarshalCaseSensitivePreserveInts(data, event) == nil {
			return event, &kinds[0], nil
		}
	}
	return d.Serializer.Decode(data, defaults, into)
}

// tolerantDecoder decodes as its Serializer does, and decodes a Robot or a
// Robot list that the Serializer cannot as decodeRobotLeniently does.
type tolerantDecoder struct {
	runtime.Serializer
}

// robotPrefix is how the API server begins a Robot of this version in JSON:
// it writes a custom resource's fields in the order of their names.
var robotPrefix = []byte(`{"apiVersion":"` + robotv1beta1.SchemeGroupVersion.String() + `","kind":"Robot",`)

// robotKind is the kind of a Robot of this version.
var robotKind = robotv1beta1.SchemeGroupVersion.WithKind("Robot")

// Decode implements runtime.Decoder.
func (d tolerantDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if robot, ok := decodeRobotDirectly(data, into); ok {
		gvk := robotKind
		return robot, &gvk, nil
	}
	obj, gvk, err := d.Serializer.Decode(data, defaults, into)
	if err == nil {
		return obj, gvk, nil
	}
	var typeMeta metav1.TypeMeta
	if kjson.UnmarshalCaseSensitivePreserveInts(data, &typeMeta) != nil {
		return obj, gvk, err
	}
	kind := typeMeta.GroupVersionKind()
	if kind.GroupVersion() != robotv1beta1.SchemeGroupVersion {
		return obj, gvk, err
	}
	switch kind.Kind {
	case "Robot":
		robot, leniencyErr := decodeRobotLeniently(data)
		if leniencyErr != nil {
			return obj, gvk, err
		}
		if into, ok := into.(*robotv1beta1.Robot); ok {
			*into = *robot
			return into, &kind, nil
		}
		return robot, &kind, nil
	case "RobotList":
		list, leniencyErr := decodeRobotListLeniently(data)
		if leniencyErr != nil {
			return obj, gvk, err
		}
		if into, ok := into.(*robotv1beta1.RobotList); ok {
			*into = *list
			return into, &kind, nil
		}
		return list, &kind, nil
	}
	return obj, gvk, err
}

// decodeRobotDirectly decodes data, a Robot as the API server writes it,
// into into, or a new Robot when into is nil, as the Serializer would but
// without reading data first for its kind, which its first bytes tell: the
// watch events and the status writes' answers, most of what the operator
// decodes, are Robots. It returns false, having decided nothing, for
// anything else, and for a Robot it cannot decode.
func decodeRobotDirectly(data []byte, into runtime.Object) (*robotv1beta1.Robot, bool) {
	if !bytes.HasPrefix(data, robotPrefix) {
		return nil, false
	}
	robot, isRobot := into.(*robotv1beta1.Robot)
	switch {
	case into == nil:
		robot = &robotv1beta1.Robot{}
	case !isRobot:
		return nil, false
	}
	if kjson.UnmarshalCaseSensitivePreserveInts(data, robot) != nil || robot.GroupVersionKind() != robotKind {
		return nil, false
	}
	return robot, true
}

// decodeRobotListLeniently decodes a Robot list item by item, each Robot as
// decodeRobotLeniently does.
func decodeRobotListLeniently(data []byte) (*robotv1beta1.RobotList, error) {
	var parts struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ListMeta   `json:"metadata"`
		Items           []json.RawMessage `json:"items"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &parts); err != nil {
		return nil, err
	}
	list := &robotv1beta1.RobotList{TypeMeta: parts.TypeMeta, ListMeta: parts.Metadata, Items: make([]robotv1beta1.Robot, len(parts.Items))}
	for i, item := range parts.Items {
		robot, err := decodeRobotLeniently(item)
		if err != nil {
			return nil, fmt.Errorf("items[%d]: %w", i, err)
		}
		list.Items[i] = *robot
	}
	return list, nil
}

// decodeRobotLeniently decodes a Robot whose spec may not be decodable. A
// Robot that decodes is returned as it is; one whose spec does not is
// returned with its metadata, what of its status decodes, and
// workload.UndecodableSpecAnnotation saying which field of the spec could not be read
// and why. Only metadata that cannot be decoded is an error: the API server
// validates it on every write, so that means the data is not a Robot at all.
func decodeRobotLeniently(data []byte) (*robotv1beta1.Robot, error) {
	return DecodeRobot(data)
}

// DecodeRobot decodes a v1beta1 Robot's JSON as the operator's client does:
// a spec that cannot be read gives a Robot that workload.UndecodableSpec
// reports, naming the field. The pre-upgrade check uses it to tell in
// advance what the operator will make of a Robot.
func DecodeRobot(data []byte) (*robotv1beta1.Robot, error) {
	var robot robotv1beta1.Robot
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &robot); err == nil {
		return &robot, nil
	}
	var parts struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
		Spec            json.RawMessage   `json:"spec"`
		Status          json.RawMessage   `json:"status"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &parts); err != nil {
		return nil, err
	}
	robot = robotv1beta1.Robot{TypeMeta: parts.TypeMeta, ObjectMeta: parts.Metadata}
	if len(parts.Status) > 0 {
		// The status is the operator's own: what cannot be read of it is
		// written again.
		var status robotv1beta1.RobotStatus
		if kjson.UnmarshalCaseSensitivePreserveInts(parts.Status, &status) == nil {
			robot.Status = status
		}
	}
	if robot.Annotations == nil {
		robot.Annotations = map[string]string{}
	}
	robot.Annotations[workload.UndecodableSpecAnnotation] = specDecodeError(parts.Spec)
	return &robot, nil
}

// specDecodeError says which field of spec cannot be decoded into a
// RobotSpec, and why: each field is decoded on its own, in name order, and the
// first that fails is named with its value.
func specDecodeError(spec []byte) string {
	var fields map[string]json.RawMessage
	if err := kjson.UnmarshalCaseSensitivePreserveInts(spec, &fields); err != nil {
		return fmt.Sprintf("spec is %s, which is not an object", quoteValue(spec))
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		single, _ := json.Marshal(map[string]json.RawMessage{name: fields[name]})
		var into robotv1beta1.RobotSpec
		if err := kjson.UnmarshalCaseSensitivePreserveInts(single, &into); err != nil {
			return fmt.Sprintf("spec.%s is %s, which the operator cannot read: %v", name, quoteValue(fields[name]), err)
		}
	}
	return "spec cannot be read as a Robot spec"
}

// quoteValue returns a JSON value for a message, cut to maxQuotedValue bytes.
func quoteValue(value []byte) string {
	value = bytes.TrimSpace(value)
	if len(value) > maxQuotedValue {
		return string(value[:maxQuotedValue]) + "…"
	}
	return string(value)
}
