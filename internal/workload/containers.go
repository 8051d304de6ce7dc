package workload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// The pod's other containers, and how the Robot's container stops. The pod's
// initContainers list holds the sidecars first, then the init containers:
// the kubelet starts them in that order, each sidecar before the next
// container, so a step that needs the network through a proxy sidecar, or a
// database through a connection sidecar, has it. Each is set only when the
// Robot asks for it, so a Robot without any applies what it applied before
// they existed.

// addContainers sets on pod the Robot's sidecars and init containers, and
// on its container the preStop hook, with the pod's grace period.
func addContainers(spec *robotv1beta1.RobotSpec, pod *corev1ac.PodSpecApplyConfiguration, container *corev1ac.ContainerApplyConfiguration) error {
	for i := range spec.Sidecars {
		sidecar := &spec.Sidecars[i]
		path := fmt.Sprintf("spec.sidecars[%d]", i)
		c, err := otherContainer(path, &sidecar.RobotContainer)
		if err != nil {
			return err
		}
		// What makes it a sidecar: it keeps running, and is restarted,
		// while the pod lives.
		c.WithRestartPolicy(corev1.ContainerRestartPolicyAlways)
		for _, port := range sidecar.Ports {
			c.WithPorts(corev1ac.ContainerPort().
				WithName(port.Name).
				WithContainerPort(port.ContainerPort).
				WithProtocol(robotv1beta1.PortProtocol(port)))
		}
		if err := setProbes(path, c, sidecar.ReadinessProbe, sidecar.LivenessProbe, sidecar.StartupProbe); err != nil {
			return err
		}
		pod.WithInitContainers(c)
	}
	for i := range spec.InitContainers {
		c, err := otherContainer(fmt.Sprintf("spec.initContainers[%d]", i), &spec.InitContainers[i])
		if err != nil {
			return err
		}
		pod.WithInitContainers(c)
	}
	if spec.TerminationGracePeriodSeconds != nil {
		pod.WithTerminationGracePeriodSeconds(*spec.TerminationGracePeriodSeconds)
	}
	if preStop := spec.PreStop; preStop != nil {
		handler := corev1ac.LifecycleHandler()
		switch {
		case preStop.Sleep != nil:
			handler.WithSleep(corev1ac.SleepAction().WithSeconds(preStop.Sleep.Seconds))
		case preStop.Exec != nil:
			handler.WithExec(corev1ac.ExecAction().WithCommand(preStop.Exec.Command...))
		}
		container.WithLifecycle(corev1ac.Lifecycle().WithPreStop(handler))
	}
	return nil
}

// otherContainer is the pod's container for one of the Robot's init
// containers or sidecars, with the Robot container's baseline security
// context: securityProfile covers every container of the pod.
func otherContainer(path string, from *robotv1beta1.RobotContainer) (*corev1ac.ContainerApplyConfiguration, error) {
	c := corev1ac.Container().
		WithName(from.Name).
		WithImage(from.Image).
		WithSecurityContext(corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false))
	if len(from.Command) > 0 {
		c.WithCommand(from.Command...)
	}
	if len(from.Args) > 0 {
		c.WithArgs(from.Args...)
	}
	// As for the Robot's container: a JSON round trip converts the types
	// whose apply configurations mirror them field for field.
	if len(from.Env) > 0 {
		if err := RoundTrip(defaultedEnv(from.Env), &c.Env); err != nil {
			return nil, fmt.Errorf("%s.env: %w", path, err)
		}
	}
	if len(from.EnvFrom) > 0 {
		if err := RoundTrip(from.EnvFrom, &c.EnvFrom); err != nil {
			return nil, fmt.Errorf("%s.envFrom: %w", path, err)
		}
	}
	if len(from.Resources.Limits) > 0 || len(from.Resources.Requests) > 0 || len(from.Resources.Claims) > 0 {
		c.Resources = &corev1ac.ResourceRequirementsApplyConfiguration{}
		if err := RoundTrip(defaultedResources(from.Resources), c.Resources); err != nil {
			return nil, fmt.Errorf("%s.resources: %w", path, err)
		}
	}
	if len(from.VolumeMounts) > 0 {
		if err := RoundTrip(from.VolumeMounts, &c.VolumeMounts); err != nil {
			return nil, fmt.Errorf("%s.volumeMounts: %w", path, err)
		}
	}
	return c, nil
}

// setProbes sets on c the probes that are given.
func setProbes(path string, c *corev1ac.ContainerApplyConfiguration, readiness, liveness, startup *corev1.Probe) error {
	for _, probe := range []struct {
		field string
		from  *corev1.Probe
		to    **corev1ac.ProbeApplyConfiguration
	}{
		{"readinessProbe", readiness, &c.ReadinessProbe},
		{"livenessProbe", liveness, &c.LivenessProbe},
		{"startupProbe", startup, &c.StartupProbe},
	} {
		if probe.from == nil {
			continue
		}
		*probe.to = &corev1ac.ProbeApplyConfiguration{}
		if err := RoundTrip(probe.from, *probe.to); err != nil {
			return fmt.Errorf("%s.%s: %w", path, probe.field, err)
		}
	}
	return nil
}
