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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +genclient
// +kubebuilder:storageversion
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:path=robots,singular=robot,shortName=rb,categories=all,scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`,description="Replicas the Robot asks for"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`,description="Pods that are ready"
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`,description="Pods that have been ready for at least minReadySeconds"
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the Robot is or is not Ready"
// +kubebuilder:printcolumn:name="Synced",type=string,JSONPath=`.status.conditions[?(@.type=="Synced")].status`,description="Whether the operator's last sync of the Robot succeeded; its reason says why not"
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.status.address.url`,description="The best single way in: the route's URL, the load balancer's, or the Service's in-cluster one"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Sync-Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Synced")].reason`,description="Why the operator's last sync of the Robot did or did not succeed",priority=1
// +kubebuilder:printcolumn:name="Up-to-date",type=integer,JSONPath=`.status.updatedReplicas`,description="Pods that run the Robot's current spec",priority=1
// +kubebuilder:printcolumn:name="Service",type=string,JSONPath=`.status.serviceName`,description="The Service that reaches the Robot's pods on its ports, when it has one",priority=1
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`,description="Container image",priority=1
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="the Robot's name must be at most 63 characters: it is used as a label value on the Deployment and its pods",fieldPath=".metadata"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.ports) || size(self.spec.ports) == 0 || (has(self.spec.service) && has(self.spec.service.type) && self.spec.service.type == 'None') || (has(self.spec.deploymentName) ? self.spec.deploymentName : self.metadata.name).matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="a Robot with ports gets a Service named as its Deployment (spec.deploymentName, or else the Robot's name), and a Service's name must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter, no dots; set spec.deploymentName to such a name, or spec.service.type to None",fieldPath=".metadata"

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
	// It defaults to observedGeneration 0, so that a Robot the operator has
	// not looked at yet reads as not observed (kstatus: InProgress) rather
	// than as a status with nothing to say.
	// +optional
	// +kubebuilder:default={observedGeneration: 0}
	Status RobotStatus `json:"status,omitempty"`
}

// RobotSpec is the desired state of a Robot.
// +kubebuilder:validation:XValidation:rule="!has(self.service) || (has(self.service.type) && self.service.type == 'None') || (has(self.ports) && size(self.ports) > 0)",message="a Service needs ports: set spec.ports, or remove spec.service",fieldPath=".service"
// +kubebuilder:validation:XValidation:rule="!has(self.http) || (has(self.ports) && size(self.ports) > 0 && (!has(self.service) || !has(self.service.type) || self.service.type != 'None'))",message="http routes requests to the Robot's Service: set ports, and a service type other than None"
// +kubebuilder:validation:XValidation:rule="!has(self.http) || !has(self.http.port) || (has(self.ports) && self.ports.exists(p, p.name == self.http.port))",message="http.port must name one of spec.ports"
// +kubebuilder:validation:XValidation:rule="!has(self.volumeMounts) || self.volumeMounts.all(m, has(self.volumes) && self.volumes.exists(v, v.name == m.name))",message="every volumeMounts entry must name a volume of spec.volumes",fieldPath=".volumeMounts"
// +kubebuilder:validation:XValidation:rule="has(self.deploymentName) == has(oldSelf.deploymentName) && (!has(self.deploymentName) || self.deploymentName == oldSelf.deploymentName)",message="deploymentName is immutable: it cannot be set, changed or removed after the Robot is created",fieldPath=".deploymentName"
// +kubebuilder:validation:XValidation:rule="!has(self.sidecars) || !has(self.initContainers) || self.sidecars.all(s, !self.initContainers.exists(c, c.name == s.name))",message="a sidecar and an init container cannot have the same name: every container of a pod needs a name of its own",fieldPath=".sidecars"
// +kubebuilder:validation:XValidation:rule="!has(self.initContainers) || self.initContainers.all(c, !has(c.volumeMounts) || c.volumeMounts.all(m, has(self.volumes) && self.volumes.exists(v, v.name == m.name)))",message="every volumeMounts entry of an init container must name a volume of spec.volumes",fieldPath=".initContainers"
// +kubebuilder:validation:XValidation:rule="!has(self.sidecars) || self.sidecars.all(c, !has(c.volumeMounts) || c.volumeMounts.all(m, has(self.volumes) && self.volumes.exists(v, v.name == m.name)))",message="every volumeMounts entry of a sidecar must name a volume of spec.volumes",fieldPath=".sidecars"
// +kubebuilder:validation:XValidation:rule="!has(self.sidecars) || self.sidecars.all(s, !has(s.ports) || s.ports.all(p, !(has(self.ports) && self.ports.exists(q, q.name == p.name)) && self.sidecars.exists_one(o, has(o.ports) && o.ports.exists(q, q.name == p.name))))",message="a sidecar's port cannot have the name of another port of the pod (of spec.ports or of another sidecar): a Service or a probe finds a port by its name",fieldPath=".sidecars"
// +kubebuilder:validation:XValidation:rule="!has(self.ports) || self.ports.all(p, !has(p.nodePort)) || (has(self.service) && has(self.service.type) && self.service.type in ['NodePort', 'LoadBalancer'])",message="a port's nodePort can be set only when service.type is NodePort or LoadBalancer: a Service of another type opens no port on the nodes",fieldPath=".ports"
// +kubebuilder:validation:XValidation:rule="!has(self.preStop) || !has(self.preStop.sleep) || self.preStop.sleep.seconds < (has(self.terminationGracePeriodSeconds) ? self.terminationGracePeriodSeconds : 30)",message="preStop.sleep.seconds must be below terminationGracePeriodSeconds (30 when unset), so that the container has time to stop after the sleep",fieldPath=".preStop"
// +kubebuilder:validation:XValidation:rule="!has(self.readinessProbe) || !has(self.readinessProbe.httpGet) || type(self.readinessProbe.httpGet.port) == int || (has(self.ports) && self.ports.exists(p, p.name == self.readinessProbe.httpGet.port))",message="readinessProbe.httpGet.port must be a port number or the name of one of spec.ports: a probe finds a port by its name on its own container",fieldPath=".readinessProbe.httpGet.port"
// +kubebuilder:validation:XValidation:rule="!has(self.readinessProbe) || !has(self.readinessProbe.tcpSocket) || type(self.readinessProbe.tcpSocket.port) == int || (has(self.ports) && self.ports.exists(p, p.name == self.readinessProbe.tcpSocket.port))",message="readinessProbe.tcpSocket.port must be a port number or the name of one of spec.ports: a probe finds a port by its name on its own container",fieldPath=".readinessProbe.tcpSocket.port"
// +kubebuilder:validation:XValidation:rule="!has(self.livenessProbe) || !has(self.livenessProbe.httpGet) || type(self.livenessProbe.httpGet.port) == int || (has(self.ports) && self.ports.exists(p, p.name == self.livenessProbe.httpGet.port))",message="livenessProbe.httpGet.port must be a port number or the name of one of spec.ports: a probe finds a port by its name on its own container",fieldPath=".livenessProbe.httpGet.port"
// +kubebuilder:validation:XValidation:rule="!has(self.livenessProbe) || !has(self.livenessProbe.tcpSocket) || type(self.livenessProbe.tcpSocket.port) == int || (has(self.ports) && self.ports.exists(p, p.name == self.livenessProbe.tcpSocket.port))",message="livenessProbe.tcpSocket.port must be a port number or the name of one of spec.ports: a probe finds a port by its name on its own container",fieldPath=".livenessProbe.tcpSocket.port"
// +kubebuilder:validation:XValidation:rule="!has(self.startupProbe) || !has(self.startupProbe.httpGet) || type(self.startupProbe.httpGet.port) == int || (has(self.ports) && self.ports.exists(p, p.name == self.startupProbe.httpGet.port))",message="startupProbe.httpGet.port must be a port number or the name of one of spec.ports: a probe finds a port by its name on its own container",fieldPath=".startupProbe.httpGet.port"
// +kubebuilder:validation:XValidation:rule="!has(self.startupProbe) || !has(self.startupProbe.tcpSocket) || type(self.startupProbe.tcpSocket.port) == int || (has(self.ports) && self.ports.exists(p, p.name == self.startupProbe.tcpSocket.port))",message="startupProbe.tcpSocket.port must be a port number or the name of one of spec.ports: a probe finds a port by its name on its own container",fieldPath=".startupProbe.tcpSocket.port"
type RobotSpec struct {
	// Image is the container image to run, as a reference a container
	// runtime accepts, for example "ghcr.io/acme/robot:1.4.2".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.matches('[[:space:]]')",message="image must be an image reference without spaces, such as registry.example.com/team/robot:1.4"
	// +kubebuilder:validation:XValidation:rule=`size(self) == 0 || self.matches('[[:space:]]') || self.matches(r'^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][-a-zA-Z0-9]*[a-zA-Z0-9])(?:[.](?:[a-zA-Z0-9]|[a-zA-Z0-9][-a-zA-Z0-9]*[a-zA-Z0-9]))*(?::[0-9]+)?/|\[[a-fA-F0-9:]+\](?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[a-zA-Z0-9_][-a-zA-Z0-9_.]{0,127})?(?:@sha256:[a-f0-9]{64}|@sha384:[a-f0-9]{96}|@sha512:[a-f0-9]{128})?$')`,messageExpression=`'image must be an image reference such as nginx:1.27 or registry.example.com/team/app@sha256:…; "' + self + '" ' + (self.matches(r'^[^@]*:[^/@]*:[^/@]*(@.*)?$') ? 'has two tags' : self.matches(r':(@|$)') ? 'has a ":" with no tag after it' : self.contains('@') ? 'has a digest that is not sha256:, sha384: or sha512: followed by 64, 96 or 128 lower-case hex digits' : self.matches('[A-Z]') ? 'has upper-case letters: a repository name is lower-case' : 'is not one')`
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

	// Ports are the ports the container listens on, each declared on the
	// container under its name. The first TCP one is the port of the
	// default readiness probe.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="size(self) > 16 || self.all(p, self.exists_one(q, q.containerPort == p.containerPort && q.protocol == p.protocol))",message="two ports cannot have the same containerPort and protocol"
	// +kubebuilder:validation:XValidation:rule="size(self) > 16 || self.all(p, self.exists_one(q, (has(q.servicePort) ? q.servicePort : q.containerPort) == (has(p.servicePort) ? p.servicePort : p.containerPort) && q.protocol == p.protocol))",message="two ports cannot have the same Service port and protocol: a port's Service port is its servicePort, or its containerPort when it has none"
	// +kubebuilder:validation:XValidation:rule="size(self) > 16 || self.all(p, !has(p.nodePort) || self.exists_one(q, has(q.nodePort) && q.nodePort == p.nodePort && q.protocol == p.protocol))",message="two ports cannot have the same nodePort and protocol"
	Ports []RobotPort `json:"ports,omitempty"`

	// Service is how the Robot is reached. When ports are set, the operator
	// keeps a Service named like the Deployment that selects the Robot's
	// pods and exposes every port under its name, unless service.type is
	// None. Without ports there is no Service.
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
	DisruptionBudget *RobotDisruptionBudget `json:"disruptionBudget,omitempty"`

	// HTTP exposes the Robot over HTTP through the Gateway API: the
	// operator keeps an HTTPRoute, named like the Deployment, that attaches
	// to the Gateways listed and sends the requests for the hostnames and
	// path prefixes listed to the Robot's Service. It needs the Gateway
	// API's CRDs in the cluster, and a Service (ports, and a service type
	// other than None). The Robot is Ready only once every Gateway has
	// accepted the route.
	// +optional
	HTTP *RobotHTTP `json:"http,omitempty"`

	// Strategy is how the Deployment replaces old pods with new ones.
	// Unset, a rolling update with 25% surge and 25% unavailable, as for
	// any Deployment.
	// +optional
	Strategy *RobotStrategy `json:"strategy,omitempty"`

	// MinReadySeconds is how long a new pod must be ready, with none of its
	// containers crashing, before it counts as available. A rollout moves
	// on only over available pods, so this slows it to catch a bad release
	// early. It must stay below the Deployment's progress deadline, 600
	// seconds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=599
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

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
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.valueFrom) || ((!has(e.value) || size(e.value) == 0) && [has(e.valueFrom.fieldRef), has(e.valueFrom.resourceFieldRef), has(e.valueFrom.configMapKeyRef), has(e.valueFrom.secretKeyRef), has(e.valueFrom.fileKeyRef)].filter(x, x).size() == 1))",message="an env variable has a value or a valueFrom, not both, and a valueFrom has exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef or fileKeyRef"
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Resources are the compute resources the container requests and is
	// limited to.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.requests) || !('cpu' in self.limits) || !('cpu' in self.requests) || (type(self.limits['cpu']) == int && type(self.requests['cpu']) == int ? self.limits['cpu'] >= self.requests['cpu'] : type(self.limits['cpu']) != string || type(self.requests['cpu']) != string || !isQuantity(self.limits['cpu']) || !isQuantity(self.requests['cpu']) || quantity(self.limits['cpu']).compareTo(quantity(self.requests['cpu'])) >= 0)",messageExpression="'resources.limits.cpu (' + string(self.limits['cpu']) + ') must be at least resources.requests.cpu (' + string(self.requests['cpu']) + ')'"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.requests) || !('memory' in self.limits) || !('memory' in self.requests) || (type(self.limits['memory']) == int && type(self.requests['memory']) == int ? self.limits['memory'] >= self.requests['memory'] : type(self.limits['memory']) != string || type(self.requests['memory']) != string || !isQuantity(self.limits['memory']) || !isQuantity(self.requests['memory']) || quantity(self.limits['memory']).compareTo(quantity(self.requests['memory'])) >= 0)",messageExpression="'resources.limits.memory (' + string(self.limits['memory']) + ') must be at least resources.requests.memory (' + string(self.requests['memory']) + ')'"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.requests) || !('ephemeral-storage' in self.limits) || !('ephemeral-storage' in self.requests) || (type(self.limits['ephemeral-storage']) == int && type(self.requests['ephemeral-storage']) == int ? self.limits['ephemeral-storage'] >= self.requests['ephemeral-storage'] : type(self.limits['ephemeral-storage']) != string || type(self.requests['ephemeral-storage']) != string || !isQuantity(self.limits['ephemeral-storage']) || !isQuantity(self.requests['ephemeral-storage']) || quantity(self.limits['ephemeral-storage']).compareTo(quantity(self.requests['ephemeral-storage'])) >= 0)",messageExpression="'resources.limits.ephemeral-storage (' + string(self.limits['ephemeral-storage']) + ') must be at least resources.requests.ephemeral-storage (' + string(self.requests['ephemeral-storage']) + ')'"
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
	// +kubebuilder:validation:XValidation:rule="self.all(e, has(e.configMapRef) != has(e.secretRef))",message="every envFrom entry has exactly one of configMapRef or secretRef"
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// ReadinessProbe tells when a pod may receive traffic; the Robot is
	// Ready once every replica passes it. Unset, a Robot with a TCP port
	// gets a TCP probe on the first (tcpSocket: {port: NAME}), so that
	// Ready means the port answers; a Robot without one is ready as soon
	// as its container starts.
	// +optional
	// +kubebuilder:validation:XValidation:rule="[has(self.httpGet), has(self.tcpSocket), has(self.grpc), has(self.exec)].filter(x, x).size() == 1",message="readinessProbe must have exactly one of httpGet, tcpSocket, grpc or exec: how the kubelet checks the container"
	// +kubebuilder:validation:XValidation:rule="(!has(self.httpGet) || type(self.httpGet.port) != int || (self.httpGet.port >= 1 && self.httpGet.port <= 65535)) && (!has(self.tcpSocket) || type(self.tcpSocket.port) != int || (self.tcpSocket.port >= 1 && self.tcpSocket.port <= 65535)) && (!has(self.grpc) || (self.grpc.port >= 1 && self.grpc.port <= 65535))",message="readinessProbe's port must be a number from 1 to 65535, or the name of a port"
	// +kubebuilder:validation:XValidation:rule="!has(self.exec) || (has(self.exec.command) && size(self.exec.command) > 0)",message="readinessProbe.exec.command must name the command to run",fieldPath=".exec"
	// +kubebuilder:validation:XValidation:rule="[has(self.initialDelaySeconds) ? self.initialDelaySeconds : 0, has(self.timeoutSeconds) ? self.timeoutSeconds : 0, has(self.periodSeconds) ? self.periodSeconds : 0, has(self.successThreshold) ? self.successThreshold : 0, has(self.failureThreshold) ? self.failureThreshold : 0].all(n, n >= 0) && (!has(self.terminationGracePeriodSeconds) || self.terminationGracePeriodSeconds > 0)",message="readinessProbe's initialDelaySeconds, timeoutSeconds, periodSeconds, successThreshold and failureThreshold cannot be negative, and its terminationGracePeriodSeconds must be above 0"
	// +kubebuilder:validation:XValidation:rule="!has(self.terminationGracePeriodSeconds)",message="readinessProbe.terminationGracePeriodSeconds cannot be set: a failing readiness probe does not stop the container",fieldPath=".terminationGracePeriodSeconds"
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`

	// LivenessProbe tells when the container must be restarted.
	// +optional
	// +kubebuilder:validation:XValidation:rule="[has(self.httpGet), has(self.tcpSocket), has(self.grpc), has(self.exec)].filter(x, x).size() == 1",message="livenessProbe must have exactly one of httpGet, tcpSocket, grpc or exec: how the kubelet checks the container"
	// +kubebuilder:validation:XValidation:rule="(!has(self.httpGet) || type(self.httpGet.port) != int || (self.httpGet.port >= 1 && self.httpGet.port <= 65535)) && (!has(self.tcpSocket) || type(self.tcpSocket.port) != int || (self.tcpSocket.port >= 1 && self.tcpSocket.port <= 65535)) && (!has(self.grpc) || (self.grpc.port >= 1 && self.grpc.port <= 65535))",message="livenessProbe's port must be a number from 1 to 65535, or the name of a port"
	// +kubebuilder:validation:XValidation:rule="!has(self.exec) || (has(self.exec.command) && size(self.exec.command) > 0)",message="livenessProbe.exec.command must name the command to run",fieldPath=".exec"
	// +kubebuilder:validation:XValidation:rule="[has(self.initialDelaySeconds) ? self.initialDelaySeconds : 0, has(self.timeoutSeconds) ? self.timeoutSeconds : 0, has(self.periodSeconds) ? self.periodSeconds : 0, has(self.successThreshold) ? self.successThreshold : 0, has(self.failureThreshold) ? self.failureThreshold : 0].all(n, n >= 0) && (!has(self.terminationGracePeriodSeconds) || self.terminationGracePeriodSeconds > 0)",message="livenessProbe's initialDelaySeconds, timeoutSeconds, periodSeconds, successThreshold and failureThreshold cannot be negative, and its terminationGracePeriodSeconds must be above 0"
	// +kubebuilder:validation:XValidation:rule="!has(self.successThreshold) || self.successThreshold == 1",message="livenessProbe.successThreshold must be 1: the kubelet counts only failures of a liveness probe",fieldPath=".successThreshold"
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`

	// StartupProbe holds the other probes back until the container has
	// started, for slow starters.
	// +optional
	// +kubebuilder:validation:XValidation:rule="[has(self.httpGet), has(self.tcpSocket), has(self.grpc), has(self.exec)].filter(x, x).size() == 1",message="startupProbe must have exactly one of httpGet, tcpSocket, grpc or exec: how the kubelet checks the container"
	// +kubebuilder:validation:XValidation:rule="(!has(self.httpGet) || type(self.httpGet.port) != int || (self.httpGet.port >= 1 && self.httpGet.port <= 65535)) && (!has(self.tcpSocket) || type(self.tcpSocket.port) != int || (self.tcpSocket.port >= 1 && self.tcpSocket.port <= 65535)) && (!has(self.grpc) || (self.grpc.port >= 1 && self.grpc.port <= 65535))",message="startupProbe's port must be a number from 1 to 65535, or the name of a port"
	// +kubebuilder:validation:XValidation:rule="!has(self.exec) || (has(self.exec.command) && size(self.exec.command) > 0)",message="startupProbe.exec.command must name the command to run",fieldPath=".exec"
	// +kubebuilder:validation:XValidation:rule="[has(self.initialDelaySeconds) ? self.initialDelaySeconds : 0, has(self.timeoutSeconds) ? self.timeoutSeconds : 0, has(self.periodSeconds) ? self.periodSeconds : 0, has(self.successThreshold) ? self.successThreshold : 0, has(self.failureThreshold) ? self.failureThreshold : 0].all(n, n >= 0) && (!has(self.terminationGracePeriodSeconds) || self.terminationGracePeriodSeconds > 0)",message="startupProbe's initialDelaySeconds, timeoutSeconds, periodSeconds, successThreshold and failureThreshold cannot be negative, and its terminationGracePeriodSeconds must be above 0"
	// +kubebuilder:validation:XValidation:rule="!has(self.successThreshold) || self.successThreshold == 1",message="startupProbe.successThreshold must be 1: the kubelet counts only failures of a startup probe",fieldPath=".successThreshold"
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

	// Placement is where the pods may run: the nodes, taints, affinities,
	// spread and priority that the scheduler weighs.
	// +optional
	Placement RobotPlacement `json:"placement,omitempty"`

	// PodLabels are added to the labels of the pods, for example to opt in
	// to sidecar injection. They cannot set the labels the operator puts on
	// the pods: robot.dev/name (the Deployment's selector) and
	// app.kubernetes.io/managed-by, name and instance.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['robot.dev/name', 'app.kubernetes.io/managed-by', 'app.kubernetes.io/name', 'app.kubernetes.io/instance']))",message="podLabels cannot set robot.dev/name, app.kubernetes.io/managed-by, app.kubernetes.io/name or app.kubernetes.io/instance: the operator sets them, and robot.dev/name selects the Robot's pods"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="every podLabels key must be a label key: an optional DNS subdomain prefix (such as example.com) and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.labelValue().validate(self[k]).hasValue())",message="every podLabels value must be a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or empty"
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// PodAnnotations are added to the annotations of the pods, for example
	// to have them scraped for metrics.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k.lowerAscii()).hasValue())",message="every podAnnotations key must be an annotation key: an optional DNS subdomain prefix (such as example.com) and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit"
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

	// InitContainers run one after another, in order, before the Robot's
	// container starts, each to completion: a schema migration, a file
	// fetched into a shared emptyDir. They start after the sidecars, so
	// that a step which needs the network through a proxy sidecar has it.
	// A failing one is run again, with the kubelet's back-off, and the pod
	// does not start until it succeeds.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=4
	InitContainers []RobotContainer `json:"initContainers,omitempty"`

	// Sidecars run beside the Robot's container for the whole life of the
	// pod: a log shipper, a proxy. They are Kubernetes' native sidecars,
	// init containers with restartPolicy Always: each starts, in order,
	// before the init containers and the Robot's container, and stops
	// after the Robot's container. A pod is ready only when its sidecars
	// are ready too.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=4
	Sidecars []RobotSidecar `json:"sidecars,omitempty"`

	// TerminationGracePeriodSeconds is how long a pod has to stop: the
	// preStop hook, then the SIGTERM to the containers, and after that the
	// kubelet kills what still runs. Unset, Kubernetes' 30 seconds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`

	// PreStop runs in the Robot's container when its pod is told to stop,
	// before the container gets SIGTERM: a sleep long enough for the
	// endpoints to drop the pod, so that no request arrives at a container
	// that stopped listening; or a command that drains it. It counts
	// against terminationGracePeriodSeconds. Unset, none.
	// +optional
	PreStop *RobotPreStop `json:"preStop,omitempty"`

	// RollOnConfigChange, when true, rolls the Robot's pods whenever a
	// ConfigMap or Secret they read changes: one of its volumes (projected
	// ones too), env valueFrom or envFrom, in any of its containers. The
	// operator puts a digest of those objects' identity and version in the
	// pod template's annotation robot.dev/config-digest, so a change of
	// one of them (or its creation, or its deletion) is a new template,
	// rolled as the Robot's strategy says. It watches only their metadata,
	// never their data. Secrets count only when the operator may watch
	// them, which its RBAC grants only when asked (configRollouts.secrets
	// in the chart): otherwise Synced says ConfigNotWatched, and the
	// ConfigMaps still roll the pods. Unset or false, nothing rolls for
	// them.
	// +optional
	RollOnConfigChange *bool `json:"rollOnConfigChange,omitempty"`
}

