package workload

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// The pod template fields of a Robot: what its pods run (command, pull
// policy and secrets, envFrom, probes, volumes), where they run (its
// placement: node selector, tolerations, affinity, spread, priority), what
// they carry (labels, annotations, a ServiceAccount) and how locked down they
// are (the security profile). Each is set on the Deployment only when the
// Robot sets it, with two defaults that every Robot gets: no ServiceAccount
// token unless the Robot asks for one, and, with a TCP port, a TCP readiness
// probe on the first one unless the Robot gives a readiness probe.

// ReservedPodLabels are the labels the operator sets on a Robot's pods. The
// first selects them; a podLabels entry for any of them would fight the
// operator over its own field.
var ReservedPodLabels = []string{LabelRobot, LabelManagedBy, labelName, LabelInstance}

// validateWorkload repeats the CRD's rules for the pod template fields.
func validateWorkload(spec *robotv1beta1.RobotSpec) error {
	for _, key := range ReservedPodLabels {
		if _, ok := spec.PodLabels[key]; ok {
			return fmt.Errorf("spec.podLabels cannot set %s: the operator sets it", key)
		}
	}
	volumes := map[string]bool{}
	for i, volume := range spec.Volumes {
		if n := volumeSources(volume); n != 1 {
			return fmt.Errorf("spec.volumes[%d] (%q) must have exactly one of configMap, secret, emptyDir or projected, not %d", i, volume.Name, n)
		}
		volumes[volume.Name] = true
	}
	for i, mount := range spec.VolumeMounts {
		if !volumes[mount.Name] {
			return fmt.Errorf("spec.volumeMounts[%d] names %q, which is not a volume of spec.volumes", i, mount.Name)
		}
	}
	if err := robotv1beta1.ValidateContainers(spec.InitContainers, spec.Sidecars); err != nil {
		return err
	}
	if err := robotv1beta1.ValidateContainerReferences(spec); err != nil {
		return err
	}
	if err := robotv1beta1.ValidateShutdown(spec.TerminationGracePeriodSeconds, spec.PreStop); err != nil {
		return err
	}
	switch spec.SecurityProfile {
	case "", robotv1beta1.SecurityProfileBaseline, robotv1beta1.SecurityProfileRestricted:
	default:
		return fmt.Errorf("spec.securityProfile must be baseline or restricted, not %q", spec.SecurityProfile)
	}
	return nil
}

// volumeSources counts the sources a volume sets.
func volumeSources(volume robotv1beta1.RobotVolume) int {
	n := 0
	for _, set := range []bool{volume.ConfigMap != nil, volume.Secret != nil, volume.EmptyDir != nil, volume.Projected != nil} {
		if set {
			n++
		}
	}
	return n
}

// addWorkload sets on the pod template, its pod and its container the pod
// template fields robot sets.
func addWorkload(robot *robotv1beta1.Robot, template *corev1ac.PodTemplateSpecApplyConfiguration,
	pod *corev1ac.PodSpecApplyConfiguration, container *corev1ac.ContainerApplyConfiguration) error {
	spec := &robot.Spec

	if len(spec.Command) > 0 {
		container.WithCommand(spec.Command...)
	}
	if spec.ImagePullPolicy != "" {
		container.WithImagePullPolicy(spec.ImagePullPolicy)
	}
	for _, secret := range spec.ImagePullSecrets {
		pod.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(secret.Name))
	}
	// Like env, these types have deep optional structure that their apply
	// configurations mirror field for field: a JSON round trip converts
	// them.
	if len(spec.EnvFrom) > 0 {
		if err := RoundTrip(spec.EnvFrom, &container.EnvFrom); err != nil {
			return fmt.Errorf("spec.envFrom: %w", err)
		}
	}
	if err := setProbes("spec", container, spec.ReadinessProbe, spec.LivenessProbe, spec.StartupProbe); err != nil {
		return err
	}
	if port, ok := firstTCPPort(spec.Ports); ok && spec.ReadinessProbe == nil {
		// So that Ready means the port answers, not merely that the
		// container started. By name, so that the probe follows the
		// port's number. A UDP or SCTP port cannot be probed by a TCP
		// connection: a Robot with none but those gets no probe.
		container.WithReadinessProbe(corev1ac.Probe().
			WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString(port.Name))))
	}
	if len(spec.Volumes) > 0 {
		if err := RoundTrip(podVolumes(spec.Volumes), &pod.Volumes); err != nil {
			return fmt.Errorf("spec.volumes: %w", err)
		}
	}
	if len(spec.VolumeMounts) > 0 {
		if err := RoundTrip(spec.VolumeMounts, &container.VolumeMounts); err != nil {
			return fmt.Errorf("spec.volumeMounts: %w", err)
		}
	}

	if err := addPlacement(spec.Placement, pod); err != nil {
		return err
	}

	if len(spec.PodLabels) > 0 {
		// The operator's labels win; the CRD refuses a Robot that sets
		// them, so this matters only for one stored before that rule.
		l := maps.Clone(spec.PodLabels)
		maps.Copy(l, template.Labels)
		template.Labels = l
	}
	if len(spec.PodAnnotations) > 0 {
		template.WithAnnotations(spec.PodAnnotations)
	}

	if spec.ServiceAccountName != "" {
		pod.WithServiceAccountName(spec.ServiceAccountName)
	}
	pod.WithAutomountServiceAccountToken(ptr.Deref(spec.AutomountServiceAccountToken, false))

	if err := addContainers(spec, pod, container); err != nil {
		return err
	}

	if spec.SecurityProfile == robotv1beta1.SecurityProfileRestricted {
		restrict(pod, container)
	}
	return nil
}

