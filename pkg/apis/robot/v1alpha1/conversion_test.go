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

package v1alpha1_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/robot-operator/robot-operator/internal/conversion"
	"github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	"github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// validKeys returns m with keys the API server admits for labels and
// annotations, and without the conversion's annotation.
func validKeys(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	valid := map[string]string{}
	i := 0
	for _, value := range m {
		valid[fmt.Sprintf("example.com/key-%d", i)] = value
		i++
	}
	return valid
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.AddToScheme, v1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// robotFuzzer fills Robots at random, as the API server could hold them: the
// conversion's own annotation left out (it is not the user's to set), and
// the fields the conversion treats apart drawn from their valid values.
func robotFuzzer(scheme *runtime.Scheme, seed int64) *randfill.Filler {
	funcs := fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, func(serializer.CodecFactory) []any {
		return []any{
			func(meta *metav1.ObjectMeta, c randfill.Continue) {
				c.FillNoCustom(meta)
				// Keys the API server admits: it refuses the others in a
				// write, and in a conversion's answer.
				meta.Labels, meta.Annotations = validKeys(meta.Labels), validKeys(meta.Annotations)
			},
			func(port *v1beta1.RobotPort, c randfill.Continue) {
				c.FillNoCustom(port)
				port.Name = []string{"http", "metrics", "grpc", "admin"}[c.Intn(4)]
				port.Protocol = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP, ""}[c.Intn(4)]
				port.ServicePort, port.NodePort = 0, 0
				if c.Bool() {
					port.ServicePort = 1 + c.Int31n(65535)
				}
				if c.Bool() {
					port.NodePort = 30000 + c.Int31n(2768)
				}
			},
			func(strategy *v1beta1.RobotStrategy, c randfill.Continue) {
				c.FillNoCustom(strategy)
				strategy.Type = []v1beta1.StrategyType{v1beta1.StrategyRollingUpdate, v1beta1.StrategyRecreate, ""}[c.Intn(3)]
				if strategy.Type == v1beta1.StrategyRecreate {
					strategy.RollingUpdate = nil
				}
				if r := strategy.RollingUpdate; r != nil && r.MaxSurge != nil && r.MaxUnavailable != nil {
					r.MaxSurge = ptr.To(intstr.FromInt32(1))
				}
			},
			// What v1alpha1 keeps in its annotation is restored only when
			// v1beta1's rules allow it, which the API server checks on
			// every Robot written through v1beta1.
			func(spec *v1beta1.RobotSpec, c randfill.Continue) {
				c.FillNoCustom(spec)
				spec.MinReadySeconds = c.Int31n(v1beta1.MaxMinReadySeconds + 1)
				names := map[string]bool{}
				numbers := map[string]bool{}
				nodePorts := spec.Service != nil && v1beta1.TakesNodePorts(spec.Service.Type)
				var ports []v1beta1.RobotPort
				for _, port := range spec.Ports {
					port.ContainerPort = 1 + c.Int31n(65535)
					if !nodePorts {
						port.NodePort = 0
					}
					protocol := v1beta1.PortProtocol(port)
					number := fmt.Sprint(port.ContainerPort, protocol)
					servicePort := fmt.Sprint("service ", v1beta1.ServicePort(port), protocol)
					nodePort := fmt.Sprint("node ", port.NodePort, protocol)
					if names[port.Name] || numbers[number] || numbers[servicePort] || (port.NodePort != 0 && numbers[nodePort]) {
						continue
					}
					names[port.Name], numbers[number], numbers[servicePort], numbers[nodePort] = true, true, true, true
					ports = append(ports, port)
				}
				if spec.Ports != nil {
					spec.Ports = ports
				}
				validContainers(spec, c)
				validShutdown(spec, c)
			},
			// The Service's fields as the CRD admits them: valid keys and
			// CIDRs, and only those the type can take.
			func(service *v1beta1.RobotService, c randfill.Continue) {
				service.Type = []v1beta1.ServiceType{v1beta1.ServiceTypeClusterIP, v1beta1.ServiceTypeNodePort, v1beta1.ServiceTypeLoadBalancer, v1beta1.ServiceTypeNone, ""}[c.Intn(5)]
				keys := []string{"example.com/scheme", "service.beta.kubernetes.io/aws-load-balancer-internal", "note", "Team.Example.COM/Owner"}
				if c.Bool() {
					service.Annotations = map[string]string{}
					for range c.Intn(3) {
						service.Annotations[keys[c.Intn(len(keys))]] = c.String(20)
					}
				}
				if c.Bool() {
					service.Labels = map[string]string{}
					for range c.Intn(3) {
						service.Labels[[]string{"team", "example.com/tier", "mesh"}[c.Intn(3)]] = []string{"", "blue", "a.b-c_d"}[c.Intn(3)]
					}
				}
				policies := []string{"", "Cluster", "Local"}
				service.InternalTrafficPolicy = corev1.ServiceInternalTrafficPolicy(policies[c.Intn(3)])
				if service.Type == v1beta1.ServiceTypeNodePort || service.Type == v1beta1.ServiceTypeLoadBalancer {
					service.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicy(policies[c.Intn(3)])
				}
				if service.Type == v1beta1.ServiceTypeLoadBalancer {
					for range c.Intn(3) {
						service.LoadBalancerSourceRanges = append(service.LoadBalancerSourceRanges, []string{"10.0.0.0/8", "192.168.1.0/24", "2001:db8::/32"}[c.Intn(3)])
					}
					service.LoadBalancerClass = []string{"", "example.com/internal", "lb"}[c.Intn(3)]
				}
			},
			func(value *intstr.IntOrString, c randfill.Continue) {
				if c.Bool() {
					*value = intstr.FromInt32(c.Int31n(10))
				} else {
					*value = intstr.FromString([]string{"0%", "25%", "100%"}[c.Intn(3)])
				}
			},
		}
	})
	return fuzzer.FuzzerFor(funcs, rand.NewSource(seed), serializer.NewCodecFactory(scheme)).
		NilChance(0.3).NumElements(0, 3)
}

