package workload

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/robot-operator/robot-operator/internal/outcome"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

const (
	// FieldManager owns, in server-side apply, the fields the operator sets.
	FieldManager = "robot-operator"

	// LabelManagedBy marks the Deployments the operator manages; its
	// Deployment informer watches only those.
	LabelManagedBy      = "app.kubernetes.io/managed-by"
	LabelManagedByValue = "robot-operator"
	labelName           = "app.kubernetes.io/name"
	labelNameValue      = "robot"
	LabelInstance       = "app.kubernetes.io/instance"
	// LabelRobot selects a Robot's pods. It is the Deployment's selector, so
	// it never changes once the Deployment exists.
	LabelRobot = "robot.dev/name"

	// AnnotationSpecHash records, on the Deployment and on the Service, a
	// hash of what the operator last applied. Comparing live fields finds
	// drift, but not a field the Robot no longer asks for (an env var
	// removed from the Robot, or one of its ports, say); the hash does.
	AnnotationSpecHash = robotv1beta1.AnnotationSpecHash

	// AnnotationPaused on a Robot, with the value "true" (in any case),
	// stops every write of the operator to what the Robot owns (its
	// Deployment, Service, PodDisruptionBudget and HTTPRoute), so that a
	// person can change them by hand (during an incident, a migration)
	// without the operator putting them back. "false" (in any case) is the
	// same as no annotation. Any other value pauses nothing: the shipped
	// admission policy refuses it, and the operator warns of it.
	AnnotationPaused = "robot.dev/paused"

	// ContainerName is the name of the Robot's container in the pod.
	ContainerName = "robot"

	// PortName is the name that robot.dev/v1alpha1's one port takes in
	// spec.ports, and so the name most Robots' ports have.
	PortName = "http"
)

// DeploymentName is the name of the Deployment that runs robot.
func DeploymentName(robot *robotv1beta1.Robot) string {
	if robot.Spec.DeploymentName != "" {
		return robot.Spec.DeploymentName
	}
	return robot.Name
}

// PauseValues are the values of AnnotationPaused the operator reads, in
// any case. Only these two: "yes", "1" and the like are one more spelling
// to document each, and the admission policy's refusal, which names these,
// costs whoever wrote one a moment.
var PauseValues = []string{"true", "false"}

// Paused reports whether robot's annotation robot.dev/paused is "true", in
// any case.
func Paused(robot *robotv1beta1.Robot) bool {
	return strings.EqualFold(robot.Annotations[AnnotationPaused], "true")
}

// PauseIgnored returns the value of robot's annotation robot.dev/paused
// when it is set to neither "true" nor "false" (in any case), and so is
// ignored.
func PauseIgnored(robot *robotv1beta1.Robot) (string, bool) {
	value, ok := robot.Annotations[AnnotationPaused]
	return value, ok && !oneOfFold(value, PauseValues)
}

// oneOfFold reports whether value is one of values, in any case.
func oneOfFold(value string, values []string) bool {
	return slices.ContainsFunc(values, func(v string) bool { return strings.EqualFold(value, v) })
}

// selectorLabels select robot's pods.
func selectorLabels(robot *robotv1beta1.Robot) map[string]string {
	return map[string]string{LabelRobot: robot.Name}
}

// SelectorString is the string form of robot's pod selector, as the scale
// subresource reports it.
func SelectorString(robot *robotv1beta1.Robot) string {
	return labels.SelectorFromSet(selectorLabels(robot)).String()
}

// ObjectLabels go on the Deployment and on its pods.
func ObjectLabels(robot *robotv1beta1.Robot) map[string]string {
	l := selectorLabels(robot)
	l[LabelManagedBy] = LabelManagedByValue
	l[labelName] = labelNameValue
	l[LabelInstance] = robot.Name
	return l
}

