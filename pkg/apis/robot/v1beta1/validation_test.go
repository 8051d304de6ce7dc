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
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestValidateService: spec.service as Kubernetes checks a Service's
// metadata and traffic fields, and the operator's own keys refused.
func TestValidateService(t *testing.T) {
	many := map[string]string{}
	for i := range MaxServiceMetadata + 1 {
		many[fmt.Sprintf("key-%d", i)] = "x"
	}
	for _, tt := range []struct {
		name    string
		service RobotService
		want    string // a substring of the error; "" for none
	}{
		{name: "empty"},
		{name: "everything, LoadBalancer", service: RobotService{
			Type:                     ServiceTypeLoadBalancer,
			Annotations:              map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true", "Example.COM/Owner": "team"},
			Labels:                   map[string]string{"team": "blue", "example.com/tier": "", "mesh": "a.b-c_d"},
			ExternalTrafficPolicy:    "Local",
			InternalTrafficPolicy:    "Local",
			LoadBalancerSourceRanges: []string{"10.0.0.0/8", "2001:db8::/32"},
			LoadBalancerClass:        "example.com/internal-lb",
		}},
		{name: "externalTrafficPolicy, NodePort", service: RobotService{Type: ServiceTypeNodePort, ExternalTrafficPolicy: "Cluster"}},
		{name: "internalTrafficPolicy, no type", service: RobotService{InternalTrafficPolicy: "Local"}},
		{name: "metadata with None", service: RobotService{Type: ServiceTypeNone, Labels: map[string]string{"team": "blue"}}},

		{name: "externalTrafficPolicy, ClusterIP", service: RobotService{Type: ServiceTypeClusterIP, ExternalTrafficPolicy: "Local"},
			want: "externalTrafficPolicy can be set only when spec.service.type is NodePort or LoadBalancer, not ClusterIP"},
		{name: "externalTrafficPolicy, no type", service: RobotService{ExternalTrafficPolicy: "Local"}, want: "not ClusterIP"},
		{name: "source ranges, NodePort", service: RobotService{Type: ServiceTypeNodePort, LoadBalancerSourceRanges: []string{"10.0.0.0/8"}},
			want: "loadBalancerSourceRanges can be set only when spec.service.type is LoadBalancer, not NodePort"},
		{name: "class, ClusterIP", service: RobotService{Type: ServiceTypeClusterIP, LoadBalancerClass: "lb"},
			want: "loadBalancerClass can be set only when spec.service.type is LoadBalancer"},
		{name: "policy", service: RobotService{InternalTrafficPolicy: "Nearest"}, want: `internalTrafficPolicy must be Cluster or Local, not "Nearest"`},
		{name: "the spec hash", service: RobotService{Annotations: map[string]string{"robot.dev/spec-hash": "x"}}, want: "cannot set robot.dev/spec-hash"},
		{name: "the source ranges' annotation", service: RobotService{Type: ServiceTypeLoadBalancer, Annotations: map[string]string{AnnotationLoadBalancerSourceRanges: "10.0.0.0/8"}},
			want: "set spec.service.loadBalancerSourceRanges instead"},
		{name: "annotation key", service: RobotService{Annotations: map[string]string{"not a key": "x"}}, want: `spec.service.annotations: Invalid value: "not a key"`},
		{name: "annotations too large", service: RobotService{Annotations: map[string]string{"a": strings.Repeat("x", 256*1024)}}, want: "Too long"},
		{name: "too many annotations", service: RobotService{Annotations: many}, want: "at most 64 keys"},
		{name: "managed-by label", service: RobotService{Labels: map[string]string{"app.kubernetes.io/managed-by": "me"}},
			want: "spec.service.labels cannot set app.kubernetes.io/managed-by"},
		{name: "selector label", service: RobotService{Labels: map[string]string{"robot.dev/name": "other"}}, want: "cannot set robot.dev/name"},
		{name: "label key", service: RobotService{Labels: map[string]string{"Example.com/x": "y"}}, want: `"Example.com/x" is not a label key`},
		{name: "label value", service: RobotService{Labels: map[string]string{"team": "blue-"}}, want: `spec.service.labels["team"]: "blue-" is not a label value`},
		{name: "too many labels", service: RobotService{Labels: many}, want: "at most 64 keys"},
		{name: "host bits", service: RobotService{Type: ServiceTypeLoadBalancer, LoadBalancerSourceRanges: []string{"10.0.0.0/8", "10.0.0.1/8"}},
			want: "loadBalancerSourceRanges[1]: Invalid value: \"10.0.0.1/8\": must not have bits set beyond the prefix length"},
		{name: "leading zeros", service: RobotService{Type: ServiceTypeLoadBalancer, LoadBalancerSourceRanges: []string{"010.0.0.0/8"}}, want: "leading 0s"},
		{name: "not a CIDR", service: RobotService{Type: ServiceTypeLoadBalancer, LoadBalancerSourceRanges: []string{" 10.0.0.0/8"}}, want: "must be a valid CIDR"},
		{name: "class", service: RobotService{Type: ServiceTypeLoadBalancer, LoadBalancerClass: "-lb"}, want: `loadBalancerClass "-lb" is not a label-style name`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateService(&tt.service)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
	if err := ValidateService(nil); err != nil {
		t.Errorf("no service: %v", err)
	}
}

// TestValidateResourcesAndProbes: a limit below its request, and the
// probes the API server refuses in a pod, as the CRD's rules refuse them.
func TestValidateResourcesAndProbes(t *testing.T) {
	resources := func(limit, request string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)},
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(request)},
		}
	}
	if err := ValidateResources("spec.resources", resources("1Gi", "128Mi")); err != nil {
		t.Errorf("limit above request: %v", err)
	}
	if err := ValidateResources("spec.resources", resources("64Mi", "128Mi")); err == nil ||
		err.Error() != "spec.resources.limits.memory (64Mi) must be at least spec.resources.requests.memory (128Mi)" {
		t.Errorf("limit below request: %v", err)
	}
	exec := corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
	for _, tt := range []struct {
		name, field string
		probe       corev1.Probe
		want        string // "" for none
	}{
		{"exec", "livenessProbe", corev1.Probe{ProbeHandler: exec, SuccessThreshold: 1}, ""},
		{"named port", "readinessProbe", corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}}, ""},
		{"no action", "readinessProbe", corev1.Probe{PeriodSeconds: 5}, "exactly one of httpGet, tcpSocket, grpc or exec"},
		{"two actions", "readinessProbe", corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: exec.Exec, GRPC: &corev1.GRPCAction{Port: 9090}}}, "exactly one of"},
		{"port 0", "readinessProbe", corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(0)}}}, "from 1 to 65535"},
		{"no command", "livenessProbe", corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{}}}, "exec.command must name the command"},
		{"negative", "startupProbe", corev1.Probe{ProbeHandler: exec, FailureThreshold: -1}, "cannot be negative"},
		{"liveness threshold", "livenessProbe", corev1.Probe{ProbeHandler: exec, SuccessThreshold: 2}, "successThreshold must be 1"},
		{"readiness threshold", "readinessProbe", corev1.Probe{ProbeHandler: exec, SuccessThreshold: 2}, ""},
		{"readiness grace", "readinessProbe", corev1.Probe{ProbeHandler: exec, TerminationGracePeriodSeconds: ptr.To[int64](5)}, "cannot be set"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateProbe("spec."+tt.field, tt.field, &tt.probe)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

// TestValidateEnv: a variable with a value and a valueFrom, a valueFrom of
// no source, an envFrom of two, as the CRD's rules refuse them.
func TestValidateEnv(t *testing.T) {
	secretKey := &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "password"}}
	for _, tt := range []struct {
		name    string
		env     []corev1.EnvVar
		envFrom []corev1.EnvFromSource
		want    string // "" for none
	}{
		{"value", []corev1.EnvVar{{Name: "A", Value: "1"}}, nil, ""},
		{"valueFrom", []corev1.EnvVar{{Name: "A", ValueFrom: secretKey}}, []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{}}}, ""},
		{"both", []corev1.EnvVar{{Name: "A", Value: "1", ValueFrom: secretKey}}, nil, `spec.env[0] ("A"): an env variable has a value or a valueFrom, not both`},
		{"no source", []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{}}}, nil, "exactly one of fieldRef"},
		{"envFrom of none", nil, []corev1.EnvFromSource{{Prefix: "X_"}}, "spec.envFrom[0]: every envFrom entry has exactly one of configMapRef or secretRef"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateEnv("spec", tt.env, tt.envFrom)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

// TestValidatePortsServicePorts: a port's servicePort and nodePort as the
// CRD checks them: in 1-65535, no two ports on one Service port and
// protocol (a port without servicePort is on its containerPort), no two on
// one nodePort and protocol, a nodePort only for NodePort and LoadBalancer,
// and neither on a sidecar's port.
func TestValidatePortsServicePorts(t *testing.T) {
	http := RobotPort{Name: "http", ContainerPort: 8080, Protocol: "TCP"}
	with := func(port RobotPort, change func(*RobotPort)) RobotPort {
		change(&port)
		return port
	}
	nodePort := &RobotService{Type: ServiceTypeNodePort}
	for _, tt := range []struct {
		name    string
		ports   []RobotPort
		service *RobotService
		want    string // a substring of the error; "" for none
	}{
		{name: "servicePort", ports: []RobotPort{with(http, func(p *RobotPort) { p.ServicePort = 80 })}},
		{name: "the Service port of one, the container port of another", ports: []RobotPort{
			with(http, func(p *RobotPort) { p.ServicePort = 80 }),
			{Name: "alt", ContainerPort: 80, ServicePort: 8081, Protocol: "TCP"},
		}},
		{name: "one Service port, two protocols", ports: []RobotPort{
			with(http, func(p *RobotPort) { p.ServicePort = 53 }),
			{Name: "dns", ContainerPort: 5353, ServicePort: 53, Protocol: "UDP"},
		}},
		{name: "nodePort, NodePort", ports: []RobotPort{with(http, func(p *RobotPort) { p.NodePort = 30080 })}, service: nodePort},
		{name: "nodePort, LoadBalancer", ports: []RobotPort{with(http, func(p *RobotPort) { p.NodePort = 40000 })}, service: &RobotService{Type: ServiceTypeLoadBalancer}},

		{name: "two on one Service port", ports: []RobotPort{
			with(http, func(p *RobotPort) { p.ServicePort = 80 }),
			{Name: "alt", ContainerPort: 8081, ServicePort: 80},
		}, want: "spec.ports[1]: two ports have the Service port 80 and protocol TCP"},
		{name: "a servicePort that is another's containerPort", ports: []RobotPort{
			with(http, func(p *RobotPort) { p.ServicePort = 9090 }),
			{Name: "metrics", ContainerPort: 9090, Protocol: "TCP"},
		}, want: "two ports have the Service port 9090"},
		{name: "servicePort too large", ports: []RobotPort{with(http, func(p *RobotPort) { p.ServicePort = 65536 })},
			want: "spec.ports[0].servicePort must be between 1 and 65535, not 65536"},
		{name: "nodePort negative", ports: []RobotPort{with(http, func(p *RobotPort) { p.NodePort = -1 })}, service: nodePort,
			want: "spec.ports[0].nodePort must be between 1 and 65535, not -1"},
		{name: "two on one nodePort", ports: []RobotPort{
			with(http, func(p *RobotPort) { p.NodePort = 30080 }),
			{Name: "alt", ContainerPort: 8081, NodePort: 30080, Protocol: "TCP"},
		}, service: nodePort, want: "spec.ports[1]: two ports have nodePort 30080 and protocol TCP"},
		{name: "nodePort, ClusterIP", ports: []RobotPort{with(http, func(p *RobotPort) { p.NodePort = 30080 })}, service: &RobotService{Type: ServiceTypeClusterIP},
			want: "spec.ports[0].nodePort can be set only when spec.service.type is NodePort or LoadBalancer, not ClusterIP"},
		{name: "nodePort, no service", ports: []RobotPort{with(http, func(p *RobotPort) { p.NodePort = 30080 })}, want: "not ClusterIP"},
		{name: "nodePort, None", ports: []RobotPort{with(http, func(p *RobotPort) { p.NodePort = 30080 })}, service: &RobotService{Type: ServiceTypeNone}, want: "not None"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := errors.Join(ValidatePorts(tt.ports), ValidateNodePorts(tt.ports, tt.service))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
	for name, port := range map[string]RobotPort{
		"servicePort": {Name: "admin", ContainerPort: 9901, ServicePort: 80},
		"nodePort":    {Name: "admin", ContainerPort: 9901, NodePort: 30081},
	} {
		sidecars := []RobotSidecar{{RobotContainer: RobotContainer{Name: "proxy", Image: "envoy"}, Ports: []RobotPort{port}}}
		if err := ValidateContainers(nil, sidecars); err == nil || !strings.Contains(err.Error(), "spec.sidecars[0].ports[0] cannot set servicePort or nodePort") {
			t.Errorf("a sidecar's port with %s: error %v", name, err)
		}
	}
}

// TestServicePort: a port is on the Service at its servicePort, or at its
// containerPort when it has none.
func TestServicePort(t *testing.T) {
	if got := ServicePort(RobotPort{ContainerPort: 8080, ServicePort: 80}); got != 80 {
		t.Errorf("servicePort 80: %d", got)
	}
	if got := ServicePort(RobotPort{ContainerPort: 8080}); got != 8080 {
		t.Errorf("no servicePort: %d", got)
	}
}