// firstTCPPort returns the first of ports whose protocol is TCP, the one the
// default readiness probe connects to.
func firstTCPPort(ports []robotv1beta1.RobotPort) (robotv1beta1.RobotPort, bool) {
	for _, port := range ports {
		if robotv1beta1.PortProtocol(port) == corev1.ProtocolTCP {
			return port, true
		}
	}
	return robotv1beta1.RobotPort{}, false
}

// addPlacement sets on pod where placement lets it run.
func addPlacement(placement robotv1beta1.RobotPlacement, pod *corev1ac.PodSpecApplyConfiguration) error {
	if len(placement.NodeSelector) > 0 {
		pod.WithNodeSelector(placement.NodeSelector)
	}
	if len(placement.Tolerations) > 0 {
		if err := RoundTrip(placement.Tolerations, &pod.Tolerations); err != nil {
			return fmt.Errorf("spec.placement.tolerations: %w", err)
		}
	}
	if placement.Affinity != nil {
		pod.Affinity = &corev1ac.AffinityApplyConfiguration{}
		if err := RoundTrip(placement.Affinity, pod.Affinity); err != nil {
			return fmt.Errorf("spec.placement.affinity: %w", err)
		}
	}
	if len(placement.TopologySpreadConstraints) > 0 {
		if err := RoundTrip(placement.TopologySpreadConstraints, &pod.TopologySpreadConstraints); err != nil {
			return fmt.Errorf("spec.placement.topologySpreadConstraints: %w", err)
		}
	}
	if placement.PriorityClassName != "" {
		pod.WithPriorityClassName(placement.PriorityClassName)
	}
	return nil
}

// restrict adds to the baseline security context what Pod Security
// "restricted" requires: a non-root user and every capability dropped, with
// seccomp RuntimeDefault on each container as well as on the pod, so that
// every container passes on its own whatever the pod says. The sidecars and
// init containers, already in the pod, are restricted as the Robot's
// container is.
func restrict(pod *corev1ac.PodSpecApplyConfiguration, container *corev1ac.ContainerApplyConfiguration) {
	pod.SecurityContext.WithRunAsNonRoot(true)
	restrictContainer(container)
	for i := range pod.InitContainers {
		restrictContainer(&pod.InitContainers[i])
	}
}

// restrictContainer adds to container's security context what restrict
// says.
func restrictContainer(container *corev1ac.ContainerApplyConfiguration) {
	container.SecurityContext.
		WithRunAsNonRoot(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

// podVolumes are the pod's volumes for the Robot's, with the defaults the API
// server sets inside a projected volume's sources: server-side apply treats
// the list of sources as a whole, so without them the stored list would
// always differ from the applied one. (The defaults it sets elsewhere in a
// volume, a defaultMode say, are fields of their own, which the drift check
// does not look at when the Robot leaves them unset.)
func podVolumes(volumes []robotv1beta1.RobotVolume) []corev1.Volume {
	out := make([]corev1.Volume, 0, len(volumes))
	for _, volume := range volumes {
		v := corev1.Volume{Name: volume.Name, VolumeSource: corev1.VolumeSource{
			ConfigMap: volume.ConfigMap,
			Secret:    volume.Secret,
			EmptyDir:  volume.EmptyDir,
			Projected: defaultedProjection(volume.Projected),
		}}
		out = append(out, v)
	}
	return out
}

// defaultedProjection returns projected with the API server's defaults in its
// sources: a ServiceAccount token expires after an hour, and a downward API
// field is of API version v1.
func defaultedProjection(projected *corev1.ProjectedVolumeSource) *corev1.ProjectedVolumeSource {
	if projected == nil {
		return nil
	}
	out := projected.DeepCopy()
	for i := range out.Sources {
		source := &out.Sources[i]
		if token := source.ServiceAccountToken; token != nil && token.ExpirationSeconds == nil {
			token.ExpirationSeconds = ptr.To[int64](3600)
		}
		if source.DownwardAPI != nil {
			for j := range source.DownwardAPI.Items {
				if ref := source.DownwardAPI.Items[j].FieldRef; ref != nil && ref.APIVersion == "" {
					ref.APIVersion = "v1"
				}
			}
		}
	}
	return out
}
