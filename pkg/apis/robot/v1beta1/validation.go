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
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
	// MaxInitContainers is spec.initContainers' maxItems. The CRD's rule on
	// each container's resources is costly (its quantities have no length
	// bound), and the API server bounds a rule's cost times the number of
	// items it may run on: at 8, it refuses the CRD.
	MaxInitContainers = 4
	// MaxSidecars is spec.sidecars' maxItems, bounded for the same reason.
	MaxSidecars = 4
	// MaxTerminationGracePeriodSeconds is spec.terminationGracePeriodSeconds'
	// maximum: a day.
	MaxTerminationGracePeriodSeconds = 86400
	// DefaultTerminationGracePeriodSeconds is Kubernetes' grace period,
	// which a pod has when the Robot sets none.
	DefaultTerminationGracePeriodSeconds = 30
	// ContainerName is the name of the Robot's own container in its pods,
	// which no init container or sidecar may take.
	ContainerName = "robot"
	// MaxServiceMetadata is spec.service.annotations' and labels'
	// maxProperties.
	MaxServiceMetadata = 64
	// MaxSourceRanges is spec.service.loadBalancerSourceRanges' maxItems.
	MaxSourceRanges = 256
)

// ReservedLabels are the labels the operator puts on a Robot's objects:
// robot.dev/name selects its pods, and app.kubernetes.io/managed-by is how
// the operator's informers find its Deployments and Services. Neither
// spec.podLabels nor spec.service.labels may set them, which the CRD's
// rules say too.
var ReservedLabels = []string{"robot.dev/name", "app.kubernetes.io/managed-by", "app.kubernetes.io/name", "app.kubernetes.io/instance"}

// The annotations spec.service.annotations may not set.
const (
	// AnnotationSpecHash is the operator's record, on the Deployment and
	// the Service, of what it applied.
	AnnotationSpecHash = "robot.dev/spec-hash"
	// AnnotationLoadBalancerSourceRanges is loadBalancerSourceRanges' older
	// form, which the API server reads only when the field is unset; a
	// Robot says it with the field.
	AnnotationLoadBalancerSourceRanges = corev1.AnnotationLoadBalancerSourceRangesKey
)

// The bounds of a container's lists, the same for the Robot's container, its
// init containers and its sidecars.
const (
	maxImageLength  = 512
	maxArgs         = 256
	maxEnv          = 256
	maxEnvFrom      = 64
	maxVolumeMounts = 64
	maxPreStopSleep = MaxTerminationGracePeriodSeconds - 1
)

// The functions below repeat, in Go, the CRD's rules for the fields that can
// reach a stored v1beta1 Robot without the API server checking them: those a
// conversion from v1alpha1 restores from its annotation, and those of Robots
// stored before a rule existed. The conversion checks what it restores with
// them, and the operator what it builds a Deployment from.

// ValidatePorts checks spec.ports: at most MaxPorts, each an IANA service
// name, a number in 1-65535 and TCP, UDP or SCTP (unset is TCP), no two of
// one name, no two of one number and protocol; a servicePort and a nodePort,
// when set, in 1-65535, no two of one Service port (ServicePort) and
// protocol, no two of one nodePort and protocol. Server-side apply keys a
// container's ports, and a Service's, by number and protocol, and the API
// server would refuse the rest in the Deployment or the Service.
func ValidatePorts(ports []RobotPort) error {
	if err := validatePorts("spec.ports", ports); err != nil {
		return err
	}
	type key struct {
		port     int32
		protocol corev1.Protocol
	}
	servicePorts, nodePorts := map[key]bool{}, map[key]bool{}
	for i, port := range ports {
		protocol := PortProtocol(port)
		if port.ServicePort < 0 || port.ServicePort > 65535 {
			return fmt.Errorf("spec.ports[%d].servicePort must be between 1 and 65535, not %d", i, port.ServicePort)
		}
		if port.NodePort < 0 || port.NodePort > 65535 {
			return fmt.Errorf("spec.ports[%d].nodePort must be between 1 and 65535, not %d", i, port.NodePort)
		}
		k := key{ServicePort(port), protocol}
		if servicePorts[k] {
			return fmt.Errorf("spec.ports[%d]: two ports have the Service port %d and protocol %s (a port's servicePort, or its containerPort when it has none)", i, k.port, protocol)
		}
		servicePorts[k] = true
		if port.NodePort == 0 {
			continue
		}
		k = key{port.NodePort, protocol}
		if nodePorts[k] {
			return fmt.Errorf("spec.ports[%d]: two ports have nodePort %d and protocol %s", i, port.NodePort, protocol)
		}
		nodePorts[k] = true
	}
	return nil
}

