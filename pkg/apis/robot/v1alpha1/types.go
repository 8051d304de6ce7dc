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

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:deprecatedversion:warning="robot.dev/v1alpha1 Robot is deprecated; use robot.dev/v1beta1, which the operator converts to and from with nothing lost"
// +kubebuilder:resource:path=robots,singular=robot,shortName=rb,categories=all,scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`,description="Replicas the Robot asks for"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`,description="Pods that are ready"
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`,description="Pods that have been ready for at least minReadySeconds"
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the Robot is or is not Ready"
// +kubebuilder:printcolumn:name="Synced",type=string,JSONPath=`.status.conditions[?(@.type=="Synced")].status`,description="Whether the operator's last sync of the Robot succeeded; its reason says why not"
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.status.serviceName`,description="The Service that reaches the Robot's pods on its port, when it has one"
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`,description="Container image",priority=0
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="the Robot's name must be at most 63 characters: it is used as a label value on the Deployment and its pods",fieldPath=".metadata"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.port) || (has(self.spec.service) && has(self.spec.service.type) && self.spec.service.type == 'None') || (has(self.spec.deploymentName) ? self.spec.deploymentName : self.metadata.name).matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="a Robot with a port gets a Service named as its Deployment (spec.deploymentName, or else the Robot's name), and a Service's name must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter, no dots; set spec.deploymentName to such a name, or spec.service.type to None",fieldPath=".metadata"

// Robot runs a container image as a Deployment that the operator creates,
// owns and keeps as the Robot asks, and reports that Deployment's state in its
// status.
type Robot struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the Robot asks for.
	// +required
	Spec RobotSpec `json:"spec"`

	// Status is what the operator last observed of the Robot's Deployment.
	// +optional
	Status RobotStatus `json:"status,omitempty"`
}

// RobotSpec is the desired state of a Robot.
// +kubebuilder:validation:XValidation:rule="!has(self.http) || (has(self.port) && (!has(self.service) || !has(self.service.type) || self.service.type != 'None'))",message="http routes requests to the Robot's Service: set port, and a service type other than None"
// +kubebuilder:validation:XValidation:rule="!has(self.volumeMounts) || self.volumeMounts.all(m, has(self.volumes) && self.volumes.exists(v, v.name == m.name))",message="every volumeMounts entry must name a volume of spec.volumes",fieldPath=".volumeMounts"
// +kubebuilder:validation:XValidation:rule="has(self.deploymentName) == has(oldSelf.deploymentName) && (!has(self.deploymentName) || self.deploymentName == oldSelf.deploymentName)",message="deploymentName is immutable: it cannot be set, changed or removed after the Robot is created",fieldPath=".deploymentName"
type RobotSpec struct {
	// Image is the container image to run, as a reference a container
	// runtime accepts, for example "ghcr.io/acme/robot:1.4.2".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.matches('[[:space:]]')",message="image must be an image reference without spaces, such as registry.example.com/team/robot:1.4"
	Image string `json:"image"`

	// Replicas is the number of pods to run. It is also what `kubectl scale`
	// and a HorizontalPodAutoscaler change through the scale subresource.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Replicas *int32 `json:"replicas,omitempty"`

	// DeploymentName is the name of the Deployment the operator creates for
	// this Robot, in the Robot's namespace. It defaults to the Robot's name
	// and cannot be set, changed or removed once the Robot exists, so the
	// operator never loses track of a Deployment it created.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="deploymentName must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit"
	DeploymentName string `json:"deploymentName,omitempty"`

	// Port is the port the container listens on. It is declared on the
	// container under the name "http".
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`

	// Service is how the Robot is reached. When port is set, the operator
	// keeps a Service named like the Deployment that selects the Robot's
	// pods and exposes port under the name "http", unless service.type is
	// None. Without port there is no Service.
	// +optional
	Service *RobotService `json:"service,omitempty"`

	// DisruptionBudget is the PodDisruptionBudget the operator keeps for
	// the Robot's pods, so that a node drain takes them down a few at a
	// time. Unset, a Robot of 2 or more replicas gets one that lets one pod
	// be evicted at a time (maxUnavailable 1), and a Robot of fewer gets
	// none: a budget on a single pod would block every drain. A pod that is
	// not ready can always be evicted, so a crash-looping pod never blocks
	// a drain.
	// +optional
	DisruptionBudget *v1beta1.RobotDisruptionBudget `json:"disruptionBudget,omitempty"`

	// HTTP exposes the Robot over HTTP through the Gateway API: the
	// operator keeps an HTTPRoute, named like the Deployment, that attaches
	// to the Gateways listed and sends the requests for the hostnames and
	// path prefixes listed to the Robot's Service. It needs the Gateway
	// API's CRDs in the cluster, and a Service (ports, and a service type
	// other than None). The Robot is Ready only once every Gateway has
	// accepted the route.
	// +optional
	HTTP *v1beta1.RobotHTTP `json:"http,omitempty"`

	// Args are the arguments passed to the image's entrypoint.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Args []string `json:"args,omitempty"`

	// Env is the list of environment variables set in the container.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Resources are the compute resources the container requests and is
	// limited to.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Command replaces the image's entrypoint. Args are passed to it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Command []string `json:"command,omitempty"`

	// ImagePullPolicy is when the image is pulled: Always, IfNotPresent or
	// Never. Unset, Kubernetes decides: Always for the tag "latest" or no
	// tag, IfNotPresent otherwise.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// ImagePullSecrets name Secrets of the Robot's namespace that hold the
	// credentials to pull the image from a private registry.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(s, size(s.name) > 0)",message="every imagePullSecrets entry must name a Secret"
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// EnvFrom sets environment variables from every key of ConfigMaps and
	// Secrets of the Robot's namespace. Env wins over it for a name both
	// set.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// ReadinessProbe tells when a pod may receive traffic; the Robot is
	// Ready once every replica passes it. Unset, a Robot with a port gets
	// a TCP probe on it (tcpSocket: {port: http}), so that Ready means the
	// port answers; a Robot without a port is ready as soon as its
	// container starts.
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`

	// LivenessProbe tells when the container must be restarted.
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`

	// StartupProbe holds the other probes back until the container has
	// started, for slow starters.
	// +optional
	StartupProbe *corev1.Probe `json:"startupProbe,omitempty"`

	// Volumes are the pod's volumes. Only ConfigMaps, Secrets, emptyDir and
	// projected volumes are allowed: nothing that reaches the node (hostPath)
	// or storage outside the pod.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Volumes []RobotVolume `json:"volumes,omitempty"`

	// VolumeMounts mount the Robot's volumes into the container. Each names
	// a volume of spec.volumes.
	// +optional
	// +listType=map
	// +listMapKey=mountPath
	// +kubebuilder:validation:MaxItems=64
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// NodeSelector limits the pods to the nodes that have these labels.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations let the pods run on nodes with matching taints.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity is the pods' node affinity and pod (anti-)affinity.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// TopologySpreadConstraints spread the pods over zones, nodes or other
	// topology domains.
	// +optional
	// +listType=map
	// +listMapKey=topologyKey
	// +listMapKey=whenUnsatisfiable
	// +kubebuilder:validation:MaxItems=16
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// PriorityClassName is the PriorityClass of the pods.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// PodLabels are added to the labels of the pods, for example to opt in
	// to sidecar injection. They cannot set the labels the operator puts on
	// the pods: robot.dev/name (the Deployment's selector) and
	// app.kubernetes.io/managed-by, name and instance.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['robot.dev/name', 'app.kubernetes.io/managed-by', 'app.kubernetes.io/name', 'app.kubernetes.io/instance']))",message="podLabels cannot set robot.dev/name, app.kubernetes.io/managed-by, app.kubernetes.io/name or app.kubernetes.io/instance: the operator sets them, and robot.dev/name selects the Robot's pods"
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// PodAnnotations are added to the annotations of the pods, for example
	// to have them scraped for metrics.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// ServiceAccountName is the ServiceAccount the pods run as, in the
	// Robot's namespace (a pod can only use a ServiceAccount of its own
	// namespace). Unset, the namespace's "default". Its token is mounted
	// only when automountServiceAccountToken is true.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="serviceAccountName must be the name of a ServiceAccount: lower-case letters, digits, '-' and '.'"
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// AutomountServiceAccountToken says whether the pods get a token of
	// their ServiceAccount, to talk to the Kubernetes API. Unset or false,
	// they get none, whatever the ServiceAccount says: a Robot that does
	// not call the API server carries no credential.
	// +optional
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken,omitempty"`

	// SecurityProfile is the security context of the pods. "baseline" (the
	// default): seccomp RuntimeDefault and no privilege escalation.
	// "restricted": also runAsNonRoot and every capability dropped, as Pod
	// Security "restricted" requires; the image must run as a non-root
	// user.
	// +optional
	// +kubebuilder:validation:Enum=baseline;restricted
	SecurityProfile SecurityProfile `json:"securityProfile,omitempty"`
}

