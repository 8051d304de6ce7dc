package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/applyconfigurations"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

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
	return validateWorkload(spec)
}

// newDeployment returns the Deployment that robot asks for, as the apply
// configuration that the operator applies: exactly the fields it owns. It
// returns an *invalidSpecError when the spec cannot become a Deployment.
func newDeployment(robot *robotv1alpha1.Robot) (*appsv1ac.DeploymentApplyConfiguration, error) {
	if err := undecodableSpec(robot); err != nil {
		return nil, &invalidSpecError{err}
	}
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
		if err := roundTrip(defaultedEnv(robot.Spec.Env), &container.Env); err != nil {
			return nil, &invalidSpecError{fmt.Errorf("spec.env: %w", err)}
		}
	}
	if len(robot.Spec.Resources.Limits) > 0 || len(robot.Spec.Resources.Requests) > 0 || len(robot.Spec.Resources.Claims) > 0 {
		container.Resources = &corev1ac.ResourceRequirementsApplyConfiguration{}
		if err := roundTrip(defaultedResources(robot.Spec.Resources), container.Resources); err != nil {
			return nil, &invalidSpecError{fmt.Errorf("spec.resources: %w", err)}
		}
	}

	pod := corev1ac.PodSpec().
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault)))
	template := corev1ac.PodTemplateSpec().WithLabels(objectLabels(robot))
	if err := addWorkload(robot, template, pod, container); err != nil {
		return nil, &invalidSpecError{err}
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
			WithTemplate(template.WithSpec(pod.WithContainers(container))))

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

// deploymentTypes knows the schema that server-side apply uses for built-in
// types: which lists are keyed by which fields, which are atomic.
var deploymentTypes = applyconfigurations.NewTypeConverter(scheme.Scheme)

// deploymentDrift says how current differs from desired in the fields that
// desired sets, or returns "" when it does not. Only those fields count:
// what another writer adds to a field the Robot leaves unset (args, an env
// var, a sidecar, a label) is theirs, and an apply that does not carry the
// field would never remove it anyway. A field the Robot no longer sets shows
// as a change of the spec hash annotation. The difference found first is
// described as "what the Deployment has; what the Robot asks for", which
// reads right whether the Robot changed or someone edited the Deployment.
func deploymentDrift(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) string {
	return driftSkippingSpecs(desired, current, false)
}

// driftSkippingSpecs is deploymentDrift, without the costly comparison of
// specs when the caller knows them to match.
func driftSkippingSpecs(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment, specsMatch bool) string {
	if drift := ownerDrift(desired, current); drift != "" {
		return drift
	}
	if !specsMatch {
		if drift := specDrift(desired, current); drift != "" {
			return drift
		}
	}
	return annotationDrift(desired, current)
}

// ownerDrift compares the labels and the controller reference.
func ownerDrift(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) string {
	if key, ok := missingFrom(desired.Labels, current.Labels); !ok {
		return describeMapDrift("metadata.labels", key, desired.Labels, current.Labels)
	}
	if !controlledAs(current, desired.OwnerReferences[0]) {
		return "its controller reference changed"
	}
	return ""
}

// annotationDrift compares the annotations, the spec hash among them.
func annotationDrift(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) string {
	key, ok := missingFrom(desired.Annotations, current.Annotations)
	switch {
	case ok:
		return ""
	case key == annotationSpecHash:
		// No field the Robot sets differs, but the Robot asks for
		// something else than was applied: a field was removed from it.
		return "the Robot's spec changed"
	}
	return describeMapDrift("metadata.annotations", key, desired.Annotations, current.Annotations)
}

func describeMapDrift(field, key string, want, got map[string]string) string {
	if value, ok := got[key]; ok {
		return fmt.Sprintf("%s.%s is %q; the Robot asks for %q", field, key, value, want[key])
	}
	return fmt.Sprintf("%s.%s is not set; the Robot asks for %q", field, key, want[key])
}

// specDrift compares the Deployment's spec the way server-side apply merges
// it, by the schema of the Deployment type: an env var or a port is found by
// its key, args are compared whole, and only the fields desired sets are
// looked at. It is the costly part of a drift check.
func specDrift(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) string {
	// Only the specs: the rest is compared above, and converting it would
	// cost as much again.
	desiredSpec := &appsv1ac.DeploymentApplyConfiguration{TypeMetaApplyConfiguration: desired.TypeMetaApplyConfiguration, Spec: desired.Spec}
	currentSpec := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		Spec:     current.Spec,
	}
	return describeSpecDrift(desiredSpec, currentSpec)
}

