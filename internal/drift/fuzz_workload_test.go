package drift

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// The pod template fields workloadFromFuzz sets, one per operation.
const (
	workloadCommand byte = iota
	workloadPullPolicy
	workloadPullSecret
	workloadEnvFrom
	workloadReadinessProbe
	workloadLivenessProbe
	workloadStartupProbe
	workloadVolume
	workloadVolumeMount
	workloadNodeSelector
	workloadToleration
	workloadAffinity
	workloadSpread
	workloadPriorityClass
	workloadPodLabel
	workloadPodAnnotation
	workloadServiceAccount
	workloadAutomount
	workloadSecurityProfile
	workloadPort
	workloadStrategy
	workloadMinReadySeconds
	workloadSidecar
	workloadInitContainer
	workloadGracePeriod
	workloadPreStop
	workloadKinds
)

var (
	workloadNames     = []string{"web", "a.b", "registry-credentials"}
	workloadLabelKeys = []string{"team", "example.com/tier", "sidecar.istio.io/inject", workload.LabelRobot, workload.LabelInstance}
	workloadValues    = []string{"", "a", "true", "blue-1"}
	workloadPrefixes  = []string{"", "APP_", "cfg."}
	workloadPaths     = []string{"", "/", "/healthz"}
	workloadPorts     = []intstr.IntOrString{intstr.FromInt32(8080), intstr.FromString("http"), intstr.FromInt32(1)}
	workloadSeconds   = []int32{0, 1, 3, 10, 30}
	workloadModes     = []*int32{nil, ptr.To[int32](0o400), ptr.To[int32](0o644), ptr.To[int32](0o755)}
	workloadSizes     = []*resource.Quantity{nil, ptr.To(resource.MustParse("64Mi")), ptr.To(resource.MustParse("1Gi")), ptr.To(resource.MustParse("0.5Gi"))}
	workloadTopology  = []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"}
	workloadOptional  = []*bool{nil, ptr.To(false), ptr.To(true)}
	// Port names other than robotFromFuzz's "http" and addForeignFields'
	// "metrics", and numbers that meet theirs.
	workloadPortNames     = []string{"dns", "grpc", "admin", "web"}
	workloadPortNumbers   = []int32{53, 8080, 9090, 1, 65535}
	workloadPortProtocols = []corev1.Protocol{"", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}
	workloadBounds        = []*intstr.IntOrString{nil, ptr.To(intstr.FromInt32(0)), ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromString("25%")), ptr.To(intstr.FromString("0%")), ptr.To(intstr.FromString("100%"))}
	// Up to the CRD's maximum, past the Deployment's default progress
	// deadline (600).
	workloadReadySeconds = []int32{0, 1, 10, 599, 600, 3600}
	workloadImages       = []string{"registry.example/proxy:1", "busybox", "registry.example/migrate@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
	workloadQuantities   = []string{"100m", "0.5", "64Mi", "1000m", "100u"}
	// A grace period of 0, of less than the default, the default, more.
	workloadGraceSeconds = []*int64{nil, ptr.To[int64](0), ptr.To[int64](5), ptr.To[int64](30), ptr.To[int64](120)}
	workloadSleeps       = []int64{1, 4, 10, 29, 60}
)