// RobotService is the Service that the operator keeps for a Robot with a
// port.
type RobotService struct {
	// Type is the Service's type: ClusterIP (the default) for a virtual IP
	// inside the cluster, NodePort to open the port on every node as well,
	// LoadBalancer to ask the cloud for a load balancer too, or None for no
	// Service at all.
	// +optional
	// +kubebuilder:default=ClusterIP
	Type ServiceType `json:"type,omitempty"`
}

// ServiceType is the type of a Robot's Service, or None for no Service.
// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer;None
type ServiceType string

// The types of a Robot's Service.
const (
	// ServiceTypeClusterIP: a Service of type ClusterIP, the default.
	ServiceTypeClusterIP ServiceType = "ClusterIP"
	// ServiceTypeNodePort: a Service of type NodePort.
	ServiceTypeNodePort ServiceType = "NodePort"
	// ServiceTypeLoadBalancer: a Service of type LoadBalancer.
	ServiceTypeLoadBalancer ServiceType = "LoadBalancer"
	// ServiceTypeNone: no Service, even with a port.
	ServiceTypeNone ServiceType = "None"
)

// RobotVolume is a volume of the Robot's pods. Exactly one source is set.
// +kubebuilder:validation:XValidation:rule="[has(self.configMap), has(self.secret), has(self.emptyDir), has(self.projected)].filter(x, x).size() == 1",message="a volume must have exactly one of configMap, secret, emptyDir or projected: hostPath and other volume kinds are not allowed"
type RobotVolume struct {
	// Name is the volume's name, which volumeMounts refer to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="a volume's name must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit"
	Name string `json:"name"`

	// ConfigMap mounts the keys of a ConfigMap as files.
	// +optional
	ConfigMap *corev1.ConfigMapVolumeSource `json:"configMap,omitempty"`

	// Secret mounts the keys of a Secret as files.
	// +optional
	Secret *corev1.SecretVolumeSource `json:"secret,omitempty"`

	// EmptyDir is an empty directory that lives as long as the pod.
	// +optional
	EmptyDir *corev1.EmptyDirVolumeSource `json:"emptyDir,omitempty"`

	// Projected mounts several ConfigMaps, Secrets, downward API fields or
	// a ServiceAccount token into one directory.
	// +optional
	Projected *corev1.ProjectedVolumeSource `json:"projected,omitempty"`
}