// validateSpec repeats the CRD's validation, for Robots stored before a rule
// existed or written around it.
func validateSpec(spec *robotv1beta1.RobotSpec) error {
	if spec.Replicas != nil && (*spec.Replicas < 0 || *spec.Replicas > 1000) {
		return fmt.Errorf("spec.replicas must be between 0 and 1000, not %d", *spec.Replicas)
	}
	// An image the container runtime cannot parse would never start; a
	// limit below its request, an env source and a probe the API server
	// refuses would have the Deployment refused.
	if err := robotv1beta1.ValidateImage("spec.image", spec.Image); err != nil {
		return err
	}
	if err := robotv1beta1.ValidateResources("spec.resources", spec.Resources); err != nil {
		return err
	}
	if err := robotv1beta1.ValidateEnv("spec", spec.Env, spec.EnvFrom); err != nil {
		return err
	}
	if err := robotv1beta1.ValidateProbes("spec", spec.ReadinessProbe, spec.LivenessProbe, spec.StartupProbe); err != nil {
		return err
	}
	// The API server refuses a Deployment whose progress deadline is not
	// above its minReadySeconds, and the operator leaves the deadline at
	// its default.
	if err := robotv1beta1.ValidateMinReadySeconds(spec.MinReadySeconds); err != nil {
		return err
	}
	if err := robotv1beta1.ValidatePorts(spec.Ports); err != nil {
		return err
	}
	if err := robotv1beta1.ValidateStrategy(spec.Strategy); err != nil {
		return err
	}
	// The Service's fields are not the Deployment's: ValidateServiceName
	// checks them on the Service's path, so that a mistake in how the
	// Robot is reached never keeps it from running.
	return validateWorkload(spec)
}

// NewDeployment returns the Deployment that robot asks for, as the apply
// configuration that the operator applies: exactly the fields it owns. It
// returns an *outcome.InvalidSpecError when the spec cannot become a Deployment.
// A Robot that rolls on config changes gets no config digest from it:
// NewDeploymentWithConfig gives one.
func NewDeployment(robot *robotv1beta1.Robot) (*appsv1ac.DeploymentApplyConfiguration, error) {
	return NewDeploymentWithConfig(robot, "")
}

// NewDeploymentWithConfig is NewDeployment with configDigest (ConfigDigest of
// the objects the pods read) in the pod template's AnnotationConfigDigest,
// when robot rolls on config changes and the digest is not empty. The spec
// hash covers it: a new digest is applied as a change of the Robot is.
func NewDeploymentWithConfig(robot *robotv1beta1.Robot, configDigest string) (*appsv1ac.DeploymentApplyConfiguration, error) {
	if err := UndecodableSpec(robot); err != nil {
		return nil, &outcome.InvalidSpecError{Err: err}
	}
	if err := validateSpec(&robot.Spec); err != nil {
		return nil, &outcome.InvalidSpecError{Err: err}
	}

	container := corev1ac.Container().
		WithName(ContainerName).
		WithImage(robot.Spec.Image).
		WithSecurityContext(corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false))
	if len(robot.Spec.Args) > 0 {
		container.WithArgs(robot.Spec.Args...)
	}
	for _, port := range robot.Spec.Ports {
		// The protocol is always sent: with the number, it is the key by
		// which server-side apply finds a container port.
		container.WithPorts(corev1ac.ContainerPort().
			WithName(port.Name).
			WithContainerPort(port.ContainerPort).
			WithProtocol(robotv1beta1.PortProtocol(port)))
	}
	// EnvVar and ResourceRequirements have deep optional structure whose
	// apply configurations mirror the API types field for field, so a JSON
	// round trip converts them without a hand-written copy to keep in step.
	if len(robot.Spec.Env) > 0 {
		if err := RoundTrip(defaultedEnv(robot.Spec.Env), &container.Env); err != nil {
			return nil, &outcome.InvalidSpecError{Err: fmt.Errorf("spec.env: %w", err)}
		}
	}
	if len(robot.Spec.Resources.Limits) > 0 || len(robot.Spec.Resources.Requests) > 0 || len(robot.Spec.Resources.Claims) > 0 {
		container.Resources = &corev1ac.ResourceRequirementsApplyConfiguration{}
		if err := RoundTrip(defaultedResources(robot.Spec.Resources), container.Resources); err != nil {
			return nil, &outcome.InvalidSpecError{Err: fmt.Errorf("spec.resources: %w", err)}
		}
	}

	pod := corev1ac.PodSpec().
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault)))
	template := corev1ac.PodTemplateSpec().WithLabels(ObjectLabels(robot))
	addReleaseTemplateAnnotation(template)
	if err := addWorkload(robot, template, pod, container); err != nil {
		return nil, &outcome.InvalidSpecError{Err: err}
	}
	if configDigest != "" && RollsOnConfigChange(robot) {
		// After the Robot's podAnnotations: the digest is the operator's.
		template.WithAnnotations(map[string]string{AnnotationConfigDigest: configDigest})
	}

	replicas := ptr.Deref(robot.Spec.Replicas, 1)
	spec := appsv1ac.DeploymentSpec().
		WithReplicas(replicas).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(robot))).
		WithTemplate(template.WithSpec(pod.WithContainers(container)))
	// Both only when the Robot sets them, as every field it may leave
	// unset: the API server's defaults then stand, and nobody owns them.
	if strategy := deploymentStrategy(robot.Spec.Strategy); strategy != nil {
		spec.WithStrategy(strategy)
	}
	if robot.Spec.MinReadySeconds > 0 {
		spec.WithMinReadySeconds(robot.Spec.MinReadySeconds)
	}
	deployment := appsv1ac.Deployment(DeploymentName(robot), robot.Namespace).
		WithLabels(ObjectLabels(robot)).
		WithOwnerReferences(controllerReference(robot)).
		WithSpec(spec)

	hash, err := specHash(deployment)
	if err != nil {
		return nil, &outcome.InvalidSpecError{Err: err}
	}
	deployment.WithAnnotations(map[string]string{AnnotationSpecHash: hash})
	return deployment, nil
}

