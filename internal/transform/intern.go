package transform

import (
	"reflect"

	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// Every string a cached object holds is a copy of its own: the decoder
// allocates each one. Most of those in a Deployment or a Robot are the same
// in every object (label keys, the defaults the API server fills in,
// condition types and reasons), and they add up to several hundred bytes
// an object. The informers' transforms replace them by the constants below,
// which take no heap at all. Only known constants are used, never a table
// that grows with what is seen, so that interning cannot leak.

// knownStrings maps each known string to a constant equal to it.
var knownStrings = func() map[string]string {
	known := map[string]string{}
	for _, s := range []string{
		// Labels and annotations the operator sets, and the API server's.
		workload.LabelManagedBy, workload.LabelManagedByValue, workload.LabelRobot, workload.AnnotationSpecHash,
		"app.kubernetes.io/instance", "app.kubernetes.io/name", "robot",
		"deployment.kubernetes.io/revision", "1", "2", "3",
		"pod-template-hash",
		// Owner references.
		robotv1beta1.SchemeGroupVersion.String(), "Robot", "apps/v1", "v1",
		// Defaults of a Deployment and its pod template.
		string(appsv1.RollingUpdateDeploymentStrategyType), string(appsv1.RecreateDeploymentStrategyType), "25%",
		string(corev1.RestartPolicyAlways), string(corev1.DNSClusterFirst), corev1.DefaultSchedulerName,
		corev1.TerminationMessagePathDefault, string(corev1.TerminationMessageReadFile), string(corev1.TerminationMessageFallbackToLogsOnError),
		string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever),
		string(corev1.SeccompProfileTypeRuntimeDefault), "ALL", string(corev1.ProtocolTCP), string(corev1.ProtocolUDP),
		workload.ContainerName, workload.PortName,
		// Conditions.
		string(metav1.ConditionTrue), string(metav1.ConditionFalse), string(metav1.ConditionUnknown),
		string(appsv1.DeploymentAvailable), string(appsv1.DeploymentProgressing), string(appsv1.DeploymentReplicaFailure),
		"NewReplicaSetAvailable", "MinimumReplicasAvailable", "MinimumReplicasUnavailable", "ReplicaSetUpdated",
		"NewReplicaSetCreated", "FoundNewReplicaSet", "ProgressDeadlineExceeded", "FailedCreate",
		robotv1beta1.ConditionReady, robotv1beta1.ConditionAvailable, robotv1beta1.ConditionProgressing, robotv1beta1.ConditionSynced,
		robotv1beta1.ReasonConfigMissing, robotv1beta1.ReasonConfigNotWatched, robotv1beta1.ReasonCrashLoop, robotv1beta1.ReasonDeploymentContested, robotv1beta1.ReasonDeploymentNameTaken, robotv1beta1.ReasonDeploymentNotObserved, robotv1beta1.ReasonDisruptionBudgetContested, robotv1beta1.ReasonDisruptionBudgetNameTaken, robotv1beta1.ReasonDisruptionBudgetNotAllowed, robotv1beta1.ReasonFieldConflict, robotv1beta1.ReasonGatewayAPIMissing, robotv1beta1.ReasonGracePeriodNotAllowed, robotv1beta1.ReasonImagePullFailed, robotv1beta1.ReasonInvalidSpec, robotv1beta1.ReasonLoadBalancerClassImmutable, robotv1beta1.ReasonLoadBalancerClassNotAllowed, robotv1beta1.ReasonNewerAPI, robotv1beta1.ReasonPodSecurityRejected, robotv1beta1.ReasonProgressDeadlineExceeded, robotv1beta1.ReasonQuotaExceeded, robotv1beta1.ReasonReadinessProbeFailing, robotv1beta1.ReasonReplicaFailure, robotv1beta1.ReasonRolloutComplete, robotv1beta1.ReasonRolloutInProgress, robotv1beta1.ReasonRouteContested, robotv1beta1.ReasonRouteNameTaken, robotv1beta1.ReasonRouteNotAccepted, robotv1beta1.ReasonRouteNotAllowed, robotv1beta1.ReasonServiceContested, robotv1beta1.ReasonServiceMetadataNotAllowed, robotv1beta1.ReasonServiceNameTaken, robotv1beta1.ReasonServiceTypeNotAllowed, robotv1beta1.ReasonSyncFailed, robotv1beta1.ReasonSynced, robotv1beta1.ReasonUnschedulable, robotv1beta1.ReasonWaitingForGarbageCollection,
		// Container states.
		"ContainerCreating", "PodInitializing", "ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff",
		"CreateContainerConfigError", "Error", "Completed", "OOMKilled",
	} {
		known[s] = s
	}
	return known
}()

// InternString returns the known constant equal to s, or s.
func InternString(s string) string {
	if c, ok := knownStrings[s]; ok {
		return c
	}
	return s
}

// internStrings replaces, in the object obj points to, every string equal
// to a known constant by that constant: fields, slices, and map keys and
// values. Fields it cannot set (unexported ones) are left as they are.
func internStrings(obj any) {
	internValue(reflect.ValueOf(obj))
}

func internValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			internValue(v.Elem())
		}
	case reflect.String:
		if v.CanSet() {
			if c, ok := knownStrings[v.String()]; ok {
				v.SetString(c)
			}
		}
	case reflect.Struct:
		if v.Type() == timeType {
			return
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				internValue(f)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes, not strings
		}
		for i := range v.Len() {
			internValue(v.Index(i))
		}
	case reflect.Map:
		internMap(v)
	}
}

var timeType = reflect.TypeFor[metav1.Time]()

// internMap interns the keys and values of a map of strings, and what the
// values of any other map hold.
func internMap(m reflect.Value) {
	if m.IsNil() || m.Len() == 0 {
		return
	}
	keyIsString, valueIsString := m.Type().Key().Kind() == reflect.String, m.Type().Elem().Kind() == reflect.String
	if !keyIsString || !valueIsString {
		// Values of a map cannot be set in place; what they hold can, when
		// they are pointers or slices.
		for it := m.MapRange(); it.Next(); {
			if e := it.Value(); e.Kind() == reflect.Pointer || e.Kind() == reflect.Slice {
				internValue(e)
			}
		}
		return
	}
	type entry struct{ key, value reflect.Value }
	var changed []entry
	for it := m.MapRange(); it.Next(); {
		k, val := it.Key().String(), it.Value().String()
		ck, kok := knownStrings[k]
		cv, vok := knownStrings[val]
		if !kok && !vok {
			continue
		}
		if !kok {
			ck = k
		}
		if !vok {
			cv = val
		}
		changed = append(changed, entry{reflect.ValueOf(ck).Convert(m.Type().Key()), reflect.ValueOf(cv).Convert(m.Type().Elem())})
	}
	// Deleting and setting a key again stores the constant as the key.
	for _, e := range changed {
		m.SetMapIndex(e.key, reflect.Value{})
		m.SetMapIndex(e.key, e.value)
	}
}