// validContainers makes the fuzzer's init containers and sidecars what
// v1beta1's rules admit: names of their own, images, unique env names and
// mount paths, env sources of one kind, limits at least their requests,
// probes of one action,
// sidecar ports whose names no other port of the pod has.
func validContainers(spec *v1beta1.RobotSpec, c randfill.Continue) {
	n := 0
	valid := func(container *v1beta1.RobotContainer) {
		container.Name = fmt.Sprintf("c%d", n)
		n++
		container.Image = fmt.Sprintf("registry.example/%s:%d", container.Name, c.Intn(10))
		names := map[string]bool{}
		var env []corev1.EnvVar
		for _, e := range container.Env {
			if !names[e.Name] {
				names[e.Name] = true
				env = append(env, e)
			}
		}
		if container.Env != nil {
			container.Env = env
		}
		// A variable has a value or one source; an envFrom entry one
		// source.
		for i := range container.Env {
			if from := container.Env[i].ValueFrom; from != nil {
				container.Env[i].Value = ""
				container.Env[i].ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: c.String(4)}}
			}
		}
		for i := range container.EnvFrom {
			from := &container.EnvFrom[i]
			if from.SecretRef != nil || from.ConfigMapRef == nil {
				from.ConfigMapRef = nil
				from.SecretRef = &corev1.SecretEnvSource{}
			}
		}
		paths := map[string]bool{}
		var mounts []corev1.VolumeMount
		for _, m := range container.VolumeMounts {
			if !paths[m.MountPath] {
				paths[m.MountPath] = true
				mounts = append(mounts, m)
			}
		}
		if container.VolumeMounts != nil {
			container.VolumeMounts = mounts
		}
		for name, limit := range container.Resources.Limits {
			if request, ok := container.Resources.Requests[name]; ok && limit.Cmp(request) < 0 {
				container.Resources.Limits[name] = request
			}
		}
	}
	// A probe with exactly one action, its numbers as the API server takes
	// them.
	probe := func(p **corev1.Probe) {
		if *p != nil {
			*p = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check", c.String(4)}}}, PeriodSeconds: int32(c.Intn(30))}
		}
	}
	for i := range spec.InitContainers {
		valid(&spec.InitContainers[i])
	}
	for i := range spec.Sidecars {
		sidecar := &spec.Sidecars[i]
		valid(&sidecar.RobotContainer)
		probe(&sidecar.ReadinessProbe)
		probe(&sidecar.LivenessProbe)
		probe(&sidecar.StartupProbe)
		for j := range sidecar.Ports {
			port := &sidecar.Ports[j]
			port.Name = fmt.Sprintf("side%d-%d", i, j)
			port.ContainerPort = int32(20000 + j)
			// Not on the Service: the CRD refuses both.
			port.ServicePort, port.NodePort = 0, 0
		}
	}
}