// RobotContainer is an init container of a Robot's pods, and what a sidecar
// has in common with one. Its security context is the Robot container's:
// securityProfile covers every container of the pod.
type RobotContainer struct {
	// Name names the container in the pod: a DNS-1123 label, unique among
	// the pod's containers, and not "robot", the Robot's own container.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="a container's name must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self != 'robot'",message="a container cannot be named robot: that is the name of the Robot's own container"
	Name string `json:"name"`

	// Image is the container image to run.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.matches('[[:space:]]')",message="image must be an image reference without spaces, such as registry.example.com/team/robot:1.4"
	// +kubebuilder:validation:XValidation:rule=`size(self) == 0 || self.matches('[[:space:]]') || self.matches(r'^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][-a-zA-Z0-9]*[a-zA-Z0-9])(?:[.](?:[a-zA-Z0-9]|[a-zA-Z0-9][-a-zA-Z0-9]*[a-zA-Z0-9]))*(?::[0-9]+)?/|\[[a-fA-F0-9:]+\](?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[a-zA-Z0-9_][-a-zA-Z0-9_.]{0,127})?(?:@sha256:[a-f0-9]{64}|@sha384:[a-f0-9]{96}|@sha512:[a-f0-9]{128})?$')`,messageExpression=`'image must be an image reference such as nginx:1.27 or registry.example.com/team/app@sha256:…; "' + self + '" ' + (self.matches(r'^[^@]*:[^/@]*:[^/@]*(@.*)?$') ? 'has two tags' : self.matches(r':(@|$)') ? 'has a ":" with no tag after it' : self.contains('@') ? 'has a digest that is not sha256:, sha384: or sha512: followed by 64, 96 or 128 lower-case hex digits' : self.matches('[A-Z]') ? 'has upper-case letters: a repository name is lower-case' : 'is not one')`
	Image string `json:"image"`

	// Command replaces the image's entrypoint. Args are passed to it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Command []string `json:"command,omitempty"`

	// Args are the arguments passed to the entrypoint.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Args []string `json:"args,omitempty"`

	// Env is the list of environment variables set in the container.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.valueFrom) || ((!has(e.value) || size(e.value) == 0) && [has(e.valueFrom.fieldRef), has(e.valueFrom.resourceFieldRef), has(e.valueFrom.configMapKeyRef), has(e.valueFrom.secretKeyRef), has(e.valueFrom.fileKeyRef)].filter(x, x).size() == 1))",message="an env variable has a value or a valueFrom, not both, and a valueFrom has exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef or fileKeyRef"
	Env []corev1.EnvVar `json:"env,omitempty"`

	// EnvFrom sets environment variables from every key of ConfigMaps and
	// Secrets of the Robot's namespace. Env wins over it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(e, has(e.configMapRef) != has(e.secretRef))",message="every envFrom entry has exactly one of configMapRef or secretRef"
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// Resources are the compute resources the container requests and is
	// limited to.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.requests) || !('cpu' in self.limits) || !('cpu' in self.requests) || (type(self.limits['cpu']) == int && type(self.requests['cpu']) == int ? self.limits['cpu'] >= self.requests['cpu'] : type(self.limits['cpu']) != string || type(self.requests['cpu']) != string || !isQuantity(self.limits['cpu']) || !isQuantity(self.requests['cpu']) || quantity(self.limits['cpu']).compareTo(quantity(self.requests['cpu'])) >= 0)",messageExpression="'resources.limits.cpu (' + string(self.limits['cpu']) + ') must be at least resources.requests.cpu (' + string(self.requests['cpu']) + ')'"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.requests) || !('memory' in self.limits) || !('memory' in self.requests) || (type(self.limits['memory']) == int && type(self.requests['memory']) == int ? self.limits['memory'] >= self.requests['memory'] : type(self.limits['memory']) != string || type(self.requests['memory']) != string || !isQuantity(self.limits['memory']) || !isQuantity(self.requests['memory']) || quantity(self.limits['memory']).compareTo(quantity(self.requests['memory'])) >= 0)",messageExpression="'resources.limits.memory (' + string(self.limits['memory']) + ') must be at least resources.requests.memory (' + string(self.requests['memory']) + ')'"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.requests) || !('ephemeral-storage' in self.limits) || !('ephemeral-storage' in self.requests) || (type(self.limits['ephemeral-storage']) == int && type(self.requests['ephemeral-storage']) == int ? self.limits['ephemeral-storage'] >= self.requests['ephemeral-storage'] : type(self.limits['ephemeral-storage']) != string || type(self.requests['ephemeral-storage']) != string || !isQuantity(self.limits['ephemeral-storage']) || !isQuantity(self.requests['ephemeral-storage']) || quantity(self.limits['ephemeral-storage']).compareTo(quantity(self.requests['ephemeral-storage'])) >= 0)",messageExpression="'resources.limits.ephemeral-storage (' + string(self.limits['ephemeral-storage']) + ') must be at least resources.requests.ephemeral-storage (' + string(self.requests['ephemeral-storage']) + ')'"
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// VolumeMounts mount the Robot's volumes into the container. Each names
	// a volume of spec.volumes.
	// +optional
	// +listType=map
	// +listMapKey=mountPath
	// +kubebuilder:validation:MaxItems=64
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
}

