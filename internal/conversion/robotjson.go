package conversion

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// The conversion works on a Robot's JSON as the API server sent it. It moves
// only what differs between the versions (port and ports, the scheduling
// fields and placement, the fields of v1beta1 alone that the conversion's
// annotation keeps, the Service's fields but its type, the annotation
// itself, apiVersion) and passes every other value through untouched. So a
// value that the schema admits and Go cannot parse (a quantity such as
// 1e1.5, stored by an earlier release or through v1beta1) converts in both
// directions; one such Robot can no longer fail the LISTs and WATCHes of a
// whole version. The typed conversion in
// pkg/apis does the same on Go values; TestAgreesWithTheTypedConversion
// holds the two together.

// The JSON names of the fields the conversion moves.
const (
	fieldPort      = "port"
	fieldPorts     = "ports"
	fieldPlacement = "placement"
	fieldStrategy  = "strategy"
	fieldMinReady  = "minReadySeconds"
	fieldService   = "service"
)

// keptFields are the fields of v1beta1's spec that v1alpha1 has no place
// for and that the annotation keeps as they are, value for value: restored
// from the annotation's JSON, not from the Go values that check it, so that
// a quantity keeps its spelling (1000m is not rewritten 1).
var keptFields = []string{"initContainers", "sidecars", "terminationGracePeriodSeconds", "preStop", "rollOnConfigChange"}

// serviceFields are the fields of spec.service that v1beta1 has and
// v1alpha1 has not: all but the type. They are read from the two versions'
// json tags, so a field added to v1beta1's alone moves too.
var serviceFields = func() []string {
	alpha := shapeOf(reflect.TypeFor[robotv1alpha1.RobotService]()).fields
	var names []string
	for name := range shapeOf(reflect.TypeFor[robotv1beta1.RobotService]()).fields {
		if _, ok := alpha[name]; !ok {
			names = append(names, name)
		}
	}
	return names
}()

// placementFields are the fields that v1alpha1 has at the top of its spec
// and v1beta1 gathers under spec.placement. They are read from
// v1beta1.RobotPlacement's json tags, so a field added there moves too.
var placementFields = func() []string {
	var names []string
	for name := range shapeOf(reflect.TypeFor[robotv1beta1.RobotPlacement]()).fields {
		names = append(names, name)
	}
	return names
}()

// IgnoreReason says why the conversion ignored a robot.dev/conversion-data
// annotation, or left it out.
type IgnoreReason string

// The reasons an annotation is ignored or left out.
const (
	// IgnoredNotJSON: the annotation is not the JSON the conversion writes
	// (keys matched to fields exactly, each once).
	IgnoredNotJSON IgnoreReason = "not_conversion_data"
	// IgnoredInvalid: it holds values robot.dev/v1beta1 refuses.
	IgnoredInvalid IgnoreReason = "invalid"
	// IgnoredTooLarge: converting to v1alpha1, the annotation was left
	// out, because the API server would refuse the Robot's annotations
	// with it (over 256 KiB in all). A write of that Robot through
	// v1alpha1 drops what it would have kept.
	IgnoredTooLarge IgnoreReason = "too_large"
)

// Ignored describes an annotation the conversion to v1beta1 ignored, or the
// conversion to v1alpha1 left out.
type Ignored struct {
	Reason IgnoreReason
	Err    error
}

// robotObject is a Robot as JSON.
type robotObject map[string]any

// decodeRobot reads a Robot's JSON, keeping numbers as they were written.
func decodeRobot(raw []byte) (robotObject, error) {
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.UseNumber()
	var object robotObject
	if err := decoder.Decode(&object); err != nil {
		return nil, err
	}
	if object == nil {
		return nil, errors.New("not a JSON object")
	}
	return object, nil
}

// unknownFields returns the fields of object that the Go type of version
// has no field for. Metadata is not checked, values are not parsed.
func (object robotObject) unknownFields(version string) []string {
	var robot reflect.Type
	switch version {
	case robotv1alpha1.SchemeGroupVersion.String():
		robot = reflect.TypeFor[robotv1alpha1.Robot]()
	case robotv1beta1.SchemeGroupVersion.String():
		robot = reflect.TypeFor[robotv1beta1.Robot]()
	default:
		return nil
	}
	unknown := shapeOf(robot).unknownFields(map[string]any(object), "")
	for i := range unknown {
		unknown[i] = strings.TrimPrefix(unknown[i], ".")
	}
	return unknown
}

// child returns the object under key, nil if there is none or it is not an
// object.
func child(object map[string]any, key string) map[string]any {
	value, _ := object[key].(map[string]any)
	return value
}