// validShutdown makes the fuzzer's grace period and preStop hook what
// v1beta1's rules admit: one of sleep or exec, a sleep below the grace
// period.
func validShutdown(spec *v1beta1.RobotSpec, c randfill.Continue) {
	if spec.TerminationGracePeriodSeconds != nil {
		spec.TerminationGracePeriodSeconds = ptr.To(c.Int63n(v1beta1.MaxTerminationGracePeriodSeconds + 1))
	}
	preStop := spec.PreStop
	if preStop == nil {
		return
	}
	if c.Bool() {
		preStop.Exec = nil
		grace := ptr.Deref(spec.TerminationGracePeriodSeconds, v1beta1.DefaultTerminationGracePeriodSeconds)
		if grace < 2 {
			spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
			grace = 2
		}
		preStop.Sleep = &v1beta1.RobotSleep{Seconds: 1 + c.Int63n(grace-1)}
		return
	}
	preStop.Sleep = nil
	preStop.Exec = &v1beta1.RobotExec{Command: []string{"/drain", c.String(8)}}
}

// convert converts in to out through the scheme, as the webhook does.
func convert(t *testing.T, scheme *runtime.Scheme, in, out any) {
	t.Helper()
	if err := scheme.Convert(in, out, nil); err != nil {
		t.Fatalf("converting %T to %T: %v", in, out, err)
	}
}

func TestRoundTripFromV1alpha1(t *testing.T) {
	scheme := newScheme(t)
	filler := robotFuzzer(scheme, 1)
	for i := range roundTrips {
		var original v1alpha1.Robot
		filler.Fill(&original)
		var beta v1beta1.Robot
		convert(t, scheme, original.DeepCopy(), &beta)
		var back v1alpha1.Robot
		convert(t, scheme, &beta, &back)
		if !apiequality.Semantic.DeepEqual(&original, &back) {
			t.Fatalf("round trip %d lost something, v1alpha1 → v1beta1 → v1alpha1 (- original, + back):\n%s", i, diff.Diff(&original, &back))
		}
	}
}

func TestRoundTripFromV1beta1(t *testing.T) {
	scheme := newScheme(t)
	filler := robotFuzzer(scheme, 2)
	// How many Robots had each field the annotation alone keeps: the
	// round trips prove nothing of a field the fuzzer never fills.
	kept := map[string]int{}
	t.Cleanup(func() {
		for _, field := range []string{"initContainers", "sidecars", "terminationGracePeriodSeconds", "preStop.sleep", "preStop.exec", "ports.servicePort", "ports.nodePort"} {
			if kept[field] == 0 {
				t.Errorf("no Robot of %d had %s", roundTrips, field)
			}
		}
	})
	for i := range roundTrips {
		var original v1beta1.Robot
		filler.Fill(&original)
		for field, set := range map[string]bool{
			"initContainers":                len(original.Spec.InitContainers) > 0,
			"sidecars":                      len(original.Spec.Sidecars) > 0,
			"terminationGracePeriodSeconds": original.Spec.TerminationGracePeriodSeconds != nil,
			"preStop.sleep":                 original.Spec.PreStop != nil && original.Spec.PreStop.Sleep != nil,
			"preStop.exec":                  original.Spec.PreStop != nil && original.Spec.PreStop.Exec != nil,
			"ports.servicePort":             slices.ContainsFunc(original.Spec.Ports, func(p v1beta1.RobotPort) bool { return p.ServicePort != 0 }),
			"ports.nodePort":                slices.ContainsFunc(original.Spec.Ports, func(p v1beta1.RobotPort) bool { return p.NodePort != 0 }),
		} {
			if set {
				kept[field]++
			}
		}
		var alpha v1alpha1.Robot
		convert(t, scheme, original.DeepCopy(), &alpha)
		var back v1beta1.Robot
		convert(t, scheme, &alpha, &back)
		if !apiequality.Semantic.DeepEqual(&original, &back) {
			t.Fatalf("round trip %d lost something, v1beta1 → v1alpha1 → v1beta1 (- original, + back):\n%s", i, diff.Diff(&original, &back))
		}
	}
}

