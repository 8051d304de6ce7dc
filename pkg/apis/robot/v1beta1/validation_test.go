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
	"fmt"
	"strings"
	"testing"
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
