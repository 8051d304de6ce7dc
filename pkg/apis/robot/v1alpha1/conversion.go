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

package v1alpha1

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	"github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// The conversions by hand, for what differs between the versions; the rest
// is generated (zz_generated.conversion.go).
//
// v1beta1 can hold everything v1alpha1 can. The other way round, what
// v1alpha1 has no field for (a second port, a port named other than "http"
// or not TCP, a port's servicePort or nodePort, a rollout strategy,
// minReadySeconds, init containers, sidecars, a grace period, a preStop
// hook, rolling on config changes, the Service's metadata and traffic
// fields) is kept in the annotation ConversionDataAnnotation, so
// that a read-modify-write through v1alpha1 (kubectl edit, an older client)
// loses none of it.

// ConversionDataAnnotation holds, on a Robot read as v1alpha1, the v1beta1
// fields that v1alpha1 cannot express, as JSON. It is the conversion's own:
// converting to v1beta1 reads it and removes it.
const ConversionDataAnnotation = "robot.dev/conversion-data"

// PortName is the name v1alpha1 gives its one port, on the container and on
// the Service.
const PortName = "http"

// ConversionData is what ConversionDataAnnotation holds.
type ConversionData struct {
	Ports           []v1beta1.RobotPort    `json:"ports,omitempty"`
	Strategy        *v1beta1.RobotStrategy `json:"strategy,omitempty"`
	MinReadySeconds int32                  `json:"minReadySeconds,omitempty"`

	InitContainers                []v1beta1.RobotContainer `json:"initContainers,omitempty"`
	Sidecars                      []v1beta1.RobotSidecar   `json:"sidecars,omitempty"`
	TerminationGracePeriodSeconds *int64                   `json:"terminationGracePeriodSeconds,omitempty"`
	PreStop                       *v1beta1.RobotPreStop    `json:"preStop,omitempty"`
	RollOnConfigChange            *bool                    `json:"rollOnConfigChange,omitempty"`
	// Service holds spec.service's fields but its type, which v1alpha1
	// has.
	Service *v1beta1.RobotService `json:"service,omitempty"`
}

// empty reports whether data keeps nothing, and the annotation is not
// needed.
func (data *ConversionData) empty() bool {
	return data.Ports == nil && data.Strategy == nil && data.MinReadySeconds == 0 &&
		len(data.InitContainers) == 0 && len(data.Sidecars) == 0 && data.TerminationGracePeriodSeconds == nil && data.PreStop == nil &&
		data.RollOnConfigChange == nil && data.Service == nil
}

// Why ReadConversionData refuses an annotation.
var (
	// ErrNotConversionData: the annotation is not the JSON the conversion
	// writes. Before the conversion existed its key meant nothing, so
	// anyone could have set it.
	ErrNotConversionData = errors.New("not the JSON the conversion writes")
	// ErrConversionDataInvalid: the annotation holds values that
	// robot.dev/v1beta1 refuses, written through v1alpha1, whose schema
	// cannot check them.
	ErrConversionDataInvalid = errors.New("holds values robot.dev/v1beta1 refuses")
)

// ReadConversionData reads the value of ConversionDataAnnotation, and checks
// what it would restore against v1beta1's rules: the API server validates a
// write through v1alpha1 against v1alpha1's schema only, and stores what the
// conversion makes of it unchecked. The error wraps ErrNotConversionData or
// ErrConversionDataInvalid.
func ReadConversionData(value string) (*ConversionData, error) {
	// Keys are matched to fields exactly, and each may appear once, as the
	// API server reads a Robot. encoding/json would match a key whatever
	// its case, the last match winning, while the webhook restores the
	// kept fields from a map that keeps every key as written: with
	// {"sidecars":[A],"SIDECARS":[B]}, B would be checked and A restored.
	var data ConversionData
	strict, err := sigsjson.UnmarshalStrict([]byte(value), &data, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotConversionData, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrNotConversionData, errors.Join(strict...))
	}
	for _, err := range []error{
		v1beta1.ValidatePorts(data.Ports),
		v1beta1.ValidateStrategy(data.Strategy),
		v1beta1.ValidateMinReadySeconds(data.MinReadySeconds),
		v1beta1.ValidateContainers(data.InitContainers, data.Sidecars),
		v1beta1.ValidateShutdown(data.TerminationGracePeriodSeconds, data.PreStop),
		// The type is v1alpha1's: RestoreService drops what it cannot take.
		v1beta1.ValidateServiceFields(data.Service),
	} {
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConversionDataInvalid, err)
		}
	}
	return &data, nil
}

