package robottest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/outcome"

	"runtime"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

var (
	DeploymentsResource = appsv1.SchemeGroupVersion.WithResource("deployments")
	RobotsResource      = robotv1beta1.SchemeGroupVersion.WithResource("robots")
	FixtureNow          = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
)

// ownFieldManager is the operator's field manager, repeated here because it
// is part of the contract under test.
const ownFieldManager = "robot-operator"

// The name of the Robot's container and the labels of its pods, repeated
// here for the same reason.
const (
	containerName = "robot"
	labelRobot    = "robot.dev/name"
)

// Paused returns robot with the annotation robot.dev/paused, a person's
// hold on what the Robot owns, set to value.
func Paused(robot *robotv1beta1.Robot, value string) *robotv1beta1.Robot {
	robot = robot.DeepCopy()
	if robot.Annotations == nil {
		robot.Annotations = map[string]string{}
	}
	robot.Annotations["robot.dev/paused"] = value
	return robot
}

// podLabels are the labels the operator gives robot's pods.
func podLabels(robot *robotv1beta1.Robot) map[string]string {
	return map[string]string{
		labelRobot:                     robot.Name,
		"app.kubernetes.io/managed-by": "robot-operator",
		"app.kubernetes.io/name":       "robot",
		"app.kubernetes.io/instance":   robot.Name,
	}
}

// LiveDeploymentOf returns the Deployment that the API server would store
// for desired (a Deployment apply configuration, and the error of making
// it), settled and available.
func LiveDeploymentOf(t testing.TB, desired any, err error) *appsv1.Deployment {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := jsonRoundTrip(desired, &d); err != nil {
		t.Fatal(err)
	}
	d.UID = deploymentUID(d.Name)
	d.ResourceVersion = "7"
	d.Generation = 1
	// The Deployment controller gives the Deployment the revision of its
	// newest ReplicaSet.
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[revisionAnnotation] = "1"
	d.Spec.Template.Spec.Containers[0].TerminationMessagePath = corev1.TerminationMessagePathDefault
	d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	replicas := *d.Spec.Replicas
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: 1,
		Replicas:           replicas,
		UpdatedReplicas:    replicas,
		ReadyReplicas:      replicas,
		AvailableReplicas:  replicas,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: "ReplicaSet has successfully progressed."},
		},
	}
	return &d
}

// LiveServiceOf returns the Service that the API server would store for
// desired, a Service apply configuration.
func LiveServiceOf(t testing.TB, desired any) *corev1.Service {
	t.Helper()
	var s corev1.Service
	if err := jsonRoundTrip(desired, &s); err != nil {
		t.Fatal(err)
	}
	s.UID = types.UID(s.Name + "-service-uid")
	s.ResourceVersion = "5"
	s.Spec.ClusterIP = "10.96.0.42"
	s.Spec.ClusterIPs = []string{"10.96.0.42"}
	s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	s.Spec.SessionAffinity = corev1.ServiceAffinityNone
	if s.Spec.InternalTrafficPolicy == nil {
		s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for i := range s.Spec.Ports {
			// The API server picks a node port the Service does not set.
			if s.Spec.Ports[i].NodePort == 0 {
				s.Spec.Ports[i].NodePort = 31234 + int32(i)
			}
		}
		if s.Spec.ExternalTrafficPolicy == "" {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}
		if s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal && s.Spec.Type == corev1.ServiceTypeLoadBalancer {
			s.Spec.HealthCheckNodePort = 32100
		}
	}
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
		s.Spec.AllocateLoadBalancerNodePorts = ptr.To(true)
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
	}
	return &s
}

// LiveBudgetOf returns the PodDisruptionBudget that the API server would
// store for desired, a PodDisruptionBudget apply configuration.
func LiveBudgetOf(t testing.TB, desired any) *policyv1.PodDisruptionBudget {
	t.Helper()
	var budget policyv1.PodDisruptionBudget
	if err := jsonRoundTrip(desired, &budget); err != nil {
		t.Fatal(err)
	}
	budget.UID, budget.ResourceVersion, budget.Generation = "budget-uid", "5", 1
	return &budget
}

