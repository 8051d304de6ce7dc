package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

const (
	// fieldManager owns, in server-side apply, the fields the operator sets.
	fieldManager = "robot-operator"

	// labelManagedBy marks the Deployments the operator manages; its
	// Deployment informer watches only those.
	labelManagedBy      = "app.kubernetes.io/managed-by"
	labelManagedByValue = "robot-operator"
	labelName           = "app.kubernetes.io/name"
	labelNameValue      = "robot"
	labelInstance       = "app.kubernetes.io/instance"
	// labelRobot selects a Robot's pods. It is the Deployment's selector, so
	// it never changes once the Deployment exists.
	labelRobot = "robot.dev/name"

	// annotationSpecHash records a hash of what the operator last applied.
	// Comparing live fields finds drift, but not a field the Robot no
	// longer asks for (an env var removed from the Robot, say); the hash
	// does.
	annotationSpecHash = "robot.dev/spec-hash"

	// containerName is the name of the Robot's container in the pod.
	containerName = "robot"
	// portName is the name of the container port given by spec.port.
	portName = "http"
)

// deploymentName is the name of the Deployment that runs robot.
func deploymentName(robot *robotv1alpha1.Robot) string {
	if robot.Spec.DeploymentName != "" {
		return robot.Spec.DeploymentName
	}
	return robot.Name
}

// selectorLabels select robot's pods.
func selectorLabels(robot *robotv1alpha1.Robot) map[string]string {
	return map[string]string{labelRobot: robot.Name}
}

// selectorString is the string form of robot's pod selector, as the scale
// subresource reports it.
func selectorString(robot *robotv1alpha1.Robot) string {
	return labels.SelectorFromSet(selectorLabels(robot)).String()
}

// objectLabels go on the Deployment and on its pods.
func objectLabels(robot *robotv1alpha1.Robot) map[string]string {
	l := selectorLabels(robot)
	l[labelManagedBy] = labelManagedByValue
	l[labelName] = labelNameValue
	l[labelInstance] = robot.Name
	return l
}

// invalidSpecError is a Robot spec that cannot become a Deployment. Retrying
// does not help; a change to the Robot does.
type invalidSpecError struct{ err error }

func (e *invalidSpecError) Error() string { return "invalid spec: " + e.err.Error() }
func (e *invalidSpecError) Unwrap() error { return e.err }

// validateSpec repeats the CRD's validation, for Robots stored before a rule
// existed or written around it.
func validateSpec(spec *robotv1alpha1.RobotSpec) error {
	switch {
	case spec.Image == "":
		return fmt.Errorf("spec.image must not be empty")
	case spec.Replicas != nil && (*spec.Replicas < 0 || *spec.Replicas > 1000):
		return fmt.Errorf("spec.replicas must be between 0 and 1000, not %d", *spec.Replicas)
	case spec.Port != nil && (*spec.Port < 1 || *spec.Port > 65535):
		return fmt.Errorf("spec.port must be between 1 and 65535, not %d", *spec.Port)
	}
	return nil
}

// newDeployment returns the Deployment that robot asks for, as the apply
// configuration that the operator applies: exactly the fields it owns. It
// returns an *invalidSpecError when the spec cannot become a Deployment.
func newDeployment(robot *robotv1alpha1.Robot) (*appsv1ac.DeploymentApplyConfiguration, error) {
	if err := validateSpec(&robot.Spec); err != nil {
		return nil, &invalidSpecError{err}
	}

	container := corev1ac.Container().
		WithName(containerName).
		WithImage(robot.Spec.Image).
		WithSecurityContext(corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false))
	if len(robot.Spec.Args) > 0 {
		container.WithArgs(robot.Spec.Args...)
	}
	if robot.Spec.Port != nil {
		container.WithPorts(corev1ac.ContainerPort().
			WithName(portName).
			WithContainerPort(*robot.Spec.Port).
			WithProtocol(corev1.ProtocolTCP))
	}
	// EnvVar and ResourceRequirements have deep optional structure whose
	// apply configurations mirror the API types field for field, so a JSON
	// round trip converts them without a hand-written copy to keep in step.
	if len(robot.Spec.Env) > 0 {
		if err := roundTrip(robot.Spec.Env, &container.Env); err != nil {
			return nil, &invalidSpecError{fmt.Errorf("spec.env: %w", err)}
		}
	}
	if len(robot.Spec.Resources.Limits) > 0 || len(robot.Spec.Resources.Requests) > 0 || len(robot.Spec.Resources.Claims) > 0 {
		container.Resources = &corev1ac.ResourceRequirementsApplyConfiguration{}
		if err := roundTrip(robot.Spec.Resources, container.Resources); err != nil {
			return nil, &invalidSpecError{fmt.Errorf("spec.resources: %w", err)}
		}
	}

	replicas := ptr.Deref(robot.Spec.Replicas, 1)
	deployment := appsv1ac.Deployment(deploymentName(robot), robot.Namespace).
		WithLabels(objectLabels(robot)).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(robotv1alpha1.SchemeGroupVersion.String()).
			WithKind("Robot").
			WithName(robot.Name).
			WithUID(robot.UID).
			WithController(true).
			WithBlockOwnerDeletion(true)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(robot))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(objectLabels(robot)).
				WithSpec(corev1ac.PodSpec().
					WithSecurityContext(corev1ac.PodSecurityContext().
						WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
					WithContainers(container))))

	hash, err := specHash(deployment)
	if err != nil {
		return nil, &invalidSpecError{err}
	}
	deployment.WithAnnotations(map[string]string{annotationSpecHash: hash})
	return deployment, nil
}