// RobotSidecar is a container that runs beside the Robot's for the whole
// life of the pod.
// +kubebuilder:validation:XValidation:rule="!has(self.readinessProbe) || !has(self.readinessProbe.httpGet) || type(self.readinessProbe.httpGet.port) == int || (has(self.ports) && self.ports.exists(p, p.name == self.readinessProbe.httpGet.port))",message="readinessProbe.httpGet.port must be a port number or the name of one of the sidecar's ports: a probe finds a port by its name on its own container",fieldPath=".readinessProbe.httpGet.port"
// +kubebuilder:validation:XValidation:rule="!has(self.readinessProbe) || !has(self.readinessProbe.tcpSocket) || type(self.readinessProbe.tcpSocket.port) == int || (has(self.ports) && self.ports.exists(p, p.name == self.readinessProbe.tcpSocket.port))",message="readinessProbe.tcpSocket.port must be a port number or the name of one of the sidecar's ports: a probe finds a port by its name on its own container",fieldPath=".readinessProbe.tcpSocket.port"
// +kubebuilder:validation:XValidation:rule="!has(self.livenessProbe) || !has(self.livenessProbe.httpGet) || type(self.livenessProbe.httpGet.port) == int || (has(self.ports) && self.ports.exists(p, p.name == self.livenessProbe.httpGet.port))",message="livenessProbe.httpGet.port must be a port number or the name of one of the sidecar's ports: a probe finds a port by its name on its own container",fieldPath=".livenessProbe.httpGet.port"
// +kubebuilder:validation:XValidation:rule="!has(self.livenessProbe) || !has(self.livenessProbe.tcpSocket) || type(self.livenessProbe.tcpSocket.port) == int || (has(self.ports) && self.ports.exists(p, p.name == self.livenessProbe.tcpSocket.port))",message="livenessProbe.tcpSocket.port must be a port number or the name of one of the sidecar's ports: a probe finds a port by its name on its own container",fieldPath=".livenessProbe.tcpSocket.port"
// +kubebuilder:validation:XValidation:rule="!has(self.startupProbe) || !has(self.startupProbe.httpGet) || type(self.startupProbe.httpGet.port) == int || (has(self.ports) && self.ports.exists(p, p.name == self.startupProbe.httpGet.port))",message="startupProbe.httpGet.port must be a port number or the name of one of the sidecar's ports: a probe finds a port by its name on its own container",fieldPath=".startupProbe.httpGet.port"
// +kubebuilder:validation:XValidation:rule="!has(self.startupProbe) || !has(self.startupProbe.tcpSocket) || type(self.startupProbe.tcpSocket.port) == int || (has(self.ports) && self.ports.exists(p, p.name == self.startupProbe.tcpSocket.port))",message="startupProbe.tcpSocket.port must be a port number or the name of one of the sidecar's ports: a probe finds a port by its name on its own container",fieldPath=".startupProbe.tcpSocket.port"
// +kubebuilder:validation:XValidation:rule="!has(self.ports) || self.ports.all(p, !has(p.servicePort) && !has(p.nodePort))",message="a sidecar's ports cannot set servicePort or nodePort: they are not on the Robot's Service, which exposes spec.ports",fieldPath=".ports"
type RobotSidecar struct {
	RobotContainer `json:",inline"`

	// Ports are the ports the sidecar listens on, declared on it by name,
	// for its probes and for whoever reaches the pod. They are not on the
	// Robot's Service, which exposes spec.ports, so they cannot set
	// servicePort or nodePort.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="size(self) > 16 || self.all(p, self.exists_one(q, q.containerPort == p.containerPort && q.protocol == p.protocol))",message="two ports cannot have the same containerPort and protocol"
	Ports []RobotPort `json:"ports,omitempty"`

	// ReadinessProbe tells when the sidecar is ready; the pod is ready
	// only when its sidecars are. Unset, the sidecar is ready once it has
	// started.
	// +optional
	// +kubebuilder:validation:XValidation:rule="[has(self.httpGet), has(self.tcpSocket), has(self.grpc), has(self.exec)].filter(x, x).size() == 1",message="readinessProbe must have exactly one of httpGet, tcpSocket, grpc or exec: how the kubelet checks the container"
	// +kubebuilder:validation:XValidation:rule="(!has(self.httpGet) || type(self.httpGet.port) != int || (self.httpGet.port >= 1 && self.httpGet.port <= 65535)) && (!has(self.tcpSocket) || type(self.tcpSocket.port) != int || (self.tcpSocket.port >= 1 && self.tcpSocket.port <= 65535)) && (!has(self.grpc) || (self.grpc.port >= 1 && self.grpc.port <= 65535))",message="readinessProbe's port must be a number from 1 to 65535, or the name of a port"
	// +kubebuilder:validation:XValidation:rule="!has(self.exec) || (has(self.exec.command) && size(self.exec.command) > 0)",message="readinessProbe.exec.command must name the command to run",fieldPath=".exec"
	// +kubebuilder:validation:XValidation:rule="[has(self.initialDelaySeconds) ? self.initialDelaySeconds : 0, has(self.timeoutSeconds) ? self.timeoutSeconds : 0, has(self.periodSeconds) ? self.periodSeconds : 0, has(self.successThreshold) ? self.successThreshold : 0, has(self.failureThreshold) ? self.failureThreshold : 0].all(n, n >= 0) && (!has(self.terminationGracePeriodSeconds) || self.terminationGracePeriodSeconds > 0)",message="readinessProbe's initialDelaySeconds, timeoutSeconds, periodSeconds, successThreshold and failureThreshold cannot be negative, and its terminationGracePeriodSeconds must be above 0"
	// +kubebuilder:validation:XValidation:rule="!has(self.terminationGracePeriodSeconds)",message="readinessProbe.terminationGracePeriodSeconds cannot be set: a failing readiness probe does not stop the container",fieldPath=".terminationGracePeriodSeconds"
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`

	// LivenessProbe tells when the sidecar must be restarted.
	// +optional
	// +kubebuilder:validation:XValidation:rule="[has(self.httpGet), has(self.tcpSocket), has(self.grpc), has(self.exec)].filter(x, x).size() == 1",message="livenessProbe must have exactly one of httpGet, tcpSocket, grpc or exec: how the kubelet checks the container"
	// +kubebuilder:validation:XValidation:rule="(!has(self.httpGet) || type(self.httpGet.port) != int || (self.httpGet.port >= 1 && self.httpGet.port <= 65535)) && (!has(self.tcpSocket) || type(self.tcpSocket.port) != int || (self.tcpSocket.port >= 1 && self.tcpSocket.port <= 65535)) && (!has(self.grpc) || (self.grpc.port >= 1 && self.grpc.port <= 65535))",message="livenessProbe's port must be a number from 1 to 65535, or the name of a port"
	// +kubebuilder:validation:XValidation:rule="!has(self.exec) || (has(self.exec.command) && size(self.exec.command) > 0)",message="livenessProbe.exec.command must name the command to run",fieldPath=".exec"
	// +kubebuilder:validation:XValidation:rule="[has(self.initialDelaySeconds) ? self.initialDelaySeconds : 0, has(self.timeoutSeconds) ? self.timeoutSeconds : 0, has(self.periodSeconds) ? self.periodSeconds : 0, has(self.successThreshold) ? self.successThreshold : 0, has(self.failureThreshold) ? self.failureThreshold : 0].all(n, n >= 0) && (!has(self.terminationGracePeriodSeconds) || self.terminationGracePeriodSeconds > 0)",message="livenessProbe's initialDelaySeconds, timeoutSeconds, periodSeconds, successThreshold and failureThreshold cannot be negative, and its terminationGracePeriodSeconds must be above 0"
	// +kubebuilder:validation:XValidation:rule="!has(self.successThreshold) || self.successThreshold == 1",message="livenessProbe.successThreshold must be 1: the kubelet counts only failures of a liveness probe",fieldPath=".successThreshold"
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`

	// StartupProbe tells when the sidecar has started: the containers
	// after it in the pod (the next sidecar, the init containers, the
	// Robot's) start only then.
	// +optional
	// +kubebuilder:validation:XValidation:rule="[has(self.httpGet), has(self.tcpSocket), has(self.grpc), has(self.exec)].filter(x, x).size() == 1",message="startupProbe must have exactly one of httpGet, tcpSocket, grpc or exec: how the kubelet checks the container"
	// +kubebuilder:validation:XValidation:rule="(!has(self.httpGet) || type(self.httpGet.port) != int || (self.httpGet.port >= 1 && self.httpGet.port <= 65535)) && (!has(self.tcpSocket) || type(self.tcpSocket.port) != int || (self.tcpSocket.port >= 1 && self.tcpSocket.port <= 65535)) && (!has(self.grpc) || (self.grpc.port >= 1 && self.grpc.port <= 65535))",message="startupProbe's port must be a number from 1 to 65535, or the name of a port"
	// +kubebuilder:validation:XValidation:rule="!has(self.exec) || (has(self.exec.command) && size(self.exec.command) > 0)",message="startupProbe.exec.command must name the command to run",fieldPath=".exec"
	// +kubebuilder:validation:XValidation:rule="[has(self.initialDelaySeconds) ? self.initialDelaySeconds : 0, has(self.timeoutSeconds) ? self.timeoutSeconds : 0, has(self.periodSeconds) ? self.periodSeconds : 0, has(self.successThreshold) ? self.successThreshold : 0, has(self.failureThreshold) ? self.failureThreshold : 0].all(n, n >= 0) && (!has(self.terminationGracePeriodSeconds) || self.terminationGracePeriodSeconds > 0)",message="startupProbe's initialDelaySeconds, timeoutSeconds, periodSeconds, successThreshold and failureThreshold cannot be negative, and its terminationGracePeriodSeconds must be above 0"
	// +kubebuilder:validation:XValidation:rule="!has(self.successThreshold) || self.successThreshold == 1",message="startupProbe.successThreshold must be 1: the kubelet counts only failures of a startup probe",fieldPath=".successThreshold"
	StartupProbe *corev1.Probe `json:"startupProbe,omitempty"`
}