// TestConversionLeavesItsInputAlone: the conversion writes its annotation on
// a copy of the annotations, never on the object it was given (an informer's
// cached object, say).
func TestConversionLeavesItsInputAlone(t *testing.T) {
	scheme := newScheme(t)
	robot := twoPortRobot()
	before := robot.DeepCopy()
	var alpha v1alpha1.Robot
	convert(t, scheme, robot, &alpha)
	if !apiequality.Semantic.DeepEqual(before, robot) {
		t.Fatalf("converting to v1alpha1 changed its input:\n%s", diff.Diff(before, robot))
	}
	if _, ok := alpha.Annotations[v1alpha1.ConversionDataAnnotation]; !ok {
		t.Fatalf("a two-port Robot read as v1alpha1 has no %s annotation: %v", v1alpha1.ConversionDataAnnotation, alpha.Annotations)
	}
	alphaBefore := alpha.DeepCopy()
	var beta v1beta1.Robot
	convert(t, scheme, &alpha, &beta)
	if !apiequality.Semantic.DeepEqual(alphaBefore, &alpha) {
		t.Fatalf("converting to v1beta1 changed its input:\n%s", diff.Diff(alphaBefore, &alpha))
	}
}

func twoPortRobot() *v1beta1.Robot {
	return &v1beta1.Robot{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", Annotations: map[string]string{"owner": "team-a"}},
		Spec: v1beta1.RobotSpec{
			Image: "registry.example.com/web:1.0",
			Ports: []v1beta1.RobotPort{
				{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP, ServicePort: 80, NodePort: 30080},
				{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
			},
			Strategy: &v1beta1.RobotStrategy{
				Type:          v1beta1.StrategyRollingUpdate,
				RollingUpdate: &v1beta1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromString("0%"))},
			},
			MinReadySeconds: 10,
			Placement:       v1beta1.RobotPlacement{NodeSelector: map[string]string{"disk": "ssd"}, PriorityClassName: "high"},
			Sidecars: []v1beta1.RobotSidecar{{
				RobotContainer: v1beta1.RobotContainer{Name: "proxy", Image: "registry.example.com/proxy:2"},
				Ports:          []v1beta1.RobotPort{{Name: "proxy", ContainerPort: 15001, Protocol: corev1.ProtocolTCP}},
			}},
			InitContainers:                []v1beta1.RobotContainer{{Name: "migrate", Image: "registry.example.com/web:1.0", Args: []string{"migrate"}}},
			TerminationGracePeriodSeconds: ptr.To[int64](45),
			PreStop:                       &v1beta1.RobotPreStop{Sleep: &v1beta1.RobotSleep{Seconds: 10}},
			Service: &v1beta1.RobotService{
				Type:                     v1beta1.ServiceTypeLoadBalancer,
				Annotations:              map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"},
				Labels:                   map[string]string{"team": "blue"},
				ExternalTrafficPolicy:    corev1.ServiceExternalTrafficPolicyLocal,
				InternalTrafficPolicy:    corev1.ServiceInternalTrafficPolicyLocal,
				LoadBalancerSourceRanges: []string{"10.0.0.0/8"},
				LoadBalancerClass:        "example.com/internal",
			},
		},
	}
}