// UnavailableNow makes d, a live Deployment, one with no replica available.
func UnavailableNow(d *appsv1.Deployment) *appsv1.Deployment {
	d.Status.ReadyReplicas, d.Status.AvailableReplicas = 0, 0
	d.Status.Conditions[0].Status, d.Status.Conditions[0].Reason = corev1.ConditionFalse, "MinimumReplicasUnavailable"
	return d
}

// jsonRoundTrip copies in to out through JSON.
func jsonRoundTrip(in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

func MustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// NewRobot returns a Robot as the API server stores it, defaults applied.
func NewRobot(name string, replicas int32) *robotv1beta1.Robot {
	return &robotv1beta1.Robot{
		TypeMeta: metav1.TypeMeta{APIVersion: robotv1beta1.SchemeGroupVersion.String(), Kind: "Robot"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       metav1.NamespaceDefault,
			UID:             types.UID(name + "-uid"),
			Generation:      1,
			ResourceVersion: "10",
		},
		Spec: robotv1beta1.RobotSpec{
			Image:    "registry.example/robot:1.0",
			Replicas: ptr.To(replicas),
			Ports:    []robotv1beta1.RobotPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			// No Service: these Robots are about the Deployment, whose
			// requests the tests count; service_test.go has Robots with one.
			Service: &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeNone},
			Env:     []corev1.EnvVar{{Name: "MODE", Value: "demo"}},
		},
	}
}

// MustString is v as JSON, for a message.
func MustString(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// ManagedFieldsEntry is a managedFields entry as the API server stores it.
func ManagedFieldsEntry(manager string, operation metav1.ManagedFieldsOperationType, subresource string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager: manager, Operation: operation, Subresource: subresource, APIVersion: "apps/v1",
		Time: ptr.To(metav1.NewTime(FixtureNow)), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)},
	}
}

var (
	Created         = ManagedFieldsEntry(ownFieldManager, metav1.ManagedFieldsOperationUpdate, "")
	Applied         = ManagedFieldsEntry(ownFieldManager, metav1.ManagedFieldsOperationApply, "")
	StatusByOthers  = ManagedFieldsEntry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "status")
	CreatedInCache  = metav1.ManagedFieldsEntry{Manager: ownFieldManager, Operation: metav1.ManagedFieldsOperationUpdate}
	AppliedInCache  = metav1.ManagedFieldsEntry{Manager: ownFieldManager, Operation: metav1.ManagedFieldsOperationApply}
	OthersInCache   = metav1.ManagedFieldsEntry{}
	UpdatedByOthers = ManagedFieldsEntry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "")
)

// revisionAnnotation is the Deployment controller's revision of a
// Deployment and of its ReplicaSets.
const revisionAnnotation = "deployment.kubernetes.io/revision"

// deploymentUID is the UID LiveDeploymentOf gives the Deployment name.
func deploymentUID(name string) types.UID { return types.UID(name + "-deployment-uid") }

// ReplicaSet is the ReplicaSet of the given revision that the Deployment
// controller makes for d, a live Deployment.
func ReplicaSet(d *appsv1.Deployment, revision string) *appsv1.ReplicaSet {
	return replicaSet(d.Namespace, d.Name, d.UID, revision)
}

func replicaSet(namespace, deployment string, uid types.UID, revision string) *appsv1.ReplicaSet {
	hash := "5d9c7b8f" + revision
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: deployment + "-" + hash, Namespace: namespace,
			UID:             types.UID(string(uid) + "-rs-" + revision),
			ResourceVersion: "3",
			Labels:          map[string]string{"app.kubernetes.io/managed-by": "robot-operator", "pod-template-hash": hash},
			Annotations:     map[string]string{revisionAnnotation: revision},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: deployment, UID: uid,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
	}
}