// RobotPreStop is what runs in the Robot's container before it is stopped:
// exactly one of sleep and exec.
// +kubebuilder:validation:XValidation:rule="has(self.sleep) != has(self.exec)",message="preStop must have exactly one of sleep or exec"
type RobotPreStop struct {
	// Sleep waits, without needing a shell or a sleep binary in the image:
	// Kubernetes' own sleep action.
	// +optional
	Sleep *RobotSleep `json:"sleep,omitempty"`

	// Exec runs a command in the container, which must exit before the
	// container gets SIGTERM.
	// +optional
	Exec *RobotExec `json:"exec,omitempty"`
}

// RobotSleep is a preStop sleep.
type RobotSleep struct {
	// Seconds is how long to sleep. It must be below the grace period, so
	// that the container has time left to stop after the sleep.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86399
	Seconds int64 `json:"seconds"`
}

// RobotExec is a preStop command.
type RobotExec struct {
	// Command is the command and its arguments, run directly, not in a
	// shell: to use one, call it ("sh", "-c", "...").
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	Command []string `json:"command"`
}

// RobotPort is a port the Robot's container listens on.
type RobotPort struct {
	// Name names the port on the container and on the Service, where a
	// probe or another object refers to it. An IANA service name: at most
	// 15 lower-case letters, digits and '-', with at least one letter.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && self.matches('[a-z]') && !self.contains('--')",message="a port's name must be an IANA service name: at most 15 lower-case letters, digits and '-', with at least one letter, no '--', starting and ending with a letter or digit"
	Name string `json:"name"`

	// ContainerPort is the port number the container listens on.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	ContainerPort int32 `json:"containerPort"`

	// Protocol is the port's protocol: TCP (the default), UDP or SCTP.
	// +optional
	// +kubebuilder:default=TCP
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	Protocol corev1.Protocol `json:"protocol,omitempty"`

	// ServicePort is the port number of the Robot's Service, which sends
	// what it receives there to the container's port of this name: 80 for
	// a container that listens on 8080, say. Unset, the containerPort. An
	// HTTPRoute reaches the port on this number; probes and the container
	// keep containerPort. Changing it changes the Service alone, not the
	// pods. Only for spec.ports: a sidecar's ports are not on the Service.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	ServicePort int32 `json:"servicePort,omitempty"`

	// NodePort is the port this port opens on every node, for a Service of
	// type NodePort or LoadBalancer only. It must be free and in the
	// cluster's node port range (30000-32767 unless the API server is told
	// otherwise): the API server refuses another on the Service, which the
	// Robot then reports (Synced=False, InvalidSpec). Unset, the API server
	// picks one, and keeps it while the Service has this port.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	NodePort int32 `json:"nodePort,omitempty"`
}