// present reports whether key holds a value other than null.
func present(object map[string]any, key string) bool {
	value, ok := object[key]
	return ok && value != nil
}

// toV1beta1 converts a v1alpha1 Robot in place. It returns what it ignored
// of the conversion's annotation, if anything.
func (object robotObject) toV1beta1() *Ignored {
	object["apiVersion"] = robotv1beta1.SchemeGroupVersion.String()
	spec := child(object, "spec")
	if spec != nil {
		if present(spec, fieldPort) {
			spec[fieldPorts] = []any{map[string]any{"name": robotv1alpha1.PortName, "containerPort": spec[fieldPort], "protocol": string(corev1.ProtocolTCP)}}
		}
		delete(spec, fieldPort)
		placement := map[string]any{}
		for _, name := range placementFields {
			if present(spec, name) {
				placement[name] = spec[name]
			}
			delete(spec, name)
		}
		if len(placement) > 0 {
			spec[fieldPlacement] = placement
		}
	}
	value, ok := takeAnnotation(object)
	if !ok {
		return nil
	}
	data, err := robotv1alpha1.ReadConversionData(value)
	if err != nil {
		reason := IgnoredInvalid
		if errors.Is(err, robotv1alpha1.ErrNotConversionData) {
			reason = IgnoredNotJSON
		}
		return &Ignored{Reason: reason, Err: err}
	}
	if spec == nil {
		return nil
	}
	// Through v1alpha1, port is the first port. Removing it removes them
	// all, as a Robot without port has no Service; changing it changes the
	// first port's number and keeps the others.
	if present(spec, fieldPorts) && len(data.Ports) > 0 {
		ports := asJSON(data.Ports).([]any)
		ports[0].(map[string]any)["containerPort"] = spec[fieldPorts].([]any)[0].(map[string]any)["containerPort"]
		spec[fieldPorts] = ports
	}
	if data.Strategy != nil {
		spec[fieldStrategy] = asJSON(data.Strategy)
	}
	if data.MinReadySeconds != 0 {
		spec[fieldMinReady] = json.Number(fmt.Sprint(data.MinReadySeconds))
	}
	// ReadConversionData checked them, matching every key to a field
	// exactly and refusing a key given twice: so the map's values, as the
	// annotation spells them, are those it checked.
	kept, err := decodeRobot([]byte(value))
	if err != nil {
		return &Ignored{Reason: IgnoredNotJSON, Err: err}
	}
	for _, name := range keptFields {
		if present(kept, name) {
			spec[name] = kept[name]
		}
	}
	// Through v1alpha1, removing service removes its other fields too.
	if service := child(spec, fieldService); service != nil && data.Service != nil {
		serviceType, _ := service["type"].(string)
		restored := robotv1alpha1.RestoreService(robotv1beta1.ServiceType(serviceType), *data.Service)
		restored.Type = "" // v1alpha1's stays as it was written
		for name, value := range asJSON(restored).(map[string]any) {
			service[name] = value
		}
	}
	// Through v1alpha1, a type that opens no port on the nodes drops the
	// ports' nodePorts, as the API server drops a Service's.
	serviceType := ""
	if service := child(spec, fieldService); service != nil {
		serviceType, _ = service["type"].(string)
	}
	if !robotv1beta1.TakesNodePorts(robotv1beta1.ServiceType(serviceType)) {
		ports, _ := spec[fieldPorts].([]any)
		for _, port := range ports {
			if port, ok := port.(map[string]any); ok {
				delete(port, "nodePort")
			}
		}
	}
	return nil
}