// OwnedBy makes pod one of rs's pods, and returns it.
func OwnedBy(pod *corev1.Pod, rs *appsv1.ReplicaSet) *corev1.Pod {
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	return pod
}

// Pod is a pod of robot's Deployment as the kubelet reports it, with
// the Robot container in state: a pod of the ReplicaSet of revision 1 of
// the Deployment LiveDeploymentOf returns for robot.
func Pod(robot *robotv1beta1.Robot, name string, state corev1.ContainerState) *corev1.Pod {
	deployment := robot.Spec.DeploymentName
	if deployment == "" {
		deployment = robot.Name
	}
	return OwnedBy(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: robot.Namespace, Labels: podLabels(robot)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: containerName, Image: robot.Spec.Image}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(FixtureNow.Add(-time.Hour))},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: containerName, State: state}},
		},
	}, replicaSet(robot.Namespace, deployment, deploymentUID(deployment), "1"))
}

func Waiting(reason, message string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
}

func RunningSince(d time.Duration) corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(FixtureNow.Add(-d))}}
}

func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// NewServiceRobot is NewRobot with the Service of the given type.
func NewServiceRobot(name string, serviceType robotv1beta1.ServiceType) *robotv1beta1.Robot {
	robot := NewRobot(name, 1)
	robot.Spec.Service = &robotv1beta1.RobotService{Type: serviceType}
	return robot
}

// APIServerDefaults sets the defaults that the API server sets on an apps/v1
// Deployment, in the fields the operator's Deployment and addForeignFields'
// additions can carry: k8s.io/kubernetes' pkg/apis/apps/v1
// SetObjectDefaults_Deployment, with core/v1 SetDefaults_PodSpec,
// SetDefaults_Container and SetDefaults_ResourceList, as of v1.37. Not
// included: what those set in fields none of them carry (lifecycle hooks,
// volume sources a Robot cannot have). Requests are not defaulted from
// limits: core/v1 does that for Pods only, not for a pod template.
func APIServerDefaults(d *appsv1.Deployment) {
	spec := &d.Spec
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	if spec.Strategy.Type == "" {
		spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if spec.Strategy.RollingUpdate == nil {
			spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if spec.Strategy.RollingUpdate.MaxUnavailable == nil {
			spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("25%"))
		}
		if spec.Strategy.RollingUpdate.MaxSurge == nil {
			spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("25%"))
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if spec.ProgressDeadlineSeconds == nil {
		spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	}

	pod := &spec.Template.Spec
	if pod.ServiceAccountName == "" {
		pod.ServiceAccountName = pod.DeprecatedServiceAccount
	}
	pod.DeprecatedServiceAccount = pod.ServiceAccountName
	if pod.DNSPolicy == "" {
		pod.DNSPolicy = corev1.DNSClusterFirst
	}
	if pod.RestartPolicy == "" {
		pod.RestartPolicy = corev1.RestartPolicyAlways
	}
	if pod.SecurityContext == nil {
		pod.SecurityContext = &corev1.PodSecurityContext{}
	}
	if pod.TerminationGracePeriodSeconds == nil {
		pod.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if pod.SchedulerName == "" {
		pod.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range pod.Volumes {
		volumeDefaults(&pod.Volumes[i])
	}
	for _, containers := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
		for i := range containers {
			containerDefaults(&containers[i])
		}
	}
	if pod.Resources != nil {
		roundUpToMilli(pod.Resources.Limits)
		roundUpToMilli(pod.Resources.Requests)
	}
	roundUpToMilli(pod.Overhead)
}

// containerDefaults: core/v1 SetDefaults_Container, and the defaults
// SetObjectDefaults_Deployment sets inside a container.
func containerDefaults(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil {
			if from.FieldRef != nil && from.FieldRef.APIVersion == "" {
				from.FieldRef.APIVersion = "v1"
			}
			if from.FileKeyRef != nil && from.FileKeyRef.Optional == nil {
				from.FileKeyRef.Optional = ptr.To(false)
			}
		}
	}
	roundUpToMilli(c.Resources.Limits)
	roundUpToMilli(c.Resources.Requests)
	for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if probe != nil {
			probeDefaults(probe)
		}
	}
}