// RobotStrategy is how the Deployment replaces old pods with new ones.
// +kubebuilder:validation:XValidation:rule="!has(self.rollingUpdate) || !has(self.type) || self.type == 'RollingUpdate'",message="rollingUpdate can be set only when type is RollingUpdate"
type RobotStrategy struct {
	// Type is RollingUpdate (the default): new pods come up while old ones
	// go, within maxSurge and maxUnavailable; or Recreate: every old pod
	// goes before a new one comes up, for a Robot whose two versions must
	// never run at once.
	// +optional
	// +kubebuilder:validation:Enum=RollingUpdate;Recreate
	Type StrategyType `json:"type,omitempty"`

	// RollingUpdate bounds a rolling update.
	// +optional
	RollingUpdate *RollingUpdate `json:"rollingUpdate,omitempty"`
}

// StrategyType is how old pods are replaced.
type StrategyType string

// The strategies of a Robot.
const (
	// StrategyRollingUpdate: replace pods a few at a time.
	StrategyRollingUpdate StrategyType = "RollingUpdate"
	// StrategyRecreate: remove every old pod before creating new ones.
	StrategyRecreate StrategyType = "Recreate"
)

// RollingUpdate bounds a rolling update, as apps/v1 Deployments do.
type RollingUpdate struct {
	// MaxSurge is how many pods may run above the desired replicas during
	// the update: a number, or a percentage of the replicas rounded up.
	// Unset, 25%.
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// MaxUnavailable is how many of the desired replicas may be unavailable
	// during the update: a number, or a percentage of the replicas rounded
	// down. Unset, 25%. It cannot be 0 when maxSurge is 0.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// RobotPlacement is where a Robot's pods may run.
type RobotPlacement struct {
	// NodeSelector limits the pods to the nodes that have these labels.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="every placement.nodeSelector key must be a label key: an optional DNS subdomain prefix (such as example.com) and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.labelValue().validate(self[k]).hasValue())",message="every placement.nodeSelector value must be a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or empty"
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations let the pods run on nodes with matching taints.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.operator) || t.operator in ['Equal', 'Exists'])",message="a toleration's operator must be Equal or Exists"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.effect) || t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="a toleration's effect must be NoSchedule, PreferNoSchedule or NoExecute, or unset for every effect"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.operator) || t.operator != 'Exists' || !has(t.value) || t.value == '')",message="a toleration with operator Exists cannot have a value: it matches every value of the taint's key"
	// +kubebuilder:validation:XValidation:rule="self.all(t, (has(t.key) && t.key != '') || (has(t.operator) && t.operator == 'Exists'))",message="a toleration without a key must have operator Exists: it then tolerates every taint"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.tolerationSeconds) || (has(t.effect) && t.effect == 'NoExecute'))",message="a toleration's tolerationSeconds can be set only with effect NoExecute"
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
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.maxSkew >= 1 && c.whenUnsatisfiable in ['DoNotSchedule', 'ScheduleAnyway'] && (!has(c.minDomains) || (c.minDomains >= 1 && c.whenUnsatisfiable == 'DoNotSchedule')))",message="a topology spread constraint has a maxSkew of at least 1, whenUnsatisfiable DoNotSchedule or ScheduleAnyway, and a minDomains of at least 1 only with DoNotSchedule"
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// PriorityClassName is the PriorityClass of the pods.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="priorityClassName must be the name of a PriorityClass: lower-case letters, digits, '-' and '.'"
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// RobotHTTP is how a Robot is reached over HTTP: an HTTPRoute of the
// Gateway API.
type RobotHTTP struct {
	// Gateways are the Gateways the route attaches to (its parentRefs).
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Gateways []RobotGateway `json:"gateways"`

	// Hostnames are the hosts the route answers for, as the Gateway API
	// takes them: DNS names, the first label of which may be "*". Unset,
	// every host the Gateway's listener accepts.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:XValidation:rule=`self.all(h, h.matches(r'^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'))`,message="hostnames are lower-case DNS names, with no scheme, port or path, such as robot.example.com, or *.example.com for every name under example.com"
	Hostnames []string `json:"hostnames,omitempty"`

	// PathPrefixes are the path prefixes routed to the Robot. Unset, "/":
	// every path.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule=`self.all(p, p.matches(r'^/([-A-Za-z0-9/._~!$&()*+,=:@]|%[0-9a-fA-F]{2})*$') && !p.contains('//') && !p.contains('/./') && !p.contains('/../') && !p.lowerAscii().contains('%2f') && !p.endsWith('/.') && !p.endsWith('/..'))`,message="pathPrefixes are paths such as /api: they start with '/', hold no spaces, quotes, '?', '#' or ';', no '//', '/./' or '/../', no %2F, and do not end in '/.' or '/..'"
	PathPrefixes []string `json:"pathPrefixes,omitempty"`

	// Port names the port of spec.ports that the requests go to, through
	// the Service. Unset, the first port.
	// +optional
	// +kubebuilder:validation:MaxLength=15
	Port string `json:"port,omitempty"`
}