// deploymentStrategy is the Deployment's strategy for the Robot's, nil when
// the Robot has none. A strategy without a type is a rolling update, as the
// CRD documents; the type is sent all the same, so that the Deployment's
// type is the operator's whenever the Robot sets a strategy, and a type
// another writer set cannot sit next to the Robot's rollingUpdate.
func deploymentStrategy(strategy *robotv1beta1.RobotStrategy) *appsv1ac.DeploymentStrategyApplyConfiguration {
	if strategy == nil {
		return nil
	}
	out := appsv1ac.DeploymentStrategy().
		WithType(appsv1.DeploymentStrategyType(cmp.Or(strategy.Type, robotv1beta1.StrategyRollingUpdate)))
	// An empty rollingUpdate sets no bound, and applied it would be an
	// empty field of the operator's that the stored bounds always differ
	// from.
	if rolling := strategy.RollingUpdate; rolling != nil && (rolling.MaxSurge != nil || rolling.MaxUnavailable != nil) {
		update := appsv1ac.RollingUpdateDeployment()
		if rolling.MaxSurge != nil {
			update.WithMaxSurge(*rolling.MaxSurge)
		}
		if rolling.MaxUnavailable != nil {
			update.WithMaxUnavailable(*rolling.MaxUnavailable)
		}
		out.WithRollingUpdate(update)
	}
	return out
}

// specHash is a short, stable digest of an apply configuration.
func specHash(applyConfiguration any) (string, error) {
	data, err := json.Marshal(applyConfiguration)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}

// RoundTrip copies in to out through JSON.
func RoundTrip(in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// defaultedEnv returns env with the defaults the API server would fill in
// inside fields that server-side apply treats as a whole (a field reference
// is atomic): applied without them, the stored field would always differ
// from what is applied.
func defaultedEnv(env []corev1.EnvVar) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.APIVersion == "" {
			e = *e.DeepCopy()
			e.ValueFrom.FieldRef.APIVersion = "v1"
		}
		out = append(out, e)
	}
	return out
}

// defaultedResources returns resources with every quantity rounded up to
// thousandths, as the API server stores a pod template's quantities (a CPU
// request of 100u becomes 1m): applied as the Robot gives them, the stored
// value would differ from the applied one forever, and every sync would apply
// again.
func defaultedResources(resources corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := *resources.DeepCopy()
	for _, list := range []corev1.ResourceList{out.Limits, out.Requests} {
		for name, q := range list {
			q.RoundUp(resource.Milli)
			list[name] = q
		}
	}
	return out
}