// toV1alpha1 converts a v1beta1 Robot in place, keeping in the conversion's
// annotation what v1alpha1 has no field for. The annotation is written from
// the Robot's fields every time, and removed when they need none: v1beta1
// stores annotations as written, and one planted through it must not reach
// a later write through v1alpha1.
func (object robotObject) toV1alpha1() error {
	object["apiVersion"] = robotv1alpha1.SchemeGroupVersion.String()
	takeAnnotation(object)
	spec := child(object, "spec")
	if spec == nil {
		return nil
	}
	var data struct {
		Ports           any `json:"ports,omitempty"`
		Strategy        any `json:"strategy,omitempty"`
		MinReadySeconds any `json:"minReadySeconds,omitempty"`

		InitContainers                any `json:"initContainers,omitempty"`
		Sidecars                      any `json:"sidecars,omitempty"`
		TerminationGracePeriodSeconds any `json:"terminationGracePeriodSeconds,omitempty"`
		PreStop                       any `json:"preStop,omitempty"`
		RollOnConfigChange            any `json:"rollOnConfigChange,omitempty"`
		Service                       any `json:"service,omitempty"`
	}
	if ports, _ := spec[fieldPorts].([]any); len(ports) > 0 {
		if first, ok := ports[0].(map[string]any); ok && present(first, "containerPort") {
			spec[fieldPort] = first["containerPort"]
		}
		if !onePlainPort(ports) {
			data.Ports = ports
		}
	}
	delete(spec, fieldPorts)
	if placement := child(spec, fieldPlacement); placement != nil {
		for _, name := range placementFields {
			if present(placement, name) {
				spec[name] = placement[name]
			}
		}
	}
	delete(spec, fieldPlacement)
	if present(spec, fieldStrategy) {
		data.Strategy = spec[fieldStrategy]
	}
	delete(spec, fieldStrategy)
	if seconds, ok := spec[fieldMinReady].(json.Number); ok && !isZeroNumber(seconds) {
		data.MinReadySeconds = seconds
	}
	delete(spec, fieldMinReady)
	// An empty list is no list: the typed conversion cannot tell them
	// apart either.
	if items, _ := spec["initContainers"].([]any); len(items) > 0 {
		data.InitContainers = items
	}
	if items, _ := spec["sidecars"].([]any); len(items) > 0 {
		data.Sidecars = items
	}
	if present(spec, "terminationGracePeriodSeconds") {
		data.TerminationGracePeriodSeconds = spec["terminationGracePeriodSeconds"]
	}
	if present(spec, "preStop") {
		data.PreStop = spec["preStop"]
	}
	if present(spec, "rollOnConfigChange") {
		data.RollOnConfigChange = spec["rollOnConfigChange"]
	}
	for _, name := range keptFields {
		delete(spec, name)
	}
	if service := child(spec, fieldService); service != nil {
		kept := map[string]any{}
		for _, name := range serviceFields {
			if present(service, name) {
				kept[name] = service[name]
			}
			delete(service, name)
		}
		if len(kept) > 0 {
			data.Service = kept
		}
	}
	if data.Ports == nil && data.Strategy == nil && data.MinReadySeconds == nil && data.Service == nil &&
		data.InitContainers == nil && data.Sidecars == nil && data.TerminationGracePeriodSeconds == nil && data.PreStop == nil &&
		data.RollOnConfigChange == nil {
		return nil
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("keeping the fields v1alpha1 cannot hold: %w", err)
	}
	metadata := child(object, "metadata")
	if metadata == nil {
		metadata = map[string]any{}
		object["metadata"] = metadata
	}
	annotations := child(metadata, "annotations")
	if annotations == nil {
		annotations = map[string]any{}
		metadata["annotations"] = annotations
	}
	annotations[robotv1alpha1.ConversionDataAnnotation] = string(raw)
	return nil
}

// takeAnnotation removes the conversion's annotation from object, and
// returns it; the annotations go too when no other is left.
func takeAnnotation(object robotObject) (string, bool) {
	metadata := child(object, "metadata")
	annotations := child(metadata, "annotations")
	value, ok := annotations[robotv1alpha1.ConversionDataAnnotation]
	if !ok {
		return "", false
	}
	delete(annotations, robotv1alpha1.ConversionDataAnnotation)
	if len(annotations) == 0 {
		delete(metadata, "annotations")
	}
	text, _ := value.(string)
	return text, true
}

// onePlainPort reports whether ports are exactly what v1alpha1's port means:
// one TCP port named PortName, on the Service at its own number and with
// the node port the API server picks.
func onePlainPort(ports []any) bool {
	if len(ports) != 1 {
		return false
	}
	port, _ := ports[0].(map[string]any)
	return port["name"] == robotv1alpha1.PortName && port["protocol"] == string(corev1.ProtocolTCP) &&
		!present(port, "servicePort") && !present(port, "nodePort")
}

// isZeroNumber reports whether n is a zero, however written.
func isZeroNumber(n json.Number) bool {
	f, err := n.Float64()
	return err == nil && f == 0
}

// asJSON returns value as encoding/json would decode its JSON into an any.
func asJSON(value any) any {
	raw, err := json.Marshal(value)
	if err != nil {
		panic(fmt.Sprintf("a value of the API types does not encode: %v", err))
	}
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.UseNumber()
	var out any
	if err := decoder.Decode(&out); err != nil {
		panic(fmt.Sprintf("encoding/json's own output does not decode: %v", err))
	}
	return out
}