// RobotGateway is a Gateway an HTTPRoute attaches to.
type RobotGateway struct {
	// Name is the Gateway's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace is the Gateway's namespace. Unset, the Robot's. A Gateway
	// of another namespace must allow routes from the Robot's.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="a gateway's namespace must be the name of a namespace: lower-case letters, digits and '-', starting and ending with a letter or digit"
	Namespace string `json:"namespace,omitempty"`

	// SectionName names one listener of the Gateway. Unset, every
	// listener that allows the route.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="a gateway's sectionName must be the name of one of its listeners: lower-case letters, digits, '-' and '.'"
	SectionName string `json:"sectionName,omitempty"`
}

// RobotDisruptionBudget is the PodDisruptionBudget of a Robot's pods.
// +kubebuilder:validation:XValidation:rule="!(has(self.disabled) && self.disabled && has(self.maxUnavailable))",message="disruptionBudget: set maxUnavailable, or disabled, not both"
type RobotDisruptionBudget struct {
	// MaxUnavailable is how many of the Robot's pods a drain may evict at
	// once: a number of at least 1, or a percentage above 0% of the
	// replicas, rounded up. Set, the Robot gets a budget whatever its
	// replicas. Unset, 1 for a Robot of 2 or more replicas.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^([1-9][0-9]?|100)%$')",message="maxUnavailable must be a number of at least 1, or a percentage from 1% to 100%: a budget of 0 blocks every drain"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// Disabled, when true, asks for no PodDisruptionBudget: a drain may
	// evict every pod of the Robot at once.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
}