// TestEditThroughV1alpha1 is kubectl edit through v1alpha1 of a Robot
// written as v1beta1: read as v1alpha1 (JSON, as a client gets it), change
// what v1alpha1 shows, write it back. The v1beta1 fields it could not show
// (the second port, the strategy, the sidecar and the init container, the
// grace period and the preStop hook) are all still there, and the edits
// apply.
func TestEditThroughV1alpha1(t *testing.T) {
	scheme := newScheme(t)
	tests := []struct {
		name string
		edit func(*v1alpha1.Robot)
		want func(*v1beta1.Robot)
	}{{
		name: "image changed",
		edit: func(r *v1alpha1.Robot) { r.Spec.Image = "registry.example.com/web:2.0" },
		want: func(r *v1beta1.Robot) { r.Spec.Image = "registry.example.com/web:2.0" },
	}, {
		name: "port changed: the first port's number, the second kept",
		edit: func(r *v1alpha1.Robot) { r.Spec.Port = ptr.To[int32](8081) },
		want: func(r *v1beta1.Robot) { r.Spec.Ports[0].ContainerPort = 8081 },
	}, {
		name: "port removed: no ports, so no Service",
		edit: func(r *v1alpha1.Robot) { r.Spec.Port = nil },
		want: func(r *v1beta1.Robot) { r.Spec.Ports = nil },
	}, {
		name: "placement changed through its v1alpha1 fields",
		edit: func(r *v1alpha1.Robot) { r.Spec.PriorityClassName = "low" },
		want: func(r *v1beta1.Robot) { r.Spec.Placement.PriorityClassName = "low" },
	}, {
		name: "service type to NodePort: the load balancer's fields dropped, as the API server drops a Service's",
		edit: func(r *v1alpha1.Robot) { r.Spec.Service.Type = v1alpha1.ServiceTypeNodePort },
		want: func(r *v1beta1.Robot) {
			r.Spec.Service.Type = v1beta1.ServiceTypeNodePort
			r.Spec.Service.LoadBalancerSourceRanges, r.Spec.Service.LoadBalancerClass = nil, ""
		},
	}, {
		name: "service type to ClusterIP: externalTrafficPolicy and the nodePort dropped too, metadata and servicePort kept",
		edit: func(r *v1alpha1.Robot) { r.Spec.Service.Type = v1alpha1.ServiceTypeClusterIP },
		want: func(r *v1beta1.Robot) {
			*r.Spec.Service = v1beta1.RobotService{Type: v1beta1.ServiceTypeClusterIP, Annotations: r.Spec.Service.Annotations,
				Labels: r.Spec.Service.Labels, InternalTrafficPolicy: r.Spec.Service.InternalTrafficPolicy}
			r.Spec.Ports[0].NodePort = 0
		},
	}, {
		name: "service removed: the default Service, with none of the kept fields and no nodePort",
		edit: func(r *v1alpha1.Robot) { r.Spec.Service = nil },
		want: func(r *v1beta1.Robot) { r.Spec.Service, r.Spec.Ports[0].NodePort = nil, 0 },
	}, {
		name: "an annotation added",
		edit: func(r *v1alpha1.Robot) { r.Annotations["note"] = "edited" },
		want: func(r *v1beta1.Robot) { r.Annotations["note"] = "edited" },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var alpha v1alpha1.Robot
			convert(t, scheme, twoPortRobot(), &alpha)
			body, err := json.Marshal(&alpha)
			if err != nil {
				t.Fatal(err)
			}
			var read v1alpha1.Robot
			if err := json.Unmarshal(body, &read); err != nil {
				t.Fatal(err)
			}
			tt.edit(&read)
			var got v1beta1.Robot
			convert(t, scheme, &read, &got)
			want := twoPortRobot()
			tt.want(want)
			if !apiequality.Semantic.DeepEqual(want, &got) {
				t.Fatalf("after the edit through v1alpha1 (- want, + got):\n%s", diff.Diff(want, &got))
			}
			// The webhook's conversion, on JSON, restores the same.
			read.APIVersion, read.Kind = v1alpha1.SchemeGroupVersion.String(), "Robot"
			var fromJSON v1beta1.Robot
			convertJSON(t, &read, v1beta1.SchemeGroupVersion.String(), &fromJSON)
			agree(t, 0, &got, &fromJSON)
		})
	}
}