// probeDefaults: core/v1 SetDefaults_Probe and SetDefaults_HTTPGetAction,
// and the default of a gRPC probe's service that SetObjectDefaults_Deployment
// sets.
func probeDefaults(p *corev1.Probe) {
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if get := p.HTTPGet; get != nil {
		if get.Path == "" {
			get.Path = "/"
		}
		if get.Scheme == "" {
			get.Scheme = corev1.URISchemeHTTP
		}
	}
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr.To("")
	}
}

// volumeDefaults: core/v1 SetDefaults_Volume, and the defaults
// SetObjectDefaults_Deployment sets inside the volume sources a Robot or
// addForeignFields can give (SetDefaults_ConfigMapVolumeSource,
// SetDefaults_SecretVolumeSource, SetDefaults_ProjectedVolumeSource,
// SetDefaults_ObjectFieldSelector, SetDefaults_ServiceAccountTokenProjection).
func volumeDefaults(v *corev1.Volume) {
	if reflect.ValueOf(v.VolumeSource).IsZero() {
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if v.ConfigMap != nil && v.ConfigMap.DefaultMode == nil {
		v.ConfigMap.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if v.Secret != nil && v.Secret.DefaultMode == nil {
		v.Secret.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
	}
	if p := v.Projected; p != nil {
		if p.DefaultMode == nil {
			p.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range p.Sources {
			source := &p.Sources[i]
			if source.DownwardAPI != nil {
				for j := range source.DownwardAPI.Items {
					if ref := source.DownwardAPI.Items[j].FieldRef; ref != nil && ref.APIVersion == "" {
						ref.APIVersion = "v1"
					}
				}
			}
			if token := source.ServiceAccountToken; token != nil && token.ExpirationSeconds == nil {
				token.ExpirationSeconds = ptr.To[int64](3600)
			}
		}
	}
}

// imageTag is the tag of an image reference as k8s.io/kubernetes'
// parsers.ParseImageName gives it: "latest" when there is neither a tag nor a
// digest. (ParseImageName also rejects malformed references, which then
// default to IfNotPresent; the operator does not set the pull policy, so the
// difference cannot show as drift.)
func imageTag(image string) string {
	name, digest, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		return name[i+1:]
	}
	if digest != "" {
		return ""
	}
	return "latest"
}

// roundUpToMilli: core/v1 SetDefaults_ResourceList.
func roundUpToMilli(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}

// PreviousConditions decodes the conditions a Robot already has (see
// FuzzBytes): for each, its type (the operator's or another writer's) and
// status. One per type, as the CRD's listType=map keeps them.
func PreviousConditions(data []byte) []metav1.Condition {
	b := &FuzzBytes{Data: data}
	types := []string{robotv1beta1.ConditionReady, robotv1beta1.ConditionAvailable, robotv1beta1.ConditionProgressing, robotv1beta1.ConditionSynced, "Audited", "example.com/Checked"}
	statuses := []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}
	var out []metav1.Condition
	for b.More() {
		c := metav1.Condition{Type: Pick(b, types), Status: Pick(b, statuses), Reason: "Before", Message: "before",
			ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(FixtureNow.Add(-time.Hour))}
		if !slices.ContainsFunc(out, func(o metav1.Condition) bool { return o.Type == c.Type }) {
			out = append(out, c)
		}
	}
	return out
}

// DeploymentConditionsFromFuzz decodes a Deployment's conditions (see
// FuzzBytes): for each, a type (Available, Progressing, ReplicaFailure or
// any string), a status (True, False, Unknown, empty or any string), a
// reason, and a message repeated up to 255 times.
func DeploymentConditionsFromFuzz(data []byte) []appsv1.DeploymentCondition {
	b := &FuzzBytes{Data: data}
	var out []appsv1.DeploymentCondition
	for b.More() {
		var c appsv1.DeploymentCondition
		switch t := b.Byte() % 4; t {
		case 3:
			c.Type = appsv1.DeploymentConditionType(b.String())
		default:
			c.Type = []appsv1.DeploymentConditionType{appsv1.DeploymentAvailable, appsv1.DeploymentProgressing, appsv1.DeploymentReplicaFailure}[t]
		}
		switch s := b.Byte() % 5; s {
		case 4:
			c.Status = corev1.ConditionStatus(b.String())
		default:
			c.Status = []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown, ""}[s]
		}
		c.Reason = strings.Repeat(b.String(), max(1, int(b.Byte())))
		c.Message = strings.Repeat(b.String(), max(1, int(b.Byte())))
		out = append(out, c)
	}
	return out
}