// workloadFromFuzz sets on robot the pod template fields that data says (see
// robottest.FuzzBytes): for each, which field, then what it needs. What it makes is
// valid for the API server's validation of a pod, except where crdRefuses
// says the CRD refuses it (a reserved pod label), so that every Robot kept
// reaches the API server and the no-drift property is tested for real
// Deployments.
func workloadFromFuzz(robot *robotv1beta1.Robot, data []byte) {
	b := &robottest.FuzzBytes{Data: data}
	spec := &robot.Spec
	for b.More() {
		switch b.Byte() % workloadKinds {
		case workloadCommand:
			spec.Command = append(spec.Command, b.String())
		case workloadPullPolicy:
			spec.ImagePullPolicy = robottest.Pick(b, []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever})
		case workloadPullSecret:
			name := robottest.Pick(b, workloadNames)
			if !containsName(spec.ImagePullSecrets, func(s corev1.LocalObjectReference) string { return s.Name }, name) {
				spec.ImagePullSecrets = append(spec.ImagePullSecrets, corev1.LocalObjectReference{Name: name})
			}
		case workloadEnvFrom:
			source := corev1.EnvFromSource{Prefix: robottest.Pick(b, workloadPrefixes)}
			ref := corev1.LocalObjectReference{Name: robottest.Pick(b, workloadNames)}
			if b.Byte()%2 == 0 {
				source.ConfigMapRef = &corev1.ConfigMapEnvSource{LocalObjectReference: ref, Optional: robottest.Pick(b, workloadOptional)}
			} else {
				source.SecretRef = &corev1.SecretEnvSource{LocalObjectReference: ref, Optional: robottest.Pick(b, workloadOptional)}
			}
			spec.EnvFrom = append(spec.EnvFrom, source)
		case workloadReadinessProbe:
			spec.ReadinessProbe = probeFromFuzz(b, true)
		case workloadLivenessProbe:
			spec.LivenessProbe = probeFromFuzz(b, false)
		case workloadStartupProbe:
			spec.StartupProbe = probeFromFuzz(b, false)
		case workloadVolume:
			spec.Volumes = append(spec.Volumes, volumeFromFuzz(b, fmt.Sprintf("v%d", len(spec.Volumes))))
		case workloadVolumeMount:
			if len(spec.Volumes) == 0 {
				continue
			}
			volume := spec.Volumes[int(b.Byte())%len(spec.Volumes)]
			spec.VolumeMounts = append(spec.VolumeMounts, corev1.VolumeMount{
				Name: volume.Name, MountPath: fmt.Sprintf("/mnt/%d", len(spec.VolumeMounts)), ReadOnly: b.Byte()%2 == 0,
			})
		case workloadNodeSelector:
			if spec.Placement.NodeSelector == nil {
				spec.Placement.NodeSelector = map[string]string{}
			}
			spec.Placement.NodeSelector[robottest.Pick(b, workloadLabelKeys)] = robottest.Pick(b, workloadValues)
		case workloadToleration:
			spec.Placement.Tolerations = append(spec.Placement.Tolerations, tolerationFromFuzz(b))
		case workloadAffinity:
			spec.Placement.Affinity = affinityFromFuzz(b)
		case workloadSpread:
			key := robottest.Pick(b, workloadTopology)
			when := robottest.Pick(b, []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway})
			if !containsName(spec.Placement.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) string { return c.TopologyKey + string(c.WhenUnsatisfiable) }, key+string(when)) {
				spec.Placement.TopologySpreadConstraints = append(spec.Placement.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
					MaxSkew: int32(1 + b.Byte()%3), TopologyKey: key, WhenUnsatisfiable: when,
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{workload.LabelRobot: robot.Name}},
				})
			}
		case workloadPriorityClass:
			spec.Placement.PriorityClassName = robottest.Pick(b, workloadNames)
		case workloadPodLabel:
			if spec.PodLabels == nil {
				spec.PodLabels = map[string]string{}
			}
			spec.PodLabels[robottest.Pick(b, workloadLabelKeys)] = robottest.Pick(b, workloadValues)
		case workloadPodAnnotation:
			if spec.PodAnnotations == nil {
				spec.PodAnnotations = map[string]string{}
			}
			spec.PodAnnotations[robottest.Pick(b, workloadLabelKeys)] = b.String()
		case workloadServiceAccount:
			spec.ServiceAccountName = robottest.Pick(b, workloadNames)
		case workloadAutomount:
			spec.AutomountServiceAccountToken = robottest.Pick(b, workloadOptional)
		case workloadSecurityProfile:
			spec.SecurityProfile = robottest.Pick(b, []robotv1beta1.SecurityProfile{"", robotv1beta1.SecurityProfileBaseline, robotv1beta1.SecurityProfileRestricted})
		case workloadPort:
			spec.Ports = append(spec.Ports, robotv1beta1.RobotPort{Name: robottest.Pick(b, workloadPortNames),
				ContainerPort: robottest.Pick(b, workloadPortNumbers), Protocol: robottest.Pick(b, workloadPortProtocols)})
		case workloadStrategy:
			strategy := &robotv1beta1.RobotStrategy{Type: robottest.Pick(b, []robotv1beta1.StrategyType{"", robotv1beta1.StrategyRollingUpdate, robotv1beta1.StrategyRecreate})}
			if strategy.Type != robotv1beta1.StrategyRecreate && b.Byte()%2 == 0 {
				strategy.RollingUpdate = &robotv1beta1.RollingUpdate{MaxSurge: robottest.Pick(b, workloadBounds), MaxUnavailable: robottest.Pick(b, workloadBounds)}
			}
			spec.Strategy = strategy
		case workloadMinReadySeconds:
			spec.MinReadySeconds = robottest.Pick(b, workloadReadySeconds)
		case workloadSidecar:
			i := len(spec.Sidecars)
			sidecar := robotv1beta1.RobotSidecar{RobotContainer: containerFromFuzz(b, spec, fmt.Sprintf("side%d", i))}
			if b.Byte()%2 == 0 {
				sidecar.Ports = []robotv1beta1.RobotPort{{Name: fmt.Sprintf("proxy%d", i), ContainerPort: int32(15000 + i),
					Protocol: robottest.Pick(b, workloadPortProtocols)}}
			}
			switch b.Byte() % 4 {
			case 1:
				sidecar.ReadinessProbe = probeFromFuzz(b, true)
			case 2:
				sidecar.LivenessProbe = probeFromFuzz(b, false)
			case 3:
				sidecar.StartupProbe = probeFromFuzz(b, false)
			}
			spec.Sidecars = append(spec.Sidecars, sidecar)
		case workloadInitContainer:
			spec.InitContainers = append(spec.InitContainers, containerFromFuzz(b, spec, fmt.Sprintf("init%d", len(spec.InitContainers))))
		case workloadGracePeriod:
			spec.TerminationGracePeriodSeconds = robottest.Pick(b, workloadGraceSeconds)
		case workloadPreStop:
			if b.Byte()%2 == 0 {
				spec.PreStop = &robotv1beta1.RobotPreStop{Sleep: &robotv1beta1.RobotSleep{Seconds: robottest.Pick(b, workloadSleeps)}}
			} else {
				spec.PreStop = &robotv1beta1.RobotPreStop{Exec: &robotv1beta1.RobotExec{Command: []string{"/bin/drain", b.String()}}}
			}
		}
	}
}