// Convert_v1alpha1_Robot_To_v1beta1_Robot converts a Robot, taking back what
// an earlier conversion to v1alpha1 kept in ConversionDataAnnotation. An
// annotation that ReadConversionData refuses restores nothing: the
// conversion cannot tell a read from a write, and failing it would make the
// Robot unreadable (the webhook also counts and logs it).
func Convert_v1alpha1_Robot_To_v1beta1_Robot(in *Robot, out *v1beta1.Robot, s conversion.Scope) error {
	if err := autoConvert_v1alpha1_Robot_To_v1beta1_Robot(in, out, s); err != nil {
		return err
	}
	raw, ok := in.Annotations[ConversionDataAnnotation]
	if !ok {
		return nil
	}
	out.Annotations = withoutAnnotation(in.Annotations, ConversionDataAnnotation)
	data, err := ReadConversionData(raw)
	if err != nil {
		return nil
	}
	// Through v1alpha1, port is the first port. Removing it removes them
	// all, as a Robot without port has no Service; changing it changes the
	// first port's number and keeps the others.
	if in.Spec.Port != nil && len(data.Ports) > 0 {
		out.Spec.Ports = data.Ports
		out.Spec.Ports[0].ContainerPort = *in.Spec.Port
	}
	out.Spec.Strategy = data.Strategy
	out.Spec.MinReadySeconds = data.MinReadySeconds
	out.Spec.InitContainers = data.InitContainers
	out.Spec.Sidecars = data.Sidecars
	out.Spec.TerminationGracePeriodSeconds = data.TerminationGracePeriodSeconds
	out.Spec.PreStop = data.PreStop
	out.Spec.RollOnConfigChange = data.RollOnConfigChange
	// Through v1alpha1, removing service removes its other fields too, as
	// a Robot without service asks for the default Service.
	if out.Spec.Service != nil && data.Service != nil {
		*out.Spec.Service = RestoreService(out.Spec.Service.Type, *data.Service)
	}
	// Through v1alpha1, a type that opens no port on the nodes drops the
	// ports' nodePorts, as the API server drops a Service's.
	if out.Spec.Service == nil || !v1beta1.TakesNodePorts(out.Spec.Service.Type) {
		for i := range out.Spec.Ports {
			out.Spec.Ports[i].NodePort = 0
		}
	}
	return nil
}

// RestoreService returns kept, the fields of a Robot's Service that v1alpha1
// cannot hold, with serviceType, v1alpha1's, and without the fields that
// type cannot take: through v1alpha1, changing the type from LoadBalancer
// to ClusterIP drops the load balancer's fields, as the API server drops a
// Service's when its type changes, rather than making a Robot that
// v1beta1's rules refuse.
func RestoreService(serviceType v1beta1.ServiceType, kept v1beta1.RobotService) v1beta1.RobotService {
	kept.Type = serviceType
	switch cmp.Or(serviceType, v1beta1.ServiceTypeClusterIP) {
	case v1beta1.ServiceTypeLoadBalancer:
		return kept
	case v1beta1.ServiceTypeNodePort:
	default:
		kept.ExternalTrafficPolicy = ""
	}
	kept.LoadBalancerSourceRanges = nil
	kept.LoadBalancerClass = ""
	return kept
}

// serviceToKeep returns what of service v1alpha1 cannot hold (all but its
// type), or nil when that is nothing.
func serviceToKeep(service *v1beta1.RobotService) (*v1beta1.RobotService, error) {
	if service == nil {
		return nil, nil
	}
	kept := *service
	kept.Type = ""
	raw, err := json.Marshal(kept)
	if err != nil || string(raw) == "{}" {
		return nil, err
	}
	return &kept, nil
}