// RobotService is the Service that the operator keeps for a Robot with
// ports.
// +kubebuilder:validation:XValidation:rule="!has(self.externalTrafficPolicy) || (has(self.type) && self.type in ['NodePort', 'LoadBalancer'])",message="externalTrafficPolicy can be set only when type is NodePort or LoadBalancer: the API server refuses it on a Service that is not reached from outside the cluster",fieldPath=".externalTrafficPolicy"
// +kubebuilder:validation:XValidation:rule="!has(self.loadBalancerSourceRanges) || size(self.loadBalancerSourceRanges) == 0 || (has(self.type) && self.type == 'LoadBalancer')",message="loadBalancerSourceRanges can be set only when type is LoadBalancer",fieldPath=".loadBalancerSourceRanges"
// +kubebuilder:validation:XValidation:rule="!has(self.loadBalancerClass) || (has(self.type) && self.type == 'LoadBalancer')",message="loadBalancerClass can be set only when type is LoadBalancer",fieldPath=".loadBalancerClass"
type RobotService struct {
	// Type is the Service's type: ClusterIP (the default) for a virtual IP
	// inside the cluster, NodePort to open the ports on every node as well,
	// LoadBalancer to ask the cloud for a load balancer too, or None for no
	// Service at all.
	// +optional
	// +kubebuilder:default=ClusterIP
	Type ServiceType `json:"type,omitempty"`

	// Annotations are added to the Service's annotations, for example a
	// cloud's load balancer settings (internal or external, its scheme,
	// its health check). They are on the Service from its creation, which
	// is when some clouds read them. The operator owns these keys only:
	// what another writer (a cloud controller, kubectl annotate) puts on
	// the Service stays, and a key removed from here is removed from the
	// Service. Keys and the total size are checked as Kubernetes checks a
	// Service's; robot.dev/spec-hash is the operator's own, and
	// service.beta.kubernetes.io/load-balancer-source-ranges is
	// loadBalancerSourceRanges' older form.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="!('robot.dev/spec-hash' in self)",message="service.annotations cannot set robot.dev/spec-hash: the operator records on it what it applied"
	// +kubebuilder:validation:XValidation:rule="!('service.beta.kubernetes.io/load-balancer-source-ranges' in self)",message="service.annotations cannot set service.beta.kubernetes.io/load-balancer-source-ranges: set service.loadBalancerSourceRanges, the field the API server reads first"
	// +kubebuilder:validation:XValidation:rule="self.map(k, size(k) + size(self[k])).sum() <= 262144",message="service.annotations must be at most 256 KiB in all (keys and values), as a Service's annotations"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k.lowerAscii()).hasValue())",message="every service.annotations key must be an annotation key: an optional DNS subdomain prefix (such as example.com) and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit"
	Annotations map[string]string `json:"annotations,omitempty"`

	// Labels are added to the Service's labels, for example for a
	// monitoring or mesh selector. They cannot set the labels the operator
	// puts on the Service: robot.dev/name and app.kubernetes.io/managed-by,
	// name and instance (the operator finds its Services by
	// app.kubernetes.io/managed-by). As for annotations, the operator owns
	// these keys only. Keys and values are checked as Kubernetes checks
	// labels.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['robot.dev/name', 'app.kubernetes.io/managed-by', 'app.kubernetes.io/name', 'app.kubernetes.io/instance']))",message="service.labels cannot set robot.dev/name, app.kubernetes.io/managed-by, app.kubernetes.io/name or app.kubernetes.io/instance: the operator sets them, and finds the Robot's Service by them"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 63)",message="a service.labels value must be at most 63 characters, as every label value"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="every service.labels key must be a label key: an optional DNS subdomain prefix (such as example.com) and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.labelValue().validate(self[k]).hasValue())",message="every service.labels value must be a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or empty"
	Labels map[string]string `json:"labels,omitempty"`

	// ExternalTrafficPolicy is how a NodePort or LoadBalancer Service
	// routes traffic from outside the cluster: Cluster (the API server's
	// default) spreads it over every ready pod; Local sends it only to
	// pods on the node it arrived at, which keeps the client's source
	// address and saves a hop, but leaves nodes without a pod unused. Only
	// for NodePort and LoadBalancer. Unset, the API server's default
	// stands and the operator owns nothing of it.
	// +optional
	// +kubebuilder:validation:Enum=Cluster;Local
	ExternalTrafficPolicy corev1.ServiceExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`

	// InternalTrafficPolicy is how traffic from inside the cluster is
	// routed: Cluster (the API server's default) to every ready pod, or
	// Local to the pods on the client's own node only. Unset, the API
	// server's default stands.
	// +optional
	// +kubebuilder:validation:Enum=Cluster;Local
	InternalTrafficPolicy corev1.ServiceInternalTrafficPolicy `json:"internalTrafficPolicy,omitempty"`

	// LoadBalancerSourceRanges are the client CIDRs a cloud load balancer
	// lets in, where the cloud supports it (10.0.0.0/8, 2001:db8::/32).
	// Only for LoadBalancer. Each is a CIDR as Kubernetes' strict
	// validation takes it: no leading zeros, no bits set beyond the prefix
	// length.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="self.all(r, isCIDR(r) && cidr(r) == cidr(r).masked())",message="every loadBalancerSourceRanges entry must be a CIDR with no bits set beyond its prefix length, such as 10.0.0.0/8 or 2001:db8::/32"
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty"`

	// LoadBalancerClass names the load balancer implementation that
	// serves the Service, where a cluster has several (a label-style name
	// such as example.com/internal-lb); unset, the cloud's default. Only
	// for LoadBalancer. A Service's class cannot change once it is set:
	// when the Robot asks for another class than its Service has, the
	// operator leaves the Service as it is and says so on the Robot
	// (Synced=False, LoadBalancerClassImmutable); deleting the Service
	// makes the operator create it again with the new class.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="loadBalancerClass must be a label-style name: an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, such as example.com/internal-lb"
	LoadBalancerClass string `json:"loadBalancerClass,omitempty"`
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
	// ServiceTypeNone: no Service, even with ports.
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
	// on its ports; empty when the Robot has no Service, or its Service is
	// not the operator's to keep.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// Address is where the Robot is reached, read from its Service and its
	// HTTPRoute as they are (not as the spec asks): the best single URL,
	// the Service's in-cluster name and ports, the load balancer's
	// addresses and the route's URLs. It is absent while the Robot has no
	// Service of its own.
	// +optional
	Address *RobotAddress `json:"address,omitempty"`

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

	// LastReadyRevision is the revision of the Robot's history (a
	// ControllerRevision it controls, holding its spec) that was Ready
	// last, and when it became Ready. It is written with the status that
	// says Ready, and kept while a later spec is not Ready: Ready's message
	// then says what changed since.
	// +optional
	LastReadyRevision *RobotReadyRevision `json:"lastReadyRevision,omitempty"`
}

// RobotReadyRevision is a revision of a Robot's history that was Ready.
type RobotReadyRevision struct {
	// Name is the ControllerRevision's name: the Robot's name and a hash
	// of the spec it holds. A spec that comes back keeps its name and gets
	// a new number.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Revision is the ControllerRevision's number when it became Ready.
	Revision int64 `json:"revision"`
	// ReadyTime is when the Robot became Ready with this revision's spec.
	ReadyTime metav1.Time `json:"readyTime"`
}

// RobotAddress is where a Robot is reached, as Knative's status.address and
// the Gateway API's status.addresses say it of theirs.
type RobotAddress struct {
	// URL is the best single way in: the route's first URL once every
	// Gateway accepted the route; else the load balancer's first address
	// with the Service's first port; else the Service's in-cluster URL,
	// http://NAME.NAMESPACE.svc:PORT, on its first port. The scheme is
	// always http: whether a Gateway's listener or the container speaks
	// TLS is not known here.
	// +optional
	URL string `json:"url,omitempty"`

	// Hostname is the Service's name in the cluster's DNS, NAME.NAMESPACE.svc
	// (the cluster's domain, often cluster.local, may follow).
	// +optional
	Hostname string `json:"hostname,omitempty"`

	// Ports are the Service's ports as the Service has them, node ports
	// included once they are allocated.
	// +optional
	// +listType=atomic
	Ports []RobotAddressPort `json:"ports,omitempty"`

	// LoadBalancer is the Service's load balancer, for a Service of type
	// LoadBalancer: the addresses it was given, or a message saying it has
	// none yet.
	// +optional
	LoadBalancer *RobotLoadBalancerAddress `json:"loadBalancer,omitempty"`

	// RouteURLs are the URLs of the Robot's HTTPRoute, once every Gateway
	// it attaches to accepted it: http://HOST/PATH for each hostname and
	// path prefix of the route, the first 16 of them. The scheme is always http (the Gateway's
	// listener may serve https), and a route with no hostnames has none,
	// since the host is the Gateway's.
	// +optional
	// +listType=atomic
	RouteURLs []string `json:"routeURLs,omitempty"`
}

// RobotAddressPort is a port of a Robot's Service.
type RobotAddressPort struct {
	// Name is the port's name.
	// +optional
	Name string `json:"name,omitempty"`
	// Port is the port the Service listens on.
	Port int32 `json:"port"`
	// Protocol is TCP, UDP or SCTP.
	// +optional
	Protocol corev1.Protocol `json:"protocol,omitempty"`
	// NodePort is the port on every node, for a Service of type NodePort or
	// LoadBalancer, once allocated.
	// +optional
	NodePort int32 `json:"nodePort,omitempty"`
}