// containerFromFuzz is an init container or the common part of a sidecar,
// named name: an image, and maybe a command, args, an env var, an envFrom
// source, resources and a mount of one of spec's volumes.
func containerFromFuzz(b *robottest.FuzzBytes, spec *robotv1beta1.RobotSpec, name string) robotv1beta1.RobotContainer {
	c := robotv1beta1.RobotContainer{Name: name, Image: robottest.Pick(b, workloadImages)}
	what := b.Byte()
	if what&(1<<0) != 0 {
		c.Command = []string{"/bin/" + name}
	}
	if what&(1<<1) != 0 {
		c.Args = []string{b.String()}
	}
	if what&(1<<2) != 0 {
		c.Env = []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	}
	if what&(1<<3) != 0 {
		c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: robottest.Pick(b, workloadNames)}}}}
	}
	if what&(1<<4) != 0 {
		cpu := resource.MustParse(robottest.Pick(b, workloadQuantities))
		c.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: cpu}, Limits: corev1.ResourceList{corev1.ResourceCPU: cpu}}
	}
	if what&(1<<5) != 0 && len(spec.Volumes) > 0 {
		volume := spec.Volumes[int(b.Byte())%len(spec.Volumes)]
		c.VolumeMounts = []corev1.VolumeMount{{Name: volume.Name, MountPath: "/mnt/" + name, ReadOnly: b.Byte()%2 == 0}}
	}
	return c
}