// TestServicePortIsNoPlainPort: one TCP port named http with a servicePort
// or a nodePort is more than v1alpha1's port says, and is kept whole.
func TestServicePortIsNoPlainPort(t *testing.T) {
	scheme := newScheme(t)
	for name, port := range map[string]v1beta1.RobotPort{
		"servicePort": {Name: v1alpha1.PortName, ContainerPort: 8080, Protocol: corev1.ProtocolTCP, ServicePort: 80},
		"nodePort":    {Name: v1alpha1.PortName, ContainerPort: 8080, Protocol: corev1.ProtocolTCP, NodePort: 30080},
	} {
		robot := &v1beta1.Robot{
			ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
			Spec: v1beta1.RobotSpec{
				Image:   "registry.example.com/hello:1.0",
				Ports:   []v1beta1.RobotPort{port},
				Service: &v1beta1.RobotService{Type: v1beta1.ServiceTypeNodePort},
			},
		}
		var alpha v1alpha1.Robot
		convert(t, scheme, robot.DeepCopy(), &alpha)
		if _, ok := alpha.Annotations[v1alpha1.ConversionDataAnnotation]; !ok {
			t.Errorf("%s: no %s annotation on the v1alpha1 Robot", name, v1alpha1.ConversionDataAnnotation)
		}
		var back v1beta1.Robot
		convert(t, scheme, &alpha, &back)
		if !apiequality.Semantic.DeepEqual(robot, &back) {
			t.Errorf("%s: lost through v1alpha1 (- original, + back):\n%s", name, diff.Diff(robot, &back))
		}
	}
}