// Convert_v1beta1_Robot_To_v1alpha1_Robot converts a Robot, keeping in
// ConversionDataAnnotation what v1alpha1 has no field for. The annotation is
// always written from the Robot's fields, and removed when they need none:
// v1beta1 stores annotations as written, and one planted through it must
// not reach a later write through v1alpha1.
func Convert_v1beta1_Robot_To_v1alpha1_Robot(in *v1beta1.Robot, out *Robot, s conversion.Scope) error {
	if err := autoConvert_v1beta1_Robot_To_v1alpha1_Robot(in, out, s); err != nil {
		return err
	}
	var data ConversionData
	if !onePlainPort(in.Spec.Ports) {
		data.Ports = in.Spec.Ports
	}
	data.Strategy = in.Spec.Strategy
	data.MinReadySeconds = in.Spec.MinReadySeconds
	data.InitContainers = in.Spec.InitContainers
	data.Sidecars = in.Spec.Sidecars
	data.TerminationGracePeriodSeconds = in.Spec.TerminationGracePeriodSeconds
	data.PreStop = in.Spec.PreStop
	data.RollOnConfigChange = in.Spec.RollOnConfigChange
	service, err := serviceToKeep(in.Spec.Service)
	if err != nil {
		return fmt.Errorf("robot %s/%s: keeping the Service's fields v1alpha1 cannot hold: %w", in.Namespace, in.Name, err)
	}
	data.Service = service
	if data.empty() {
		if _, planted := in.Annotations[ConversionDataAnnotation]; planted {
			out.Annotations = withoutAnnotation(in.Annotations, ConversionDataAnnotation)
		}
		return nil
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("robot %s/%s: keeping the fields v1alpha1 cannot hold: %w", in.Namespace, in.Name, err)
	}
	// The generated conversion shares the annotations' map with in.
	out.Annotations = maps.Clone(in.Annotations)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[ConversionDataAnnotation] = string(raw)
	// The API server refuses annotations of over 256 KiB in all, in a
	// conversion's answer as in a write, and fails the whole LIST or
	// WATCH that needed it. What does not fit is left out, as the webhook
	// does: a write through v1alpha1 then drops those fields.
	if errs := apivalidation.ValidateAnnotations(out.Annotations, field.NewPath("metadata", "annotations")); len(errs) > 0 {
		out.Annotations = withoutAnnotation(in.Annotations, ConversionDataAnnotation)
	}
	return nil
}

// onePlainPort reports whether ports are exactly what v1alpha1's port means:
// none, or one TCP port named PortName, on the Service at its own number
// and with the node port the API server picks.
func onePlainPort(ports []v1beta1.RobotPort) bool {
	switch len(ports) {
	case 0:
		return true
	case 1:
		return ports[0].Name == PortName && ports[0].Protocol == corev1.ProtocolTCP &&
			ports[0].ServicePort == 0 && ports[0].NodePort == 0
	}
	return false
}

// withoutAnnotation returns annotations without key, nil when none is left.
func withoutAnnotation(annotations map[string]string, key string) map[string]string {
	rest := maps.Clone(annotations)
	delete(rest, key)
	if len(rest) == 0 {
		return nil
	}
	return rest
}

// Convert_v1beta1_RobotService_To_v1alpha1_RobotService converts the type,
// the one field of a Robot's Service that v1alpha1 has. The others are kept
// by Convert_v1beta1_Robot_To_v1alpha1_Robot, which sees the annotations.
func Convert_v1beta1_RobotService_To_v1alpha1_RobotService(in *v1beta1.RobotService, out *RobotService, s conversion.Scope) error {
	return autoConvert_v1beta1_RobotService_To_v1alpha1_RobotService(in, out, s)
}

// Convert_v1alpha1_RobotSpec_To_v1beta1_RobotSpec converts port to one TCP
// port named PortName, and gathers the scheduling fields into placement.
func Convert_v1alpha1_RobotSpec_To_v1beta1_RobotSpec(in *RobotSpec, out *v1beta1.RobotSpec, s conversion.Scope) error {
	if err := autoConvert_v1alpha1_RobotSpec_To_v1beta1_RobotSpec(in, out, s); err != nil {
		return err
	}
	out.Ports = nil
	if in.Port != nil {
		out.Ports = []v1beta1.RobotPort{{Name: PortName, ContainerPort: *in.Port, Protocol: corev1.ProtocolTCP}}
	}
	out.Placement = v1beta1.RobotPlacement{
		NodeSelector:              in.NodeSelector,
		Tolerations:               in.Tolerations,
		Affinity:                  in.Affinity,
		TopologySpreadConstraints: in.TopologySpreadConstraints,
		PriorityClassName:         in.PriorityClassName,
	}
	return nil
}

// Convert_v1beta1_RobotSpec_To_v1alpha1_RobotSpec converts the first port to
// port, and spreads placement back over the spec. What v1alpha1 cannot hold
// is kept by Convert_v1beta1_Robot_To_v1alpha1_Robot, which sees the
// annotations.
func Convert_v1beta1_RobotSpec_To_v1alpha1_RobotSpec(in *v1beta1.RobotSpec, out *RobotSpec, s conversion.Scope) error {
	if err := autoConvert_v1beta1_RobotSpec_To_v1alpha1_RobotSpec(in, out, s); err != nil {
		return err
	}
	out.Port = nil
	if len(in.Ports) > 0 {
		port := in.Ports[0].ContainerPort
		out.Port = &port
	}
	out.NodeSelector = in.Placement.NodeSelector
	out.Tolerations = in.Placement.Tolerations
	out.Affinity = in.Placement.Affinity
	out.TopologySpreadConstraints = in.Placement.TopologySpreadConstraints
	out.PriorityClassName = in.Placement.PriorityClassName
	return nil
}