// workloadSeeds are inputs of workloadFromFuzz: the first sets every field,
// then each field alone, with the first and then other choices.
func workloadSeeds() [][]byte {
	var every []byte
	for kind := range workloadKinds {
		every = append(every, kind)
		for range 12 {
			every = append(every, 2)
		}
	}
	seeds := [][]byte{every}
	for kind := range workloadKinds {
		seeds = append(seeds, []byte{kind}, []byte{kind, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, []byte{kind, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3})
	}
	// Projected sources that leave the API server's defaults out: a
	// token's expiry, a downward API field's version.
	seeds = append(seeds,
		[]byte{workloadVolume, 3, 0, 0, 3, 0, 0, 0},
		[]byte{workloadVolume, 3, 0, 1, 2, 0, 1, workloadVolumeMount, 0, 0})
	// A rolling update with both bounds, one with maxSurge alone, and a
	// UDP port and a TCP one beside robotFromFuzz's.
	seeds = append(seeds,
		[]byte{workloadStrategy, 1, 0, 2, 3, workloadMinReadySeconds, 2},
		[]byte{workloadStrategy, 0, 0, 1, 0},
		[]byte{workloadPort, 0, 0, 2, workloadPort, 2, 2, 1})
	// Two sidecars with a port each and an init container, so that their
	// order can be changed; a grace period and a preStop sleep below it.
	seeds = append(seeds,
		[]byte{workloadSidecar, 0, 0, 0, 0, 0, workloadSidecar, 0, 0, 0, 0, 0, workloadInitContainer, 0, 0},
		[]byte{workloadGracePeriod, 4, workloadPreStop, 0, 2})
	return seeds
}

func containsName[T any](items []T, name func(T) string, want string) bool {
	for _, item := range items {
		if name(item) == want {
			return true
		}
	}
	return false
}

// probeFromFuzz is a probe with one handler and, maybe, its timings; only a
// readiness probe may need more than one success.
func probeFromFuzz(b *robottest.FuzzBytes, readiness bool) *corev1.Probe {
	probe := &corev1.Probe{}
	switch b.Byte() % 4 {
	case 0:
		probe.HTTPGet = &corev1.HTTPGetAction{Path: robottest.Pick(b, workloadPaths), Port: robottest.Pick(b, workloadPorts),
			Scheme: robottest.Pick(b, []corev1.URIScheme{"", corev1.URISchemeHTTP, corev1.URISchemeHTTPS})}
		if b.Byte()%2 == 0 {
			probe.HTTPGet.HTTPHeaders = []corev1.HTTPHeader{{Name: "X-Probe", Value: b.String()}}
		}
	case 1:
		probe.TCPSocket = &corev1.TCPSocketAction{Port: robottest.Pick(b, workloadPorts)}
	case 2:
		probe.Exec = &corev1.ExecAction{Command: []string{"cat", b.String()}}
	case 3:
		probe.GRPC = &corev1.GRPCAction{Port: 8080, Service: robottest.Pick(b, []*string{nil, ptr.To(""), ptr.To("health")})}
	}
	probe.InitialDelaySeconds = robottest.Pick(b, workloadSeconds)
	probe.TimeoutSeconds = robottest.Pick(b, workloadSeconds)
	probe.PeriodSeconds = robottest.Pick(b, workloadSeconds)
	probe.FailureThreshold = robottest.Pick(b, workloadSeconds)
	if readiness {
		probe.SuccessThreshold = robottest.Pick(b, workloadSeconds)
	}
	return probe
}

// volumeFromFuzz is a volume of one of the four kinds a Robot may have.
func volumeFromFuzz(b *robottest.FuzzBytes, name string) robotv1beta1.RobotVolume {
	volume := robotv1beta1.RobotVolume{Name: name}
	items := func() []corev1.KeyToPath {
		if b.Byte()%2 == 0 {
			return nil
		}
		return []corev1.KeyToPath{{Key: "config.yaml", Path: "config.yaml", Mode: robottest.Pick(b, workloadModes)}}
	}
	switch b.Byte() % 4 {
	case 0:
		volume.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: robottest.Pick(b, workloadNames)},
			Items: items(), DefaultMode: robottest.Pick(b, workloadModes), Optional: robottest.Pick(b, workloadOptional)}
	case 1:
		volume.Secret = &corev1.SecretVolumeSource{SecretName: robottest.Pick(b, workloadNames), Items: items(), DefaultMode: robottest.Pick(b, workloadModes),
			Optional: robottest.Pick(b, workloadOptional)}
	case 2:
		volume.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: robottest.Pick(b, []corev1.StorageMedium{"", corev1.StorageMediumMemory}), SizeLimit: robottest.Pick(b, workloadSizes)}
	case 3:
		projected := &corev1.ProjectedVolumeSource{DefaultMode: robottest.Pick(b, workloadModes)}
		for i := range 1 + int(b.Byte()%3) {
			var source corev1.VolumeProjection
			path := fmt.Sprintf("p%d", i)
			switch b.Byte() % 4 {
			case 0:
				source.ConfigMap = &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: robottest.Pick(b, workloadNames)},
					Items: []corev1.KeyToPath{{Key: "k", Path: path}}}
			case 1:
				source.Secret = &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: robottest.Pick(b, workloadNames)},
					Items: []corev1.KeyToPath{{Key: "k", Path: path}}}
			case 2:
				ref := &corev1.ObjectFieldSelector{FieldPath: robottest.Pick(b, []string{"metadata.labels", "metadata.name", "metadata.annotations"})}
				if b.Byte()%2 == 0 {
					ref.APIVersion = "v1"
				}
				source.DownwardAPI = &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: path, FieldRef: ref}}}
			case 3:
				source.ServiceAccountToken = &corev1.ServiceAccountTokenProjection{Path: path, Audience: robottest.Pick(b, workloadValues),
					ExpirationSeconds: robottest.Pick(b, []*int64{nil, ptr.To[int64](600), ptr.To[int64](3600), ptr.To[int64](7200)})}
			}
			projected.Sources = append(projected.Sources, source)
		}
		volume.Projected = projected
	}
	return volume
}