// ValidateNodePorts checks that no port of spec.ports sets a nodePort
// unless spec.service's type is NodePort or LoadBalancer, which alone open
// a port on the nodes. A type left unset is ClusterIP.
func ValidateNodePorts(ports []RobotPort, service *RobotService) error {
	serviceType := ServiceTypeClusterIP
	if service != nil {
		serviceType = cmp.Or(service.Type, ServiceTypeClusterIP)
	}
	if TakesNodePorts(serviceType) {
		return nil
	}
	for i, port := range ports {
		if port.NodePort != 0 {
			return fmt.Errorf("spec.ports[%d].nodePort can be set only when spec.service.type is NodePort or LoadBalancer, not %s", i, serviceType)
		}
	}
	return nil
}

// TakesNodePorts reports whether a Service of serviceType opens its ports
// on the nodes, and so may have a port's nodePort: NodePort and
// LoadBalancer do. Unset is ClusterIP, which does not.
func TakesNodePorts(serviceType ServiceType) bool {
	return serviceType == ServiceTypeNodePort || serviceType == ServiceTypeLoadBalancer
}

// ServicePort is the number of port on the Robot's Service: its
// servicePort, or its containerPort when it has none.
func ServicePort(port RobotPort) int32 {
	return cmp.Or(port.ServicePort, port.ContainerPort)
}