// SecurityProfile is a security context for a Robot's pods.
type SecurityProfile string

// Security profiles of a Robot.
const (
	// SecurityProfileBaseline: seccomp RuntimeDefault for the pod and no
	// privilege escalation for the container, which Pod Security
	// "baseline" admits.
	SecurityProfileBaseline SecurityProfile = "baseline"
	// SecurityProfileRestricted: baseline, plus runAsNonRoot and every
	// capability dropped, which Pod Security "restricted" admits.
	SecurityProfileRestricted SecurityProfile = "restricted"
)

// RobotStatus is the observed state of a Robot.
type RobotStatus struct {
	// ObservedGeneration is the .metadata.generation that this status
	// describes. A status with an older generation is stale.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// DeploymentName is the name of the Deployment that runs this Robot.
	// +optional
	DeploymentName string `json:"deploymentName,omitempty"`

	// ServiceName is the name of the Service that reaches the Robot's pods
	// on its port; empty when the Robot has no Service, or its Service is
	// not the operator's to keep.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// Address is where the Robot is reached, as v1beta1 says it. v1alpha1
	// shows it too, as v1beta1's type: the operator writes the status
	// through v1beta1 alone, but a write of a Robot through v1alpha1 carries
	// the status it read, which must not lose the address on its way back
	// to v1beta1 (the conversion round trip holds for the status too).
	// +optional
	Address *v1beta1.RobotAddress `json:"address,omitempty"`

	// Replicas is the number of pods of the Deployment, of any version.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// UpdatedReplicas is the number of pods that run the Robot's current
	// spec.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// ReadyReplicas is the number of pods that are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// AvailableReplicas is the number of pods that have been ready for at
	// least the Deployment's minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// Selector is the label selector of the Robot's pods, in string form
	// (for example "robot.dev/name=my-robot"). The scale subresource reports
	// it, so a HorizontalPodAutoscaler and `kubectl get pods -l` can find the
	// pods.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Conditions are the latest observations of the Robot's state. Ready
	// says whether the Deployment runs the Robot's current spec with every
	// replica available; Available and Progressing mirror the Deployment's
	// own conditions once the Deployment controller has observed its latest
	// spec; Synced says whether the operator's last sync succeeded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastReadyRevision is the revision of the Robot's history that was
	// Ready last, as v1beta1 says it, and as v1beta1's type, so that a
	// write through v1alpha1 keeps it (as Address).
	// +optional
	LastReadyRevision *v1beta1.RobotReadyRevision `json:"lastReadyRevision,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// RobotList is a list of Robots.
type RobotList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Robots.
	Items []Robot `json:"items"`
}

// Condition types of a Robot.
const (
	// ConditionReady is True when the Deployment runs the Robot's current
	// spec with every desired replica available. Its reason says why not.
	ConditionReady = "Ready"
	// ConditionAvailable mirrors the Deployment's Available condition.
	ConditionAvailable = "Available"
	// ConditionProgressing mirrors the Deployment's Progressing condition.
	ConditionProgressing = "Progressing"
	// ConditionSynced is True when the operator's last sync of the Robot
	// succeeded: the Deployment holds what the Robot asks for. When it is
	// False, its reason says why, and the operator retries unless the
	// reason says a change to the Robot or to something else is needed.
	// Ready stays about the workload: a failed request does not make a
	// running Robot not Ready.
	ConditionSynced = "Synced"
)

// Reasons of a Robot's conditions. The operator also uses them as the reasons
// of the events it records.
const (
	// ReasonRolloutComplete: every desired replica runs the current spec and
	// is available.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonRolloutInProgress: the Deployment is being created, updated or
	// scaled, or its pods are not available yet.
	ReasonRolloutInProgress = "RolloutInProgress"
	// ReasonDeploymentNameTaken: a Deployment with the Robot's deployment name
	// exists and is not controlled by the Robot. The operator leaves it alone.
	ReasonDeploymentNameTaken = "DeploymentNameTaken"
	// ReasonServiceNameTaken: a Service with the Robot's deployment name
	// exists and is not controlled by the Robot. The operator leaves it
	// alone; the Deployment is kept all the same.
	ReasonServiceNameTaken = "ServiceNameTaken"
	// ReasonServiceTypeNotAllowed: the Robot asks for a Service of a type
	// that the operator was told not to create (its -service-types flag).
	// The Deployment is kept; the Service is not created or changed.
	ReasonServiceTypeNotAllowed = "ServiceTypeNotAllowed"
	// ReasonLoadBalancerClassImmutable: the Robot (through v1beta1, where
	// the field is) asks for another loadBalancerClass than its Service
	// has, which a Service cannot change once set. The operator leaves the
	// Service as it is; deleting the Service makes it create the Service
	// again with the new class.
	ReasonLoadBalancerClassImmutable = "LoadBalancerClassImmutable"
	// ReasonProgressDeadlineExceeded: the rollout made no progress within the
	// Deployment's progress deadline.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonInvalidSpec: the spec cannot be turned into a Deployment, for
	// example a Robot stored before its validation rules existed.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonSyncFailed: the operator could not read or write the Deployment;
	// it retries with backoff.
	ReasonSyncFailed = "SyncFailed"
	// ReasonSynced: the operator's last sync succeeded.
	ReasonSynced = "Synced"
	// ReasonWaitingForGarbageCollection: a Deployment of an earlier Robot of
	// the same name, deleted, has the Robot's deployment name until the
	// garbage collector deletes it.
	ReasonWaitingForGarbageCollection = "WaitingForGarbageCollection"
	// ReasonFieldConflict: the Deployment cannot take the Robot's spec
	// because of fields another writer set on it (privileged: true next to
	// the operator's allowPrivilegeEscalation: false, say). The message
	// names the field and the writer; the operator retries with backoff.
	ReasonFieldConflict = "FieldConflict"
	// ReasonDeploymentContested: another writer keeps changing what the
	// Robot sets on its Deployment. The operator keeps putting it back, but
	// waits longer each time; the message names the writer's field manager.
	ReasonDeploymentContested = "DeploymentContested"
	// ReasonPaused: the Robot carries the annotation robot.dev/paused:
	// "true", and the operator writes nothing to its Deployment or its
	// Service until it is removed. The status still reports the
	// Deployment as it is.
	ReasonPaused = "Paused"
	// ReasonDeploymentNotObserved: the Deployment controller has not yet
	// observed the Deployment's latest spec, so its conditions are not
	// trusted.
	ReasonDeploymentNotObserved = "DeploymentNotObserved"
)

// Reasons of the Ready condition when the Robot's pods do not run, and why.
// Each is read from a hard signal of the kubelet, the scheduler or the
// ReplicaSet controller, never from a pod that is merely slow, and takes the
// place of RolloutInProgress or ProgressDeadlineExceeded while it lasts.
const (
	// ReasonImagePullFailed: the kubelet cannot pull the container's image
	// (ErrImagePull, ImagePullBackOff, InvalidImageName). The message names
	// the image and repeats the kubelet's.
	ReasonImagePullFailed = "ImagePullFailed"
	// ReasonCrashLoop: the container keeps exiting (CrashLoopBackOff). The
	// message gives its last exit code and reason.
	ReasonCrashLoop = "CrashLoop"
	// ReasonUnschedulable: the scheduler finds no node for a pod. The
	// message is the scheduler's.
	ReasonUnschedulable = "Unschedulable"
	// ReasonConfigMissing: the kubelet cannot build the container's
	// configuration (CreateContainerConfigError), usually because a
	// ConfigMap or Secret it refers to is missing. The message is the
	// kubelet's.
	ReasonConfigMissing = "ConfigMissing"
	// ReasonReadinessProbeFailing: the container has been running for a
	// while and is still not ready.
	ReasonReadinessProbeFailing = "ReadinessProbeFailing"
	// ReasonQuotaExceeded: the namespace's ResourceQuota refuses the pods
	// (the Deployment's ReplicaFailure condition says so).
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonPodSecurityRejected: the namespace's Pod Security level refuses
	// the pods (the Deployment's ReplicaFailure condition says so).
	ReasonPodSecurityRejected = "PodSecurityRejected"
	// ReasonReplicaFailure: the pods cannot be created for another reason
	// that the Deployment's ReplicaFailure condition gives.
	ReasonReplicaFailure = "ReplicaFailure"
)