// RobotLoadBalancerAddress is what a Robot's load balancer was given.
type RobotLoadBalancerAddress struct {
	// Addresses are the load balancer's ingress points, from the Service's
	// status.loadBalancer.ingress.
	// +optional
	// +listType=atomic
	Addresses []RobotNetworkAddress `json:"addresses,omitempty"`
	// Message says, while Addresses is empty, that the load balancer has no
	// address yet.
	// +optional
	Message string `json:"message,omitempty"`
}

// RobotNetworkAddress is an address of a load balancer, typed as the
// Gateway API types a Gateway's.
type RobotNetworkAddress struct {
	// Type is IPAddress or Hostname.
	Type string `json:"type"`
	// Value is the IP address or the hostname.
	Value string `json:"value"`
}

// The types of a RobotNetworkAddress.
const (
	// AddressTypeIPAddress: the value is an IP address.
	AddressTypeIPAddress = "IPAddress"
	// AddressTypeHostname: the value is a DNS name.
	AddressTypeHostname = "Hostname"
)

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
	// ConditionReconciling is True while the Robot is on its way to Ready
	// (a rollout in progress, a Deployment not yet observed), with Ready's
	// reason and message. It is never False: once the Robot is Ready or
	// stalled it is removed. It and Stalled are the abnormal-true
	// conditions that kstatus, and with it Flux and kpt, read: a Robot
	// with neither (kstatus reads an absent one as False) and its
	// generation observed is Current.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the Robot will not become Ready
	// without a change (an image that cannot be pulled, a crash loop, an
	// invalid spec, a progress deadline exceeded...), with Ready's reason
	// and message. Like Reconciling, it is on the Robot only while True.
	ConditionStalled = "Stalled"
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
	// ReasonLoadBalancerClassImmutable: the Robot asks for another
	// loadBalancerClass than its Service has, which a Service cannot
	// change once set. The operator leaves the Service as it is; deleting
	// the Service makes it create the Service again with the new class.
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
	// ReasonServiceContested: another writer keeps changing what the Robot
	// sets on its Service, and the operator puts it back as it does for
	// the Deployment, waiting longer each time.
	ReasonServiceContested = "ServiceContested"
	// ReasonDisruptionBudgetNameTaken: a PodDisruptionBudget with the
	// Robot's Deployment name exists and is not controlled by this Robot.
	// The operator leaves it alone; the Deployment is kept all the same.
	ReasonDisruptionBudgetNameTaken = "DisruptionBudgetNameTaken"
	// ReasonDisruptionBudgetContested: another writer keeps changing what
	// the Robot sets on its PodDisruptionBudget, and the operator puts it
	// back, waiting longer each time.
	ReasonDisruptionBudgetContested = "DisruptionBudgetContested"
	// ReasonDisruptionBudgetNotAllowed: the Robot asks for a
	// PodDisruptionBudget (spec.disruptionBudget), and the operator was
	// told to keep none (its -disruption-budgets=off flag). Everything else
	// the Robot asks for is kept; the budget the operator made is deleted.
	ReasonDisruptionBudgetNotAllowed = "DisruptionBudgetNotAllowed"
	// ReasonConfigNotWatched: the Robot asks to roll on config changes
	// (spec.rollOnConfigChange) and reads a Secret (or a ConfigMap) that
	// the operator may not watch, its RBAC lacking list and watch of
	// them (configRollouts.secrets in the chart). Everything else is kept:
	// the Deployment is written and the objects the operator may watch
	// roll the pods; the message names those that do not. Ready is not
	// changed by it.
	ReasonConfigNotWatched = "ConfigNotWatched"
	// ReasonGatewayAPIMissing: the Robot asks for an HTTPRoute (spec.http)
	// and the cluster has no Gateway API (its HTTPRoute CRD). Everything
	// else the Robot asks for is kept; the route is made as soon as the
	// Gateway API is installed, with no restart of the operator. Ready is
	// False with this reason too: the Robot is not reachable as it asks.
	ReasonGatewayAPIMissing = "GatewayAPIMissing"
	// ReasonRouteNameTaken: an HTTPRoute with the Robot's Deployment name
	// exists and is not controlled by this Robot. The operator leaves it
	// alone.
	ReasonRouteNameTaken = "RouteNameTaken"
	// ReasonRouteContested: another writer keeps changing what the Robot
	// sets on its HTTPRoute, and the operator puts it back, waiting longer
	// each time.
	ReasonRouteContested = "RouteContested"
	// ReasonRouteNotAccepted: Ready is False because a Gateway the
	// Robot's HTTPRoute attaches to has not accepted it yet. When the
	// Gateway refused it, Ready carries the Gateway's own reason and
	// message instead.
	ReasonRouteNotAccepted = "RouteNotAccepted"
	// ReasonGatewayNotFound: Ready is False because a Gateway the Robot's
	// HTTPRoute attaches to does not exist, so that no controller will
	// ever answer the route; the message names it (namespace/name). The
	// Robot is Stalled until someone makes the Gateway, or changes
	// spec.http.gateways; it syncs again as soon as the Gateway is made.
	// Said only where the operator may read the Gateways and the cluster
	// has their CRD: elsewhere the route waits with RouteNotAccepted.
	ReasonGatewayNotFound = "GatewayNotFound"
	// ReasonRouteNotAllowed: the Robot asks for an HTTPRoute the operator
	// was told not to make: routes are off (-http-routes=false), or a
	// Gateway or a hostname is outside -route-gateways or -route-hostnames.
	// No route is created, and one the Robot has is left as it is. Ready
	// is False with this reason too.
	ReasonRouteNotAllowed = "RouteNotAllowed"
	// ReasonServiceMetadataNotAllowed: the Robot asks for Service
	// annotations or labels the operator was told not to set
	// (-service-annotations, -service-labels), such as those that have
	// another controller expose the Service. The Deployment is kept; the
	// Service is not created or changed.
	ReasonServiceMetadataNotAllowed = "ServiceMetadataNotAllowed"
	// ReasonLoadBalancerClassNotAllowed: the Robot asks for a
	// loadBalancerClass outside -service-load-balancer-classes. The
	// Deployment is kept; the Service is not created or changed.
	ReasonLoadBalancerClassNotAllowed = "LoadBalancerClassNotAllowed"
	// ReasonGracePeriodNotAllowed: the Robot asks for a grace period, or a
	// preStop sleep, longer than -max-termination-grace-period. No
	// Deployment is created, and one the Robot has is left as it is.
	ReasonGracePeriodNotAllowed = "GracePeriodNotAllowed"
	// ReasonPaused: the Robot carries the annotation robot.dev/paused:
	// "true" (in any case), and the operator writes nothing to what it
	// owns (its Deployment, Service, PodDisruptionBudget and HTTPRoute)
	// until it is removed or set to "false". The status still reports them
	// as they are.
	ReasonPaused = "Paused"
	// ReasonAnnotationIgnored, a Warning event's reason only: the Robot's
	// robot.dev/paused, or its PodDisruptionBudget's
	// robot.dev/disruption-budget, holds a value the operator does not read
	// and so ignores. Recorded once per value.
	ReasonAnnotationIgnored = "AnnotationIgnored"
	// ReasonNewerAPI: the Robot holds spec fields this operator's release
	// does not know, written through a newer release's CRD (this release
	// was rolled back to). The operator writes nothing to what the Robot
	// owns, since its apply would remove those fields, until the Robot no
	// longer holds them or a release that knows them runs.
	ReasonNewerAPI = "NewerAPI"
	// ReasonChangeRejected: the Robot's new pod template would not run:
	// the API server refused a dry-run pod of it (Pod Security, a
	// ResourceQuota, a LimitRange, an admission policy or webhook), or a
	// ConfigMap, Secret, key, ServiceAccount or PriorityClass it names is
	// missing. The Deployment keeps its last template, and its pods keep
	// running, until the Robot, or a ConfigMap it names, changes.
	ReasonChangeRejected = "ChangeRejected"
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

// The reason of the Synced condition while a change of the Robot's pod
// template that does not come from its spec waits for the fleet budget.
const (
	// ReasonWaitingForFleetBudget: the operator would change the Robot's pod
	// template for a reason other than its spec (a new default of the
	// operator's release, say), and as many Robots as the fleet budget
	// allows (-fleet-rollout-budget) are rolling such a change: the
	// Deployment keeps its template until a slot frees. Ready still says
	// what the pods do. A change of the Robot's own spec is never held.
	ReasonWaitingForFleetBudget = "WaitingForFleetBudget"
)