func TestPlainRobotNeedsNoAnnotation(t *testing.T) {
	scheme := newScheme(t)
	robot := &v1beta1.Robot{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: v1beta1.RobotSpec{
			Image: "registry.example.com/hello:1.0",
			Ports: []v1beta1.RobotPort{{Name: v1alpha1.PortName, ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		},
	}
	var alpha v1alpha1.Robot
	convert(t, scheme, robot, &alpha)
	if alpha.Annotations != nil {
		t.Errorf("a Robot that v1alpha1 can hold whole got annotations %v", alpha.Annotations)
	}
	if alpha.Spec.Port == nil || *alpha.Spec.Port != 8080 {
		t.Errorf("port = %v, want 8080", alpha.Spec.Port)
	}
}

// TestBrokenConversionDataIsIgnored: an annotation that is not the
// conversion's JSON, or holds what v1beta1 refuses, restores nothing and is
// dropped; the Robot still converts.
func TestBrokenConversionDataIsIgnored(t *testing.T) {
	scheme := newScheme(t)
	for _, value := range []string{"{not json", `{"minReadySeconds":100000}`, `{"strategy":{"type":"Sideways"}}`,
		`{"service":{"annotations":{"bad key":"x"}}}`, `{"service":{"labels":{"robot.dev/name":"other"}}}`,
		`{"service":{"loadBalancerSourceRanges":["10.0.0.1/8"]}}`, `{"service":{"loadBalancerClass":"-x"}}`,
		`{"service":{"internalTrafficPolicy":"Nearest"}}`, `{"service":{"annotations":{"robot.dev/spec-hash":"x"}}}`} {
		alpha := &v1alpha1.Robot{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", Annotations: map[string]string{v1alpha1.ConversionDataAnnotation: value}},
			Spec:       v1alpha1.RobotSpec{Image: "registry.example.com/web:1.0", Port: ptr.To[int32](8080)},
		}
		var beta v1beta1.Robot
		convert(t, scheme, alpha, &beta)
		want := v1beta1.RobotSpec{Image: "registry.example.com/web:1.0", Ports: []v1beta1.RobotPort{{Name: v1alpha1.PortName, ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}
		if !apiequality.Semantic.DeepEqual(want, beta.Spec) || beta.Annotations != nil {
			t.Errorf("annotation %s: got spec %+v and annotations %v, want the plain port and no annotation", value, beta.Spec, beta.Annotations)
		}
	}
}

// TestCaseFoldedConversionDataIsRefused: Go's encoding/json matches a key
// to a field whatever its case, the last match winning, while the webhook
// restores from a map, which keeps each key as written. An annotation whose
// keys are not the fields' names exactly, or that holds a key twice, is not
// the conversion's JSON: both conversions ignore it, so neither can restore
// something other than what was checked.
func TestCaseFoldedConversionDataIsRefused(t *testing.T) {
	scheme := newScheme(t)
	for _, value := range []string{
		`{"sidecars":[{"name":"a","image":"x"},{"name":"b","image":"x"},{"name":"c","image":"x"},{"name":"d","image":"x"},{"name":"e","image":"x"}],"SIDECARS":[{"name":"proxy","image":"x"}]}`,
		`{"terminationGracePeriodSeconds":9000000000,"TerminationGracePeriodSeconds":30}`,
		`{"Sidecars":[{"name":"proxy","image":"x"}]}`,
		`{"sidecars":[{"name":"proxy","image":"x","Image":"y"}]}`,
		`{"minReadySeconds":5,"minReadySeconds":6}`,
		`{"service":{"annotations":{"a":"1","a":"2"}}}`,
	} {
		if _, err := v1alpha1.ReadConversionData(value); !errors.Is(err, v1alpha1.ErrNotConversionData) {
			t.Errorf("ReadConversionData(%s): error %v, want ErrNotConversionData", value, err)
		}
		alpha := &v1alpha1.Robot{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", Annotations: map[string]string{v1alpha1.ConversionDataAnnotation: value}},
			Spec:       v1alpha1.RobotSpec{Image: "registry.example.com/web:1.0", Port: ptr.To[int32](8080), Service: &v1alpha1.RobotService{}},
		}
		var beta v1beta1.Robot
		convert(t, scheme, alpha, &beta)
		want := v1beta1.RobotSpec{Image: "registry.example.com/web:1.0", Ports: []v1beta1.RobotPort{{Name: v1alpha1.PortName, ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}, Service: &v1beta1.RobotService{}}
		if !apiequality.Semantic.DeepEqual(want, beta.Spec) || beta.Annotations != nil {
			t.Errorf("annotation %s: got spec %+v and annotations %v, want the plain port and no annotation", value, beta.Spec, beta.Annotations)
		}
	}
}

// TestTooLargeConversionDataIsLeftOut: the API server refuses annotations of
// over 256 KiB in all, in a conversion's answer as in a write. A Robot whose
// annotations and the fields v1alpha1 keeps would not fit is converted
// without the annotation, by the typed conversion as by the webhook's.
func TestTooLargeConversionDataIsLeftOut(t *testing.T) {
	scheme := newScheme(t)
	for _, size := range []int{262068, 200 << 10} {
		robot := twoPortRobot()
		robot.APIVersion, robot.Kind = v1beta1.SchemeGroupVersion.String(), "Robot"
		robot.Annotations = map[string]string{"big": strings.Repeat("x", size)}
		var typed v1alpha1.Robot
		convert(t, scheme, robot.DeepCopy(), &typed)
		if errs := apivalidation.ValidateAnnotations(typed.Annotations, field.NewPath("metadata", "annotations")); len(errs) > 0 {
			t.Errorf("annotations of %d bytes: the API server would refuse the typed conversion's: %v", size, errs.ToAggregate())
		}
		_, kept := typed.Annotations[v1alpha1.ConversionDataAnnotation]
		if want := size < 256<<10-1000; kept != want {
			t.Errorf("annotations of %d bytes: conversion-data kept %v, want %v", size, kept, want)
		}
		raw, err := json.Marshal(robot)
		if err != nil {
			t.Fatal(err)
		}
		converted, _, err := conversion.Convert(raw, v1alpha1.SchemeGroupVersion.String())
		if err != nil {
			t.Fatal(err)
		}
		var fromJSON v1alpha1.Robot
		if err := json.Unmarshal(converted, &fromJSON); err != nil {
			t.Fatal(err)
		}
		agree(t, size, &typed, &fromJSON)
	}
}

// TestPlantedConversionDataIsRemoved: read as v1alpha1, a Robot that needs
// no annotation has none, whatever v1beta1 stored.
func TestPlantedConversionDataIsRemoved(t *testing.T) {
	scheme := newScheme(t)
	robot := &v1beta1.Robot{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", Annotations: map[string]string{v1alpha1.ConversionDataAnnotation: `{"minReadySeconds":99}`}},
		Spec:       v1beta1.RobotSpec{Image: "registry.example.com/web:1.0"},
	}
	var alpha v1alpha1.Robot
	convert(t, scheme, robot, &alpha)
	if alpha.Annotations != nil {
		t.Errorf("annotations %v, want none", alpha.Annotations)
	}
}

// TestAgreesWithTheJSONConversion: the webhook converts Robots as JSON,
// moving only what differs between the versions (internal/conversion).
// On every Robot that Go can hold, it gives what this typed conversion
// gives, in both directions.
func TestAgreesWithTheJSONConversion(t *testing.T) {
	scheme := newScheme(t)
	filler := robotFuzzer(scheme, 3)
	for i := range roundTrips / 10 {
		var alpha v1alpha1.Robot
		filler.Fill(&alpha)
		alpha.APIVersion, alpha.Kind = v1alpha1.SchemeGroupVersion.String(), "Robot"
		var typedBeta v1beta1.Robot
		convert(t, scheme, alpha.DeepCopy(), &typedBeta)
		var jsonBeta v1beta1.Robot
		convertJSON(t, &alpha, v1beta1.SchemeGroupVersion.String(), &jsonBeta)
		agree(t, i, &typedBeta, &jsonBeta)

		var beta v1beta1.Robot
		filler.Fill(&beta)
		beta.APIVersion, beta.Kind = v1beta1.SchemeGroupVersion.String(), "Robot"
		var typedAlpha v1alpha1.Robot
		convert(t, scheme, beta.DeepCopy(), &typedAlpha)
		var jsonAlpha v1alpha1.Robot
		convertJSON(t, &beta, v1alpha1.SchemeGroupVersion.String(), &jsonAlpha)
		agree(t, i, &typedAlpha, &jsonAlpha)
	}
}

// convertJSON converts in through the webhook's conversion into out.
func convertJSON(t *testing.T, in any, desired string, out any) {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	converted, ignored, err := conversion.Convert(raw, desired)
	if err != nil || ignored != nil {
		t.Fatalf("converting to %s: error %v, ignored %+v\n%s", desired, err, ignored, raw)
	}
	if err := json.Unmarshal(converted, out); err != nil {
		t.Fatalf("the JSON conversion's output does not decode: %v\n%s", err, converted)
	}
}

// agree fails unless the typed and the JSON conversion's outputs are the
// same, their annotations compared as JSON: the JSON conversion writes a
// port's keys in another order.
func agree(t *testing.T, i int, typed, fromJSON interface {
	metav1.Object
	runtime.Object
}) {
	t.Helper()
	// The scheme's conversion leaves apiVersion and kind to its caller.
	typed.GetObjectKind().SetGroupVersionKind(fromJSON.GetObjectKind().GroupVersionKind())
	typedData, jsonData := typed.GetAnnotations()[v1alpha1.ConversionDataAnnotation], fromJSON.GetAnnotations()[v1alpha1.ConversionDataAnnotation]
	if (typedData == "") != (jsonData == "") || (typedData != "" && !sameJSON(t, typedData, jsonData)) {
		t.Fatalf("Robot %d: annotation %s is %q from the typed conversion, %q from the JSON one", i, v1alpha1.ConversionDataAnnotation, typedData, jsonData)
	}
	for _, object := range []metav1.Object{typed, fromJSON} {
		if annotations := object.GetAnnotations(); annotations != nil {
			delete(annotations, v1alpha1.ConversionDataAnnotation)
		}
	}
	if !apiequality.Semantic.DeepEqual(typed, fromJSON) {
		t.Fatalf("Robot %d: the conversions disagree (- typed, + JSON):\n%s", i, diff.Diff(typed, fromJSON))
	}
}

func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	return apiequality.Semantic.DeepEqual(x, y)
}
