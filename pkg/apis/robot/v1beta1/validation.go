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

package v1beta1

import (
	"cmp"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The bounds of the CRD's rules that the functions below repeat. The markers
// on RobotSpec are the source; TestValidationMatchesTheCRD (in the
// conversion's tests) reads the generated CRD and fails when they part.
const (
	// MaxPorts is spec.ports' maxItems.
	MaxPorts = 16
	// MaxMinReadySeconds is spec.minReadySeconds' maximum: below the
	// Deployment's progress deadline, 600 seconds, which the API server
	// requires of a Deployment.
	MaxMinReadySeconds = 599
)

// The functions below repeat, in Go, the CRD's rules for the fields that can
// reach a stored v1beta1 Robot without the API server checking them: those a
// conversion from v1alpha1 restores from its annotation, and those of Robots
// stored before a rule existed. The conversion checks what it restores with
// them, and the operator what it builds a Deployment from.

// ValidatePorts checks spec.ports: at most MaxPorts, each an IANA service
// name, a number in 1-65535 and TCP, UDP or SCTP (unset is TCP), no two of
// one name, no two of one number and protocol. Server-side apply keys a
// container's ports by number and protocol, and the API server would refuse
// the rest in the Deployment.
func ValidatePorts(ports []RobotPort) error {
	if len(ports) > MaxPorts {
		return fmt.Errorf("spec.ports must have at most %d ports, not %d", MaxPorts, len(ports))
	}
	names := map[string]bool{}
	type key struct {
		port     int32
		protocol corev1.Protocol
	}
	keys := map[key]bool{}
	for i, port := range ports {
		if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
			return fmt.Errorf("spec.ports[%d].name %q is not a port name: %s", i, port.Name, strings.Join(msgs, "; "))
		}
		if names[port.Name] {
			return fmt.Errorf("spec.ports[%d].name %q names two ports", i, port.Name)
		}
		names[port.Name] = true
		if port.ContainerPort < 1 || port.ContainerPort > 65535 {
			return fmt.Errorf("spec.ports[%d].containerPort must be between 1 and 65535, not %d", i, port.ContainerPort)
		}
		protocol := PortProtocol(port)
		switch protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			return fmt.Errorf("spec.ports[%d].protocol must be TCP, UDP or SCTP, not %q", i, port.Protocol)
		}
		k := key{port.ContainerPort, protocol}
		if keys[k] {
			return fmt.Errorf("spec.ports[%d]: two ports have containerPort %d and protocol %s", i, port.ContainerPort, protocol)
		}
		keys[k] = true
	}
	return nil
}

// PortProtocol is port's protocol, TCP when it has none: a Robot stored
// before the CRD defaulted it has none.
func PortProtocol(port RobotPort) corev1.Protocol {
	return cmp.Or(port.Protocol, corev1.ProtocolTCP)
}

// ValidateStrategy checks spec.strategy: RollingUpdate (or unset) or
// Recreate, rollingUpdate only with RollingUpdate, and maxSurge and
// maxUnavailable not both 0, which the API server refuses in a Deployment.
func ValidateStrategy(strategy *RobotStrategy) error {
	if strategy == nil {
		return nil
	}
	switch strategy.Type {
	case "", StrategyRollingUpdate:
	case StrategyRecreate:
		if strategy.RollingUpdate != nil {
			return fmt.Errorf("spec.strategy.rollingUpdate can be set only when spec.strategy.type is RollingUpdate, not Recreate")
		}
	default:
		return fmt.Errorf("spec.strategy.type must be RollingUpdate or Recreate, not %q", strategy.Type)
	}
	if rolling := strategy.RollingUpdate; rolling != nil && isZero(rolling.MaxSurge) && isZero(rolling.MaxUnavailable) {
		return fmt.Errorf("spec.strategy.rollingUpdate: maxSurge and maxUnavailable cannot both be 0, or no pod could ever be replaced")
	}
	return nil
}

// ValidateMinReadySeconds checks spec.minReadySeconds: 0 to
// MaxMinReadySeconds.
func ValidateMinReadySeconds(seconds int32) error {
	if seconds < 0 || seconds > MaxMinReadySeconds {
		return fmt.Errorf("spec.minReadySeconds must be between 0 and %d, below the Deployment's progress deadline, not %d", MaxMinReadySeconds, seconds)
	}
	return nil
}

// isZero reports whether value is set to 0 or "0%". Unset is 25%.
func isZero(value *intstr.IntOrString) bool {
	if value == nil {
		return false
	}
	if value.Type == intstr.Int {
		return value.IntVal == 0
	}
	return value.StrVal == "0%"
}