// tolerationFromFuzz is a toleration of one of the shapes the API server
// admits.
func tolerationFromFuzz(b *robottest.FuzzBytes) corev1.Toleration {
	toleration := corev1.Toleration{Key: robottest.Pick(b, []string{"", "dedicated", "example.com/gpu"})}
	if toleration.Key == "" || b.Byte()%2 == 0 {
		toleration.Operator = corev1.TolerationOpExists
	} else {
		toleration.Operator = robottest.Pick(b, []corev1.TolerationOperator{"", corev1.TolerationOpEqual})
		toleration.Value = robottest.Pick(b, workloadValues)
	}
	toleration.Effect = robottest.Pick(b, []corev1.TaintEffect{"", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute})
	if toleration.Effect == corev1.TaintEffectNoExecute && b.Byte()%2 == 0 {
		toleration.TolerationSeconds = ptr.To[int64](300)
	}
	return toleration
}

// affinityFromFuzz is a node affinity, a pod anti-affinity, or both.
func affinityFromFuzz(b *robottest.FuzzBytes) *corev1.Affinity {
	affinity := &corev1.Affinity{}
	which := b.Byte()
	if which&1 != 0 {
		affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"},
			}}}},
		}}
	}
	if which&2 != 0 || which&1 == 0 {
		term := corev1.PodAffinityTerm{TopologyKey: robottest.Pick(b, workloadTopology),
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": robottest.Pick(b, workloadNames)}}}
		affinity.PodAntiAffinity = &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: int32(1 + b.Byte()%100), PodAffinityTerm: term}},
		}
	}
	return affinity
}

// workloadRefused says why the CRD refuses robot's pod template fields, or
// returns "": the rules of pkg/apis/robot/v1beta1/types.go that the
// generator can break.
func workloadRefused(robot *robotv1beta1.Robot) string {
	spec := &robot.Spec
	switch {
	case len(spec.Command) > 256:
		return "spec.command"
	case len(spec.EnvFrom) > 64:
		return "spec.envFrom"
	case len(spec.ImagePullSecrets) > 32:
		return "spec.imagePullSecrets"
	case len(spec.Volumes) > 64:
		return "spec.volumes"
	case len(spec.VolumeMounts) > 64:
		return "spec.volumeMounts"
	case len(spec.Placement.Tolerations) > 64:
		return "spec.placement.tolerations"
	case len(spec.Ports) > 16:
		return "spec.ports"
	}
	// listType=map by name, and the rule that no two ports have the same
	// number and protocol (TCP, the CRD's default, when unset).
	names := map[string]bool{}
	type key struct {
		port     int32
		protocol corev1.Protocol
	}
	keys := map[key]bool{}
	for _, port := range spec.Ports {
		k := key{port.ContainerPort, cmp.Or(port.Protocol, corev1.ProtocolTCP)}
		if names[port.Name] || keys[k] {
			return "spec.ports: a port twice"
		}
		names[port.Name], keys[k] = true, true
	}
	for _, key := range workload.ReservedPodLabels {
		if _, ok := robot.Spec.PodLabels[key]; ok {
			return "spec.podLabels: " + key
		}
	}
	// The CRD's rules on the other containers and the preStop hook, which
	// the Go validation repeats.
	for _, err := range []error{
		robotv1beta1.ValidateContainers(spec.InitContainers, spec.Sidecars),
		robotv1beta1.ValidateContainerReferences(spec),
		robotv1beta1.ValidateShutdown(spec.TerminationGracePeriodSeconds, spec.PreStop),
	} {
		if err != nil {
			return err.Error()
		}
	}
	return ""
}