// specHash is a short, stable digest of an apply configuration.
func specHash(deployment *appsv1ac.DeploymentApplyConfiguration) (string, error) {
	data, err := json.Marshal(deployment)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}

// roundTrip copies in to out through JSON.
func roundTrip(in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// deploymentDrift says how current differs from desired in the fields the
// operator owns, or returns "" when it does not. The first difference found
// is described as "what the Deployment has; what the Robot asks for", which
// reads right whether the Robot changed or someone edited the Deployment. Fields that other writers
// own (an annotation, a sidecar, an extra env var) are not drift. Values are
// compared after the API server's defaulting: a port's protocol, a field
// reference's API version, the canonical form of a quantity.
func deploymentDrift(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) string {
	if drift := fieldDrift(desired, current); drift != "" {
		return drift
	}
	if current.Annotations[annotationSpecHash] != desired.Annotations[annotationSpecHash] {
		// No field the operator compares differs, but the Robot asks for
		// something else than was applied: a field was removed from it.
		return "the Robot's spec changed"
	}
	return ""
}

func fieldDrift(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) string {
	if key, ok := missingFrom(desired.Labels, current.Labels); !ok {
		return fmt.Sprintf("label %s changed", key)
	}
	spec := desired.Spec
	if ptr.Deref(current.Spec.Replicas, 1) != *spec.Replicas {
		return fmt.Sprintf("it has %d replicas; the Robot asks for %d", ptr.Deref(current.Spec.Replicas, 1), *spec.Replicas)
	}
	if key, ok := missingFrom(spec.Template.Labels, current.Spec.Template.Labels); !ok {
		return fmt.Sprintf("pod template label %s changed", key)
	}
	podSpec := &current.Spec.Template.Spec
	if sc := podSpec.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != *spec.Template.Spec.SecurityContext.SeccompProfile.Type {
		return "pod seccomp profile changed"
	}
	want := &spec.Template.Spec.Containers[0]
	i := slices.IndexFunc(podSpec.Containers, func(c corev1.Container) bool { return c.Name == *want.Name })
	if i < 0 {
		return fmt.Sprintf("container %q was removed", *want.Name)
	}
	return containerDrift(want, &podSpec.Containers[i])
}

func containerDrift(want *corev1ac.ContainerApplyConfiguration, got *corev1.Container) string {
	if got.Image != *want.Image {
		return fmt.Sprintf("it runs image %q; the Robot asks for %q", got.Image, *want.Image)
	}
	// args is an atomic list: whoever wrote it last owns all of it.
	if !slices.Equal(got.Args, want.Args) {
		return "args changed"
	}
	if sc := got.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation != *want.SecurityContext.AllowPrivilegeEscalation {
		return "allowPrivilegeEscalation changed"
	}
	for _, port := range want.Ports {
		if !slices.ContainsFunc(got.Ports, func(p corev1.ContainerPort) bool {
			return p.ContainerPort == *port.ContainerPort && p.Name == *port.Name && p.Protocol == *port.Protocol
		}) {
			return fmt.Sprintf("port %d changed", *port.ContainerPort)
		}
	}
	var wantEnv []corev1.EnvVar
	if err := roundTrip(want.Env, &wantEnv); err != nil {
		return "env cannot be compared: " + err.Error()
	}
	for _, env := range wantEnv {
		i := slices.IndexFunc(got.Env, func(e corev1.EnvVar) bool { return e.Name == env.Name })
		if i < 0 || !apiequality.Semantic.DeepEqual(defaultedEnvVar(env), got.Env[i]) {
			return fmt.Sprintf("env %s changed", env.Name)
		}
	}
	if want.Resources != nil {
		var resources corev1.ResourceRequirements
		if err := roundTrip(want.Resources, &resources); err != nil {
			return "resources cannot be compared: " + err.Error()
		}
		if name, ok := quantitiesIn(resources.Requests, got.Resources.Requests); !ok {
			return fmt.Sprintf("resource request %s changed", name)
		}
		if name, ok := quantitiesIn(resources.Limits, got.Resources.Limits); !ok {
			return fmt.Sprintf("resource limit %s changed", name)
		}
	}
	return ""
}

// defaultedEnvVar returns env as the API server stores it.
func defaultedEnvVar(env corev1.EnvVar) corev1.EnvVar {
	if env.ValueFrom != nil && env.ValueFrom.FieldRef != nil && env.ValueFrom.FieldRef.APIVersion == "" {
		env = *env.DeepCopy()
		env.ValueFrom.FieldRef.APIVersion = "v1"
	}
	return env
}

// missingFrom returns the first key of want whose value got lacks.
func missingFrom(want, got map[string]string) (string, bool) {
	for key, value := range want {
		if v, ok := got[key]; !ok || v != value {
			return key, false
		}
	}
	return "", true
}

// quantitiesIn reports whether got holds every quantity of want, compared by
// value ("1000m" equals "1").
func quantitiesIn(want, got corev1.ResourceList) (corev1.ResourceName, bool) {
	for name, quantity := range want {
		if q, ok := got[name]; !ok || q.Cmp(quantity) != 0 {
			return name, false
		}
	}
	return "", true
}