// validatePorts checks what spec.ports and a sidecar's ports have alike, for
// the ports at path.
func validatePorts(path string, ports []RobotPort) error {
	if len(ports) > MaxPorts {
		return fmt.Errorf("%s must have at most %d ports, not %d", path, MaxPorts, len(ports))
	}
	names := map[string]bool{}
	type key struct {
		port     int32
		protocol corev1.Protocol
	}
	keys := map[key]bool{}
	for i, port := range ports {
		if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
			return fmt.Errorf("%s[%d].name %q is not a port name: %s", path, i, port.Name, strings.Join(msgs, "; "))
		}
		if names[port.Name] {
			return fmt.Errorf("%s[%d].name %q names two ports", path, i, port.Name)
		}
		names[port.Name] = true
		if port.ContainerPort < 1 || port.ContainerPort > 65535 {
			return fmt.Errorf("%s[%d].containerPort must be between 1 and 65535, not %d", path, i, port.ContainerPort)
		}
		protocol := PortProtocol(port)
		switch protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			return fmt.Errorf("%s[%d].protocol must be TCP, UDP or SCTP, not %q", path, i, port.Protocol)
		}
		k := key{port.ContainerPort, protocol}
		if keys[k] {
			return fmt.Errorf("%s[%d]: two ports have containerPort %d and protocol %s", path, i, port.ContainerPort, protocol)
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

// ValidateService checks spec.service: its fields, as ValidateServiceFields
// does, and that those a type cannot take are unset, as the API server
// requires of a Service (externalTrafficPolicy only for NodePort and
// LoadBalancer, loadBalancerSourceRanges and loadBalancerClass only for
// LoadBalancer). A type left unset is ClusterIP.
func ValidateService(service *RobotService) error {
	if service == nil {
		return nil
	}
	if err := ValidateServiceFields(service); err != nil {
		return err
	}
	serviceType := cmp.Or(service.Type, ServiceTypeClusterIP)
	switch {
	case service.ExternalTrafficPolicy != "" && serviceType != ServiceTypeNodePort && serviceType != ServiceTypeLoadBalancer:
		return fmt.Errorf("spec.service.externalTrafficPolicy can be set only when spec.service.type is NodePort or LoadBalancer, not %s", serviceType)
	case len(service.LoadBalancerSourceRanges) > 0 && serviceType != ServiceTypeLoadBalancer:
		return fmt.Errorf("spec.service.loadBalancerSourceRanges can be set only when spec.service.type is LoadBalancer, not %s", serviceType)
	case service.LoadBalancerClass != "" && serviceType != ServiceTypeLoadBalancer:
		return fmt.Errorf("spec.service.loadBalancerClass can be set only when spec.service.type is LoadBalancer, not %s", serviceType)
	}
	return nil
}

// ValidateServiceFields checks each field of spec.service but the type on
// its own, with Kubernetes' own checks where the CRD cannot afford them:
// annotation keys and their total size as a Service's, label keys and
// values as any object's (a CEL rule's cost grows with the length of a
// map's keys, which a schema cannot bound), the operator's own labels and
// annotations not set, the traffic policies, the source ranges (CIDRs by
// Kubernetes' strict rules) and the class (a qualified name).
func ValidateServiceFields(service *RobotService) error {
	if service == nil {
		return nil
	}
	if n := len(service.Annotations); n > MaxServiceMetadata {
		return fmt.Errorf("spec.service.annotations must have at most %d keys, not %d", MaxServiceMetadata, n)
	}
	for _, key := range []string{AnnotationSpecHash, AnnotationLoadBalancerSourceRanges} {
		if _, ok := service.Annotations[key]; ok {
			return fmt.Errorf("spec.service.annotations cannot set %s: %s", key, map[string]string{
				AnnotationSpecHash:                 "the operator records on it what it applied",
				AnnotationLoadBalancerSourceRanges: "set spec.service.loadBalancerSourceRanges instead",
			}[key])
		}
	}
	if err := firstError(apivalidation.ValidateAnnotations(service.Annotations, field.NewPath("spec", "service", "annotations"))); err != nil {
		return err
	}
	if n := len(service.Labels); n > MaxServiceMetadata {
		return fmt.Errorf("spec.service.labels must have at most %d keys, not %d", MaxServiceMetadata, n)
	}
	for _, key := range ReservedLabels {
		if _, ok := service.Labels[key]; ok {
			return fmt.Errorf("spec.service.labels cannot set %s: the operator sets it", key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(service.Labels)) {
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			return fmt.Errorf("spec.service.labels: %q is not a label key: %s", key, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(service.Labels[key]); len(msgs) > 0 {
			return fmt.Errorf("spec.service.labels[%q]: %q is not a label value: %s", key, service.Labels[key], strings.Join(msgs, "; "))
		}
	}
	for name, policy := range map[string]string{
		"externalTrafficPolicy": string(service.ExternalTrafficPolicy),
		"internalTrafficPolicy": string(service.InternalTrafficPolicy),
	} {
		if policy != "" && policy != "Cluster" && policy != "Local" {
			return fmt.Errorf("spec.service.%s must be Cluster or Local, not %q", name, policy)
		}
	}
	if n := len(service.LoadBalancerSourceRanges); n > MaxSourceRanges {
		return fmt.Errorf("spec.service.loadBalancerSourceRanges must have at most %d entries, not %d", MaxSourceRanges, n)
	}
	for i, cidr := range service.LoadBalancerSourceRanges {
		path := field.NewPath("spec", "service", "loadBalancerSourceRanges").Index(i)
		if err := firstError(validation.IsValidCIDRForLegacyField(path, cidr, true, nil)); err != nil {
			return err
		}
	}
	if class := service.LoadBalancerClass; class != "" {
		if msgs := validation.IsQualifiedName(class); len(msgs) > 0 {
			return fmt.Errorf("spec.service.loadBalancerClass %q is not a label-style name: %s", class, strings.Join(msgs, "; "))
		}
	}
	return nil
}

// firstError is the first of errs, in the order of their values, so that
// the same spec always gives the same message; nil when there is none.
func firstError(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	slices.SortFunc(errs, func(a, b *field.Error) int { return strings.Compare(a.Error(), b.Error()) })
	return errs[0]
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

// ValidateContainers checks spec.initContainers and spec.sidecars on their
// own: at most MaxInitContainers and MaxSidecars; each named by a DNS-1123
// label that is not ContainerName and that no other of them has; an image
// reference (ValidateImage); limits at least requests (ValidateResources);
// a sidecar's probes (ValidateProbes); its lists within their bounds, env and volumeMounts
// without two of one key; a sidecar's ports as spec.ports' are checked.
// ValidateContainerReferences checks what they refer to elsewhere in the
// spec.
func ValidateContainers(initContainers []RobotContainer, sidecars []RobotSidecar) error {
	if len(initContainers) > MaxInitContainers {
		return fmt.Errorf("spec.initContainers must have at most %d containers, not %d", MaxInitContainers, len(initContainers))
	}
	if len(sidecars) > MaxSidecars {
		return fmt.Errorf("spec.sidecars must have at most %d containers, not %d", MaxSidecars, len(sidecars))
	}
	names := map[string]string{}
	check := func(path string, c *RobotContainer) error {
		if msgs := validation.IsDNS1123Label(c.Name); len(msgs) > 0 {
			return fmt.Errorf("%s.name %q is not a container name: %s", path, c.Name, strings.Join(msgs, "; "))
		}
		if c.Name == ContainerName {
			return fmt.Errorf("%s.name cannot be %q: that is the name of the Robot's own container", path, ContainerName)
		}
		if other, ok := names[c.Name]; ok {
			return fmt.Errorf("%s.name %q is the name of %s too: every container of a pod needs a name of its own", path, c.Name, other)
		}
		names[c.Name] = path
		return validateContainer(path, c)
	}
	for i := range initContainers {
		if err := check(fmt.Sprintf("spec.initContainers[%d]", i), &initContainers[i]); err != nil {
			return err
		}
	}
	for i := range sidecars {
		path := fmt.Sprintf("spec.sidecars[%d]", i)
		if err := check(path, &sidecars[i].RobotContainer); err != nil {
			return err
		}
		if err := validatePorts(path+".ports", sidecars[i].Ports); err != nil {
			return err
		}
		for j, port := range sidecars[i].Ports {
			if port.ServicePort != 0 || port.NodePort != 0 {
				return fmt.Errorf("%s.ports[%d] cannot set servicePort or nodePort: a sidecar's ports are not on the Robot's Service, which exposes spec.ports", path, j)
			}
		}
		sidecar := &sidecars[i]
		if err := ValidateProbes(path, sidecar.ReadinessProbe, sidecar.LivenessProbe, sidecar.StartupProbe); err != nil {
			return err
		}
	}
	return nil
}

// validateContainer checks what the CRD's schema says of one container's
// fields.
func validateContainer(path string, c *RobotContainer) error {
	if err := ValidateImage(path+".image", c.Image); err != nil {
		return err
	}
	if err := ValidateResources(path+".resources", c.Resources); err != nil {
		return err
	}
	if err := ValidateEnv(path, c.Env, c.EnvFrom); err != nil {
		return err
	}
	switch {
	case len(c.Command) > maxArgs:
		return fmt.Errorf("%s.command must have at most %d items, not %d", path, maxArgs, len(c.Command))
	case len(c.Args) > maxArgs:
		return fmt.Errorf("%s.args must have at most %d items, not %d", path, maxArgs, len(c.Args))
	case len(c.Env) > maxEnv:
		return fmt.Errorf("%s.env must have at most %d items, not %d", path, maxEnv, len(c.Env))
	case len(c.EnvFrom) > maxEnvFrom:
		return fmt.Errorf("%s.envFrom must have at most %d items, not %d", path, maxEnvFrom, len(c.EnvFrom))
	case len(c.VolumeMounts) > maxVolumeMounts:
		return fmt.Errorf("%s.volumeMounts must have at most %d items, not %d", path, maxVolumeMounts, len(c.VolumeMounts))
	}
	env := map[string]bool{}
	for i, e := range c.Env {
		if env[e.Name] {
			return fmt.Errorf("%s.env[%d]: two variables are named %q", path, i, e.Name)
		}
		env[e.Name] = true
	}
	mounts := map[string]bool{}
	for i, m := range c.VolumeMounts {
		if mounts[m.MountPath] {
			return fmt.Errorf("%s.volumeMounts[%d]: two mounts have mountPath %q", path, i, m.MountPath)
		}
		mounts[m.MountPath] = true
	}
	return nil
}

// ValidateContainerReferences checks what spec.initContainers and
// spec.sidecars refer to in the rest of the spec: every volume they mount is
// one of spec.volumes, and no sidecar's port has the name of a port of
// spec.ports or of another sidecar, since a Service's targetPort and a probe
// find a port of the pod by its name. It checks too that a probe that names
// its port names one of its own container's ports (spec.ports for the
// Robot's), where the kubelet looks the name up.
func ValidateContainerReferences(spec *RobotSpec) error {
	if err := validateProbePorts("spec", spec.Ports, spec.ReadinessProbe, spec.LivenessProbe, spec.StartupProbe); err != nil {
		return err
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	mounts := func(path string, c *RobotContainer) error {
		for i, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				return fmt.Errorf("%s.volumeMounts[%d] names %q, which is not a volume of spec.volumes", path, i, m.Name)
			}
		}
		return nil
	}
	for i := range spec.InitContainers {
		if err := mounts(fmt.Sprintf("spec.initContainers[%d]", i), &spec.InitContainers[i]); err != nil {
			return err
		}
	}
	ports := map[string]string{}
	for _, port := range spec.Ports {
		ports[port.Name] = "spec.ports"
	}
	for i := range spec.Sidecars {
		path := fmt.Sprintf("spec.sidecars[%d]", i)
		if err := mounts(path, &spec.Sidecars[i].RobotContainer); err != nil {
			return err
		}
		for j, port := range spec.Sidecars[i].Ports {
			if other, ok := ports[port.Name]; ok {
				return fmt.Errorf("%s.ports[%d].name %q is the name of a port of %s too: a Service or a probe finds a port of the pod by its name", path, j, port.Name, other)
			}
			ports[port.Name] = path
		}
		sidecar := &spec.Sidecars[i]
		if err := validateProbePorts(path, sidecar.Ports, sidecar.ReadinessProbe, sidecar.LivenessProbe, sidecar.StartupProbe); err != nil {
			return err
		}
	}
	return nil
}

// validateProbePorts checks that the readiness, liveness and startup probes
// of the container at path name by number, or by the name of one of ports,
// the port of their httpGet or tcpSocket.
func validateProbePorts(path string, ports []RobotPort, readiness, liveness, startup *corev1.Probe) error {
	for _, probe := range []struct {
		name  string
		probe *corev1.Probe
	}{{"readinessProbe", readiness}, {"livenessProbe", liveness}, {"startupProbe", startup}} {
		if probe.probe == nil {
			continue
		}
		for _, handler := range []struct {
			name string
			port *intstr.IntOrString
		}{{"httpGet", httpGetPort(probe.probe)}, {"tcpSocket", tcpSocketPort(probe.probe)}} {
			if handler.port == nil || handler.port.Type != intstr.String {
				continue
			}
			if !slices.ContainsFunc(ports, func(p RobotPort) bool { return p.Name == handler.port.StrVal }) {
				return fmt.Errorf("%s.%s.%s.port names %q, which is not a port of %s.ports: a probe finds a port by its name on its own container",
					path, probe.name, handler.name, handler.port.StrVal, path)
			}
		}
	}
	return nil
}

func httpGetPort(probe *corev1.Probe) *intstr.IntOrString {
	if probe.HTTPGet == nil {
		return nil
	}
	return &probe.HTTPGet.Port
}

func tcpSocketPort(probe *corev1.Probe) *intstr.IntOrString {
	if probe.TCPSocket == nil {
		return nil
	}
	return &probe.TCPSocket.Port
}

// ValidateShutdown checks spec.terminationGracePeriodSeconds (0 to
// MaxTerminationGracePeriodSeconds) and spec.preStop: exactly one of sleep
// and exec, a sleep of at least a second and below the grace period
// (DefaultTerminationGracePeriodSeconds when unset), so that the container
// has time to stop after it, and a command of 1 to 256 items.
func ValidateShutdown(gracePeriodSeconds *int64, preStop *RobotPreStop) error {
	grace := int64(DefaultTerminationGracePeriodSeconds)
	if gracePeriodSeconds != nil {
		grace = *gracePeriodSeconds
		if grace < 0 || grace > MaxTerminationGracePeriodSeconds {
			return fmt.Errorf("spec.terminationGracePeriodSeconds must be between 0 and %d, not %d", MaxTerminationGracePeriodSeconds, grace)
		}
	}
	if preStop == nil {
		return nil
	}
	switch {
	case (preStop.Sleep == nil) == (preStop.Exec == nil):
		return fmt.Errorf("spec.preStop must have exactly one of sleep or exec")
	case preStop.Sleep != nil && (preStop.Sleep.Seconds < 1 || preStop.Sleep.Seconds > maxPreStopSleep):
		return fmt.Errorf("spec.preStop.sleep.seconds must be between 1 and %d, not %d", maxPreStopSleep, preStop.Sleep.Seconds)
	case preStop.Sleep != nil && preStop.Sleep.Seconds >= grace:
		return fmt.Errorf("spec.preStop.sleep.seconds (%d) must be below terminationGracePeriodSeconds (%d), so that the container has time to stop after the sleep", preStop.Sleep.Seconds, grace)
	case preStop.Exec != nil && (len(preStop.Exec.Command) < 1 || len(preStop.Exec.Command) > maxArgs):
		return fmt.Errorf("spec.preStop.exec.command must have 1 to %d items, not %d", maxArgs, len(preStop.Exec.Command))
	}
	return nil
}

// ImageReferencePattern is the form of an image reference, as the container
// runtimes parse one (github.com/distribution/reference): an optional
// registry host, with a port, and '/'; a lower-case repository path; an
// optional tag; an optional digest of a known algorithm. The CRD's rule on
// every image has the same expression: the conversion's tests run one table
// through both.
const ImageReferencePattern = `^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][-a-zA-Z0-9]*[a-zA-Z0-9])(?:[.](?:[a-zA-Z0-9]|[a-zA-Z0-9][-a-zA-Z0-9]*[a-zA-Z0-9]))*(?::[0-9]+)?/|\[[a-fA-F0-9:]+\](?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[a-zA-Z0-9_][-a-zA-Z0-9_.]{0,127})?(?:@sha256:[a-f0-9]{64}|@sha384:[a-f0-9]{96}|@sha512:[a-f0-9]{128})?$`

var (
	imageReference = regexp.MustCompile(ImageReferencePattern)
	twoTags        = regexp.MustCompile(`^[^@]*:[^/@]*:[^/@]*(@.*)?$`)
	emptyTag       = regexp.MustCompile(`:(@|$)`)
	upperCase      = regexp.MustCompile(`[A-Z]`)
)

// ValidateImage checks the image at path, as the CRD's rules do: no spaces,
// and an image reference. Its message says what is wrong with the
// reference in the CRD's words.
func ValidateImage(path, image string) error {
	switch {
	case image == "":
		return fmt.Errorf("%s must not be empty", path)
	case len(image) > maxImageLength:
		return fmt.Errorf("%s must be at most %d characters, not %d", path, maxImageLength, len(image))
	case strings.ContainsAny(image, " \t\n\v\f\r"):
		return fmt.Errorf("%s %q must be an image reference without spaces", path, image)
	case imageReference.MatchString(image):
		return nil
	}
	what := "is not one"
	switch {
	case twoTags.MatchString(image):
		what = "has two tags"
	case emptyTag.MatchString(image):
		what = `has a ":" with no tag after it`
	case strings.Contains(image, "@"):
		what = "has a digest that is not sha256:, sha384: or sha512: followed by 64, 96 or 128 lower-case hex digits"
	case upperCase.MatchString(image):
		what = "has upper-case letters: a repository name is lower-case"
	}
	return fmt.Errorf("%s must be an image reference such as nginx:1.27 or registry.example.com/team/app@sha256:…; %q %s", path, image, what)
}

// ValidateResources checks the resources at path as the CRD's rules do:
// the limit of cpu, memory and ephemeral-storage at least its request, which
// the API server requires of a pod's container.
func ValidateResources(path string, resources corev1.ResourceRequirements) error {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		limit, limited := resources.Limits[name]
		request, requested := resources.Requests[name]
		if limited && requested && limit.Cmp(request) < 0 {
			return fmt.Errorf("%s.limits.%s (%s) must be at least %s.requests.%s (%s)", path, name, limit.String(), path, name, request.String())
		}
	}
	return nil
}

// ValidateProbe checks the probe at path, the container's probe called
// name (readinessProbe, livenessProbe or startupProbe), as the CRD's rules
// do: exactly one action, port numbers from 1 to 65535, an exec with a
// command, no negative number, successThreshold 1 for a liveness or startup
// probe and no terminationGracePeriodSeconds for a readiness probe, as the
// API server requires of a pod.
func ValidateProbe(path, name string, probe *corev1.Probe) error {
	if probe == nil {
		return nil
	}
	actions := 0
	for _, set := range []bool{probe.HTTPGet != nil, probe.TCPSocket != nil, probe.GRPC != nil, probe.Exec != nil} {
		if set {
			actions++
		}
	}
	if actions != 1 {
		return fmt.Errorf("%s must have exactly one of httpGet, tcpSocket, grpc or exec: how the kubelet checks the container", path)
	}
	outOfRange := func(port *intstr.IntOrString) bool {
		return port != nil && port.Type == intstr.Int && (port.IntVal < 1 || port.IntVal > 65535)
	}
	if outOfRange(httpGetPort(probe)) || outOfRange(tcpSocketPort(probe)) || probe.GRPC != nil && (probe.GRPC.Port < 1 || probe.GRPC.Port > 65535) {
		return fmt.Errorf("%s's port must be a number from 1 to 65535, or the name of a port", path)
	}
	if probe.Exec != nil && len(probe.Exec.Command) == 0 {
		return fmt.Errorf("%s.exec.command must name the command to run", path)
	}
	if min(probe.InitialDelaySeconds, probe.TimeoutSeconds, probe.PeriodSeconds, probe.SuccessThreshold, probe.FailureThreshold) < 0 ||
		probe.TerminationGracePeriodSeconds != nil && *probe.TerminationGracePeriodSeconds <= 0 {
		return fmt.Errorf("%s's initialDelaySeconds, timeoutSeconds, periodSeconds, successThreshold and failureThreshold cannot be negative, and its terminationGracePeriodSeconds must be above 0", path)
	}
	switch {
	case name == "readinessProbe" && probe.TerminationGracePeriodSeconds != nil:
		return fmt.Errorf("%s.terminationGracePeriodSeconds cannot be set: a failing readiness probe does not stop the container", path)
	case name != "readinessProbe" && probe.SuccessThreshold != 0 && probe.SuccessThreshold != 1:
		return fmt.Errorf("%s.successThreshold must be 1: the kubelet counts only failures of a %s probe", path, strings.TrimSuffix(name, "Probe"))
	}
	return nil
}

// ValidateProbes checks the readiness, liveness and startup probes of the
// container at path with ValidateProbe.
func ValidateProbes(path string, readiness, liveness, startup *corev1.Probe) error {
	for _, probe := range []struct {
		name  string
		probe *corev1.Probe
	}{{"readinessProbe", readiness}, {"livenessProbe", liveness}, {"startupProbe", startup}} {
		if err := ValidateProbe(path+"."+probe.name, probe.name, probe.probe); err != nil {
			return err
		}
	}
	return nil
}

// ValidateEnv checks the env and envFrom of the container at path as the
// CRD's rules do, and as the API server does in a pod: a variable has a
// value or a valueFrom, not both, and a valueFrom exactly one source; an
// envFrom entry exactly one of configMapRef and secretRef.
func ValidateEnv(path string, env []corev1.EnvVar, envFrom []corev1.EnvFromSource) error {
	for i, e := range env {
		if e.ValueFrom == nil {
			continue
		}
		from := e.ValueFrom
		sources := 0
		for _, set := range []bool{from.FieldRef != nil, from.ResourceFieldRef != nil, from.ConfigMapKeyRef != nil, from.SecretKeyRef != nil, from.FileKeyRef != nil} {
			if set {
				sources++
			}
		}
		if e.Value != "" || sources != 1 {
			return fmt.Errorf("%s.env[%d] (%q): an env variable has a value or a valueFrom, not both, and a valueFrom has exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef or fileKeyRef", path, i, e.Name)
		}
	}
	for i, e := range envFrom {
		if (e.ConfigMapRef == nil) == (e.SecretRef == nil) {
			return fmt.Errorf("%s.envFrom[%d]: every envFrom entry has exactly one of configMapRef or secretRef", path, i)
		}
	}
	return nil
}