// SyncErrorFromFuzz returns an error of each kind a sync can return.
func SyncErrorFromFuzz(kind uint8, message string) error {
	switch kind % 10 {
	case 0:
		return nil
	case 1:
		return errors.New(message)
	case 2:
		return &outcome.InvalidSpecError{Err: errors.New(message)}
	case 3:
		return &outcome.NameTakenError{Name: message, Owner: "Robot/" + message}
	case 4:
		return &outcome.FieldConflictError{Name: "test", Field: ".spec.template.spec.containers[name=\"robot\"].image", Manager: message, Err: errors.New(message)}
	case 5:
		return &outcome.EarlierRobotError{Name: message}
	case 6:
		return &outcome.SyncTimeoutError{Key: types.NamespacedName{Namespace: "default", Name: message}, Timeout: 30 * time.Second}
	case 7:
		return fmt.Errorf("applying Deployment default/test: %w", &outcome.InvalidSpecError{Err: errors.New(message)})
	case 8:
		return errors.Join(errors.New(message), &outcome.NameTakenError{Name: "test"})
	default:
		return outcome.ErrNamespaceTerminating
	}
}

// FuzzBytes reads a fuzz input as a sequence of small values. Past the end
// it reads zeros and empty strings, so that every input decodes.
type FuzzBytes struct{ Data []byte }

func (b *FuzzBytes) More() bool { return len(b.Data) > 0 }

func (b *FuzzBytes) Byte() byte {
	if len(b.Data) == 0 {
		return 0
	}
	v := b.Data[0]
	b.Data = b.Data[1:]
	return v
}

// String reads a length byte, then that many bytes.
func (b *FuzzBytes) String() string {
	n := min(int(b.Byte()), len(b.Data))
	s := string(b.Data[:n])
	b.Data = b.Data[n:]
	return s
}

func Pick[T any](b *FuzzBytes, options []T) T { return options[int(b.Byte())%len(options)] }

// EncodeFuzzInput writes what FuzzBytes reads: bytes as they are, strings after
// their length.
func EncodeFuzzInput(values ...any) []byte {
	var out []byte
	for _, v := range values {
		switch v := v.(type) {
		case byte:
			out = append(out, v)
		case string:
			if len(v) > 255 {
				panic("fuzzEncode: a string longer than 255 bytes")
			}
			out = append(out, byte(len(v)))
			out = append(out, v...)
		default:
			panic(fmt.Sprintf("fuzzEncode: %T", v))
		}
	}
	return out
}

// DecodedAgain returns robot after a JSON round trip, as the operator's
// informer decodes it.
func DecodedAgain(t *testing.T, robot *robotv1beta1.Robot) *robotv1beta1.Robot {
	t.Helper()
	out := &robotv1beta1.Robot{}
	if err := jsonRoundTrip(robot, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Decoded returns d after a JSON round trip, as the operator's informer
// decodes it.
func Decoded(t *testing.T, d *appsv1.Deployment) *appsv1.Deployment {
	t.Helper()
	out := &appsv1.Deployment{}
	if err := jsonRoundTrip(d, out); err != nil {
		t.Fatal(err)
	}
	return out
}