// describeSpecDrift tells how current, an object of a built-in kind with its
// type meta and spec, differs from desired, an apply configuration of that
// kind, in the fields desired sets, or returns "" when it does not.
func describeSpecDrift(desired any, current runtime.Object) string {
	path, err := firstDifference(desired, current)
	switch {
	case err != nil:
		// Not expected for what the API server has stored: say so, and
		// call it drift, so that the apply's answer decides.
		return "it cannot be compared with what the Robot asks for: " + err.Error()
	case path == nil:
		return ""
	}
	return describeDifference(path, desired, current)
}

// firstDifference returns the path of a field that desired, an apply
// configuration of a built-in kind, sets and current, an object of that kind
// with its type meta, lacks or holds with another value, or nil when there
// is none.
func firstDifference(desired any, current runtime.Object) (fieldpath.Path, error) {
	want, err := typedApplyConfiguration(desired)
	if err != nil {
		return nil, fmt.Errorf("the desired object: %w", err)
	}
	got, err := deploymentTypes.ObjectToTyped(current, typed.AllowDuplicates)
	if err != nil {
		return nil, fmt.Errorf("the live object: %w", err)
	}
	fields, err := want.ToFieldSet()
	if err != nil {
		return nil, err
	}
	comparison, err := want.Compare(got.ExtractItems(fields.Leaves(), typed.WithAppendKeyFields()))
	if err != nil {
		return nil, err
	}
	if comparison.IsSame() {
		return nil, nil
	}
	// Modified: both have it, with other values. Removed: desired sets it,
	// current lacks it. (Added cannot happen: only desired's fields were
	// extracted.) The first in path order, so the message is stable.
	var first fieldpath.Path
	for _, set := range []*fieldpath.Set{comparison.Modified, comparison.Removed, comparison.Added} {
		set.Leaves().Iterate(func(p fieldpath.Path) {
			if first == nil || p.String() < first.String() {
				first = p.Copy()
			}
		})
		if first != nil {
			break
		}
	}
	return first, nil
}

// typedApplyConfiguration is an apply configuration as server-side apply
// sees it.
func typedApplyConfiguration(applyConfiguration any) (*typed.TypedValue, error) {
	data, err := json.Marshal(applyConfiguration)
	if err != nil {
		return nil, err
	}
	var object map[string]any
	// apimachinery's json keeps integers as int64, as the schema wants.
	if err := utiljson.Unmarshal(data, &object); err != nil {
		return nil, err
	}
	return deploymentTypes.ObjectToTyped(&unstructured.Unstructured{Object: object}, typed.AllowDuplicates)
}

// describeDifference tells a person what differs at path.
func describeDifference(path fieldpath.Path, desired, current any) string {
	field := strings.TrimPrefix(path.String(), ".")
	// Name the outermost thing that is missing: a whole env var, not its
	// name.
	for i := 1; i <= len(path); i++ {
		if _, found := valueAt(current, path[:i]); !found {
			want, _ := valueAt(desired, path[:i])
			return fmt.Sprintf("%s is not set; the Robot asks for %s", strings.TrimPrefix(path[:i].String(), "."), want)
		}
	}
	want, _ := valueAt(desired, path)
	got, _ := valueAt(current, path)
	return fmt.Sprintf("%s is %s; the Robot asks for %s", field, got, want)
}

// valueAt returns the value at path in object, as short JSON.
func valueAt(object any, path fieldpath.Path) (string, bool) {
	data, err := json.Marshal(object)
	if err != nil {
		return "", false
	}
	var v any
	if err := utiljson.Unmarshal(data, &v); err != nil {
		return "", false
	}
	for _, element := range path {
		switch {
		case element.FieldName != nil:
			m, ok := v.(map[string]any)
			if !ok {
				return "", false
			}
			if v, ok = m[*element.FieldName]; !ok {
				return "", false
			}
		case element.Key != nil:
			items, _ := v.([]any)
			i := slices.IndexFunc(items, func(item any) bool {
				m, ok := item.(map[string]any)
				if !ok {
					return false
				}
				for _, key := range *element.Key {
					if !reflect.DeepEqual(m[key.Name], key.Value.Unstructured()) {
						return false
					}
				}
				return true
			})
			if i < 0 {
				return "", false
			}
			v = items[i]
		default:
			return "", false
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	const maxValue = 200
	if len(out) > maxValue {
		return string(out[:maxValue-3]) + "...", true
	}
	return string(out), true
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

// missingFrom returns the first key of want, in sorted order, whose value
// got lacks.
func missingFrom(want, got map[string]string) (string, bool) {
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if v, ok := got[key]; !ok || v != want[key] {
			return key, false
		}
	}
	return "", true
}