// changeWorkloadField changes, in d, one of the pod template fields robot
// sets, chosen by number, the way a person with kubectl edit would. It
// returns what it did, or "" when robot does not set that field.
func changeWorkloadField(robot *robotv1beta1.Robot, d *appsv1.Deployment, number int32) string {
	spec := &robot.Spec
	pod := &d.Spec.Template.Spec
	c := &pod.Containers[0]
	n := int(uint32(number) / workloadChanges)
	switch uint32(number) % workloadChanges {
	case 0:
		if len(spec.Command) == 0 {
			return ""
		}
		c.Command = append(c.Command, "--changed")
		return "an arg appended to command"
	case 1:
		if spec.ImagePullPolicy == "" {
			return ""
		}
		c.ImagePullPolicy = map[corev1.PullPolicy]corev1.PullPolicy{corev1.PullAlways: corev1.PullNever, corev1.PullNever: corev1.PullIfNotPresent, corev1.PullIfNotPresent: corev1.PullAlways}[c.ImagePullPolicy]
		return "imagePullPolicy changed"
	case 2:
		if len(spec.ImagePullSecrets) == 0 {
			return ""
		}
		pod.ImagePullSecrets = nil
		return "imagePullSecrets removed"
	case 3:
		if len(spec.EnvFrom) == 0 {
			return ""
		}
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "changed"}}})
		return "an envFrom source appended"
	case 4, 5, 6:
		probes := []struct {
			field string
			robot *corev1.Probe
			live  **corev1.Probe
		}{{"readinessProbe", spec.ReadinessProbe, &c.ReadinessProbe}, {"livenessProbe", spec.LivenessProbe, &c.LivenessProbe}, {"startupProbe", spec.StartupProbe, &c.StartupProbe}}
		probe := probes[uint32(number)%workloadChanges-4]
		if probe.robot == nil {
			return ""
		}
		*probe.live = nil
		return probe.field + " removed"
	case 7:
		if len(spec.Volumes) == 0 {
			return ""
		}
		name := spec.Volumes[n%len(spec.Volumes)].Name
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == name })
		if pod.Volumes[i].EmptyDir != nil {
			pod.Volumes[i].VolumeSource = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "changed"}}
		} else {
			pod.Volumes[i].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		}
		return fmt.Sprintf("volume %q of another kind", name)
	case 8:
		if len(spec.VolumeMounts) == 0 {
			return ""
		}
		path := spec.VolumeMounts[n%len(spec.VolumeMounts)].MountPath
		i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == path })
		c.VolumeMounts[i].MountPath = "/changed"
		return fmt.Sprintf("volume mount %q moved", path)
	case 9:
		if len(spec.Placement.NodeSelector) == 0 {
			return ""
		}
		pod.NodeSelector["changed"] = "true"
		return "a node selector label added"
	case 10:
		if len(spec.Placement.Tolerations) == 0 {
			return ""
		}
		pod.Tolerations = append(pod.Tolerations, corev1.Toleration{Key: "changed", Operator: corev1.TolerationOpExists})
		return "a toleration added"
	case 11:
		if spec.Placement.Affinity == nil {
			return ""
		}
		pod.Affinity = nil
		return "affinity removed"
	case 12:
		if len(spec.Placement.TopologySpreadConstraints) == 0 {
			return ""
		}
		pod.TopologySpreadConstraints[n%len(pod.TopologySpreadConstraints)].MaxSkew++
		return "a topology spread constraint's maxSkew raised"
	case 13:
		if spec.Placement.PriorityClassName == "" {
			return ""
		}
		pod.PriorityClassName += "x"
		return "priorityClassName changed"
	case 14:
		if len(spec.PodLabels) == 0 {
			return ""
		}
		key := slices.Sorted(maps.Keys(spec.PodLabels))[n%len(spec.PodLabels)]
		d.Spec.Template.Labels[key] += "x"
		return fmt.Sprintf("pod label %q changed", key)
	case 15:
		if len(spec.PodAnnotations) == 0 {
			return ""
		}
		key := slices.Sorted(maps.Keys(spec.PodAnnotations))[n%len(spec.PodAnnotations)]
		d.Spec.Template.Annotations[key] += "x"
		return fmt.Sprintf("pod annotation %q changed", key)
	case 16:
		if spec.ServiceAccountName == "" {
			return ""
		}
		pod.ServiceAccountName, pod.DeprecatedServiceAccount = "changed", "changed"
		return "serviceAccountName changed"
	case 17:
		pod.AutomountServiceAccountToken = ptr.To(!*pod.AutomountServiceAccountToken)
		return "automountServiceAccountToken flipped"
	case 18:
		if spec.SecurityProfile != robotv1beta1.SecurityProfileRestricted {
			return ""
		}
		if n%2 == 0 {
			pod.SecurityContext.RunAsNonRoot = ptr.To(false)
			return "the pod's runAsNonRoot set to false"
		}
		c.SecurityContext.Capabilities = nil
		return "the container's capabilities removed"
	case 19:
		if spec.Strategy == nil {
			return ""
		}
		if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
			return "strategy set to RollingUpdate"
		}
		if rolling := spec.Strategy.RollingUpdate; rolling != nil && (rolling.MaxSurge != nil || rolling.MaxUnavailable != nil) && n%2 == 0 {
			bound := &d.Spec.Strategy.RollingUpdate.MaxSurge
			if rolling.MaxSurge == nil {
				bound = &d.Spec.Strategy.RollingUpdate.MaxUnavailable
			}
			// Never a value workloadBounds has.
			*bound = ptr.To(intstr.FromInt32(int32(2 + n%3)))
			return "a rolling update bound changed"
		}
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		return "strategy set to Recreate"
	case 20:
		if spec.MinReadySeconds == 0 {
			return ""
		}
		if n%2 == 0 {
			d.Spec.MinReadySeconds = 0
			return "minReadySeconds removed"
		}
		d.Spec.MinReadySeconds++
		return "minReadySeconds raised by one"
	case 21:
		if len(spec.Sidecars) == 0 {
			return ""
		}
		// kubectl edit, the sidecar deleted.
		name := spec.Sidecars[n%len(spec.Sidecars)].Name
		pod.InitContainers = slices.DeleteFunc(pod.InitContainers, func(c corev1.Container) bool { return c.Name == name })
		return fmt.Sprintf("sidecar %q removed", name)
	case 22:
		if len(spec.InitContainers) == 0 {
			return ""
		}
		name := spec.InitContainers[n%len(spec.InitContainers)].Name
		i := slices.IndexFunc(pod.InitContainers, func(c corev1.Container) bool { return c.Name == name })
		pod.InitContainers[i].Image += "-changed"
		return fmt.Sprintf("init container %q's image changed", name)
	case 23:
		if spec.TerminationGracePeriodSeconds == nil {
			return ""
		}
		*pod.TerminationGracePeriodSeconds++
		return "terminationGracePeriodSeconds raised by one"
	case 24:
		if spec.PreStop == nil {
			return ""
		}
		c.Lifecycle = nil
		return "the preStop hook removed"
	case 25:
		if len(spec.Sidecars)+len(spec.InitContainers) < 2 {
			return ""
		}
		// The first two of the Robot's swapped, another writer's left
		// where they are.
		var ours []int
		for i, c := range pod.InitContainers {
			if strings.HasPrefix(c.Name, "side") || strings.HasPrefix(c.Name, "init") {
				ours = append(ours, i)
			}
		}
		a, b := ours[0], ours[1]
		pod.InitContainers[a], pod.InitContainers[b] = pod.InitContainers[b], pod.InitContainers[a]
		return fmt.Sprintf("init containers %q and %q swapped", pod.InitContainers[b].Name, pod.InitContainers[a].Name)
	}
	return ""
}

// workloadChanges is the number of changes changeWorkloadField knows.
const workloadChanges = 26

// refusedPastDeadline fails t when robot's minReadySeconds reaches the
// Deployment's default progress deadline (600 seconds) and NewDeployment
// does not refuse it as an invalid spec, the API server refusing such a
// Deployment; it reports whether it does reach it.
func refusedPastDeadline(t *testing.T, robot *robotv1beta1.Robot) bool {
	t.Helper()
	if robot.Spec.MinReadySeconds < 600 {
		return false
	}
	_, err := workload.NewDeployment(robot)
	var invalid *outcome.InvalidSpecError
	if !errors.As(err, &invalid) {
		t.Fatalf("minReadySeconds %d: newDeployment returns %v, want an invalid spec error", robot.Spec.MinReadySeconds, err)
	}
	return true
}
