package conversion

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/json"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// validateRobot runs the CEL rules of the CRD's v1beta1 schema on robot, a
// Robot as JSON, as the API server does at create, and returns the errors.
func validateRobot(t *testing.T, robot string) fieldpath.ErrorList {
	t.Helper()
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(robotSchemas(t)["v1beta1"], &internal, nil); err != nil {
		t.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		t.Fatal(err)
	}
	// apimachinery's json decodes integers as int64, as the API server does.
	var obj map[string]any
	if err := json.Unmarshal([]byte(robot), &obj); err != nil {
		t.Fatal(err)
	}
	validator := cel.NewValidator(structural, true, celconfig.PerCallLimit)
	errs, _ := validator.Validate(context.Background(), fieldpath.NewPath("robot"), structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return errs
}

// TestProbePortRules: a probe of the Robot's container or of a sidecar
// names a port by number, or by the name of one of that container's ports:
// the kubelet looks the name up there, and a probe on a name that no port
// has never passes.
func TestProbePortRules(t *testing.T) {
	robot := func(spec string) string {
		return `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"r"},"spec":{"image":"nginx",` + spec + `}}`
	}
	ports := `"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}]`
	sidecar := func(probe string) string {
		return `"sidecars":[{"name":"proxy","image":"envoy","ports":[{"name":"admin","containerPort":9901,"protocol":"TCP"}],` + probe + `}]`
	}
	for _, tc := range []struct {
		name, spec string
		refused    string // the field of the error; "" for none
	}{
		{"readiness on a named port", ports + `,"readinessProbe":{"httpGet":{"port":"http"}}`, ""},
		{"readiness on a number", ports + `,"readinessProbe":{"httpGet":{"port":9999}}`, ""},
		{"readiness on no port", ports + `,"readinessProbe":{"httpGet":{"port":"htp"}}`, "robot.spec.readinessProbe.httpGet.port"},
		{"readiness without ports", `"readinessProbe":{"tcpSocket":{"port":"http"}}`, "robot.spec.readinessProbe.tcpSocket.port"},
		{"liveness on no port", ports + `,"livenessProbe":{"tcpSocket":{"port":"admin"}}`, "robot.spec.livenessProbe.tcpSocket.port"},
		{"startup on no port", ports + `,"startupProbe":{"httpGet":{"port":"metrics"}}`, "robot.spec.startupProbe.httpGet.port"},
		{"exec probe", `"livenessProbe":{"exec":{"command":["true"]}}`, ""},
		{"sidecar on its own port", ports + "," + sidecar(`"readinessProbe":{"httpGet":{"port":"admin"}}`), ""},
		{"sidecar on a port of spec.ports", ports + "," + sidecar(`"livenessProbe":{"tcpSocket":{"port":"http"}}`), "robot.spec.sidecars[0].livenessProbe.tcpSocket.port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := validateRobot(t, robot(tc.spec))
			if tc.refused == "" {
				if len(errs) != 0 {
					t.Errorf("refused: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tc.refused || !strings.Contains(errs[0].Detail, "must be a port number or the name of one of") {
				t.Errorf("errors %v, want one about %s", errs, tc.refused)
			}
		})
	}
}

// TestImageRuleIsTheGoOne: the CRD's rule on an image and
// robotv1beta1.ValidateImage take and refuse the same references, and say
// the same of those they refuse.
func TestImageRuleIsTheGoOne(t *testing.T) {
	digest := strings.Repeat("0123456789abcdef", 4)
	for _, tc := range []struct {
		image string
		want  string // what the refusal says; "" when taken
	}{
		{"nginx", ""},
		{"nginx:1.27", ""},
		{"nginx:latest", ""},
		{"docker.io/library/nginx", ""},
		{"localhost:5000/app:v1", ""},
		{"localhost/app", ""},
		{"registry.example.com:443/team/app@sha256:" + digest, ""},
		{"registry.example.com/team/app:1.4@sha256:" + digest, ""},
		{"nginx@sha256:" + digest, ""},
		{"ghcr.io/acme/robot:1.4.2", ""},
		{"ghcr.io/acme/robot_tool__x.y-z:V1_a.b-c", ""},
		{"Registry.Example.com/app", ""},
		{"[::1]:5000/app:v1", ""},
		{"127.0.0.1:5000/app", ""},
		{"nginx:1.27:latest", `"nginx:1.27:latest" has two tags`},
		{"registry.example.com:5000/app:1:2", "has two tags"},
		{"nginx:", `has a ":" with no tag after it`},
		{"nginx:@sha256:" + digest, `has a ":" with no tag after it`},
		{"nginx@sha256:abc", "has a digest that is not"},
		{"nginx@sha256:" + strings.ToUpper(digest), "has a digest that is not"},
		{"nginx@md5:" + digest, "has a digest that is not"},
		{"Nginx:latest", "has upper-case letters"},
		{"team/App", "has upper-case letters"},
		{"nginx/", "is not one"},
		{"-nginx", "is not one"},
		{"nginx:-1", "is not one"},
		{"nginx:" + strings.Repeat("a", 129), "is not one"},
		{"http://registry.example.com/app", "is not one"},
	} {
		t.Run(tc.image, func(t *testing.T) {
			goErr := robotv1beta1.ValidateImage("spec.image", tc.image)
			errs := validateRobot(t, `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"r"},"spec":{"image":`+strconv.Quote(tc.image)+`}}`)
			if tc.want == "" {
				if goErr != nil || len(errs) != 0 {
					t.Errorf("refused: Go %v, CRD %v", goErr, errs)
				}
				return
			}
			if goErr == nil || !strings.Contains(goErr.Error(), tc.want) {
				t.Errorf("Go says %v, want %q", goErr, tc.want)
			}
			if len(errs) != 1 || errs[0].Field != "robot.spec.image" || !strings.Contains(errs[0].Detail, tc.want) ||
				!strings.Contains(errs[0].Detail, "image must be an image reference such as nginx:1.27") {
				t.Errorf("the CRD says %v, want one error of robot.spec.image with %q", errs, tc.want)
			}
		})
	}
}

// TestAdmissionRules: each mistake that the operator could only find once
// it builds the Deployment, the Service or the HTTPRoute (or that would
// silently do nothing) is refused by the CRD's rules, on the field it is
// about, in words.
func TestAdmissionRules(t *testing.T) {
	robot := func(spec string) string {
		return `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"r"},"spec":{"image":"nginx",` + spec + `}}`
	}
	ports := `"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}]`
	for _, tc := range []struct {
		name, spec string
		field      string // "" when taken
		want       string
	}{
		{"limits above requests", `"resources":{"limits":{"memory":"256Mi","cpu":2},"requests":{"memory":"128Mi","cpu":"500m"}}`, "", ""},
		{"limits equal requests", `"resources":{"limits":{"cpu":1},"requests":{"cpu":"1000m"}}`, "", ""},
		{"memory limit below request", `"resources":{"limits":{"memory":"64Mi"},"requests":{"memory":"128Mi"}}`,
			"robot.spec.resources", "resources.limits.memory (64Mi) must be at least resources.requests.memory (128Mi)"},
		{"cpu limit below request, numbers", `"resources":{"limits":{"cpu":1},"requests":{"cpu":2}}`,
			"robot.spec.resources", "resources.limits.cpu (1) must be at least resources.requests.cpu (2)"},
		{"sidecar's limit below request", `"sidecars":[{"name":"proxy","image":"envoy","resources":{"limits":{"ephemeral-storage":"1Gi"},"requests":{"ephemeral-storage":"2Gi"}}}]`,
			"robot.spec.sidecars[0].resources", "resources.limits.ephemeral-storage (1Gi) must be at least"},
		{"64MB", `"resources":{"limits":{"memory":"64MB"}}`,
			"robot.spec.resources.limits[memory]", `"64MB" is not one: write 64M or 64Mi`},
		{"1.5 cores", `"resources":{"requests":{"cpu":"1.5 cores"}}`,
			"robot.spec.resources.requests[cpu]", "must be a quantity such as 128Mi, 1Gi, 500m or 0.5"},
		{"1e1.5", `"initContainers":[{"name":"migrate","image":"app","resources":{"requests":{"memory":"1e1.5"}}}]`,
			"robot.spec.initContainers[0].resources.requests[memory]", `"1e1.5" is not one`},
		{"negative quantity", `"volumes":[{"name":"scratch","emptyDir":{"sizeLimit":"-1Gi"}}]`,
			"robot.spec.volumes[0].emptyDir.sizeLimit", "it cannot be negative"},
		{"a good probe", ports + `,"livenessProbe":{"httpGet":{"port":"http"},"successThreshold":1}`, "", ""},
		{"a probe with no action", `"readinessProbe":{"periodSeconds":5}`,
			"robot.spec.readinessProbe", "readinessProbe must have exactly one of httpGet, tcpSocket, grpc or exec"},
		{"a probe with two actions", `"livenessProbe":{"exec":{"command":["true"]},"grpc":{"port":9090}}`,
			"robot.spec.livenessProbe", "exactly one of"},
		{"a sidecar's probe with no action", `"sidecars":[{"name":"proxy","image":"envoy","startupProbe":{}}]`,
			"robot.spec.sidecars[0].startupProbe", "startupProbe must have exactly one of"},
		{"probe port 0", `"readinessProbe":{"tcpSocket":{"port":0}}`,
			"robot.spec.readinessProbe", "port must be a number from 1 to 65535"},
		{"grpc port too high", `"livenessProbe":{"grpc":{"port":70000}}`,
			"robot.spec.livenessProbe", "port must be a number from 1 to 65535"},
		{"exec with no command", `"livenessProbe":{"exec":{}}`,
			"robot.spec.livenessProbe.exec", "livenessProbe.exec.command must name the command to run"},
		{"liveness success threshold", `"livenessProbe":{"exec":{"command":["true"]},"successThreshold":3}`,
			"robot.spec.livenessProbe.successThreshold", "livenessProbe.successThreshold must be 1"},
		{"readiness grace period", `"readinessProbe":{"exec":{"command":["true"]},"terminationGracePeriodSeconds":10}`,
			"robot.spec.readinessProbe.terminationGracePeriodSeconds", "cannot be set"},
		{"negative period", `"startupProbe":{"exec":{"command":["true"]},"periodSeconds":-1}`,
			"robot.spec.startupProbe", "cannot be negative"},
		{"LoadBalancer without ports", `"service":{"type":"LoadBalancer"}`,
			"robot.spec.service", "a Service needs ports: set spec.ports, or remove spec.service"},
		{"service labels without ports", `"service":{"type":"ClusterIP","labels":{"team":"a"}}`,
			"robot.spec.service", "a Service needs ports"},
		{"None without ports", `"service":{"type":"None"}`, "", ""},
		{"service annotation key", ports + `,"service":{"type":"ClusterIP","annotations":{"not a key":"x"}}`,
			"robot.spec.service.annotations", "every service.annotations key must be an annotation key"},
		{"upper-case annotation key", ports + `,"service":{"type":"ClusterIP","annotations":{"Example.com/Owner":"x"}}`, "", ""},
		{"service label key", ports + `,"service":{"type":"ClusterIP","labels":{"team/":"a"}}`,
			"robot.spec.service.labels", "every service.labels key must be a label key"},
		{"service label value", ports + `,"service":{"type":"ClusterIP","labels":{"team":"blue-"}}`,
			"robot.spec.service.labels", "every service.labels value must be a label value"},
		{"pod label value", `"podLabels":{"team":"a b"}`, "robot.spec.podLabels", "every podLabels value must be a label value"},
		{"pod annotation key", `"podAnnotations":{"-x":"y"}`, "robot.spec.podAnnotations", "every podAnnotations key must be an annotation key"},
		{"node selector key", `"placement":{"nodeSelector":{"zone a":"x"}}`, "robot.spec.placement.nodeSelector", "every placement.nodeSelector key must be a label key"},
		{"hostname with a scheme", ports + `,"http":{"gateways":[{"name":"gw"}],"hostnames":["https://robot.example.com"]}`,
			"robot.spec.http.hostnames", "hostnames are lower-case DNS names, with no scheme, port or path"},
		{"wildcard hostname", ports + `,"http":{"gateways":[{"name":"gw"}],"hostnames":["*.example.com"]}`, "", ""},
		{"path prefix with //", ports + `,"http":{"gateways":[{"name":"gw"}],"pathPrefixes":["/api//v1"]}`,
			"robot.spec.http.pathPrefixes", "pathPrefixes are paths such as /api"},
		{"path prefix without /", ports + `,"http":{"gateways":[{"name":"gw"}],"pathPrefixes":["api"]}`,
			"robot.spec.http.pathPrefixes", "they start with '/'"},
		{"gateway namespace", ports + `,"http":{"gateways":[{"name":"gw","namespace":"Infra"}]}`,
			"robot.spec.http.gateways[0].namespace", "must be the name of a namespace"},
		{"toleration Exists with a value", `"placement":{"tolerations":[{"key":"gpu","operator":"Exists","value":"yes"}]}`,
			"robot.spec.placement.tolerations", "a toleration with operator Exists cannot have a value"},
		{"toleration effect", `"placement":{"tolerations":[{"key":"gpu","operator":"Equal","value":"yes","effect":"NoExec"}]}`,
			"robot.spec.placement.tolerations", "a toleration's effect must be NoSchedule, PreferNoSchedule or NoExecute"},
		{"toleration seconds", `"placement":{"tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule","tolerationSeconds":30}]}`,
			"robot.spec.placement.tolerations", "tolerationSeconds can be set only with effect NoExecute"},
		{"toleration with no key", `"placement":{"tolerations":[{"operator":"Equal","value":"x"}]}`,
			"robot.spec.placement.tolerations", "a toleration without a key must have operator Exists"},
		{"env with a value and a valueFrom", `"env":[{"name":"A","value":"1","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]`,
			"robot.spec.env", "an env variable has a value or a valueFrom, not both"},
		{"an init container's env with no source", `"initContainers":[{"name":"migrate","image":"app","env":[{"name":"A","valueFrom":{}}]}]`,
			"robot.spec.initContainers[0].env", "a valueFrom has exactly one of"},
		{"envFrom of two", `"envFrom":[{"configMapRef":{"name":"c"},"secretRef":{"name":"s"}}]`,
			"robot.spec.envFrom", "every envFrom entry has exactly one of configMapRef or secretRef"},
		{"env from a Secret", `"env":[{"name":"A","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}],"envFrom":[{"secretRef":{"name":"s"}}]`, "", ""},
		{"topology spread skew 0", `"placement":{"topologySpreadConstraints":[{"maxSkew":0,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}]}`,
			"robot.spec.placement.topologySpreadConstraints", "a topology spread constraint has a maxSkew of at least 1"},
		{"topology spread", `"placement":{"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"ScheduleAnyway"}]}`, "", ""},
		{"priority class", `"placement":{"priorityClassName":"High"}`,
			"robot.spec.placement.priorityClassName", "priorityClassName must be the name of a PriorityClass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := validateRobot(t, robot(tc.spec))
			if tc.field == "" {
				if len(errs) != 0 {
					t.Errorf("refused: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tc.field || !strings.Contains(errs[0].Detail, tc.want) {
				t.Errorf("errors %v, want one of %s that says %q", errs, tc.field, tc.want)
			}
		})
	}
}

// TestServicePortRules: the CRD's rules on a port's servicePort and nodePort
// and pkg/apis/robot/v1beta1's checks in Go refuse the same Robots, and the
// CRD's message names the field.
func TestServicePortRules(t *testing.T) {
	robot := func(spec string) string {
		return `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"r"},"spec":{"image":"nginx",` + spec + `}}`
	}
	for _, tc := range []struct {
		name, spec string
		refused    string // a part of the CRD's message; "" for none
	}{
		{"servicePort", `"ports":[{"name":"http","containerPort":8080,"servicePort":80,"protocol":"TCP"}]`, ""},
		{"servicePort of another port's containerPort", `"ports":[{"name":"http","containerPort":8080,"servicePort":80,"protocol":"TCP"},{"name":"alt","containerPort":80,"servicePort":8081,"protocol":"TCP"}]`, ""},
		{"one Service port, two protocols", `"ports":[{"name":"dns","containerPort":5353,"servicePort":53,"protocol":"TCP"},{"name":"dns-udp","containerPort":5354,"servicePort":53,"protocol":"UDP"}]`, ""},
		{"two servicePorts alike", `"ports":[{"name":"http","containerPort":8080,"servicePort":80,"protocol":"TCP"},{"name":"alt","containerPort":8081,"servicePort":80,"protocol":"TCP"}]`, "same Service port and protocol"},
		{"a servicePort that is another's containerPort", `"ports":[{"name":"http","containerPort":8080,"servicePort":9090,"protocol":"TCP"},{"name":"metrics","containerPort":9090,"protocol":"TCP"}]`, "same Service port and protocol"},
		{"servicePort 0", `"ports":[{"name":"http","containerPort":8080,"servicePort":0,"protocol":"TCP"}]`, "servicePort"},
		{"servicePort 65536", `"ports":[{"name":"http","containerPort":8080,"servicePort":65536,"protocol":"TCP"}]`, "servicePort"},
		{"nodePort on NodePort", `"service":{"type":"NodePort"},"ports":[{"name":"http","containerPort":8080,"nodePort":30080,"protocol":"TCP"}]`, ""},
		{"nodePort on LoadBalancer", `"service":{"type":"LoadBalancer"},"ports":[{"name":"http","containerPort":8080,"nodePort":30080,"protocol":"TCP"}]`, ""},
		{"nodePort out of the default range", `"service":{"type":"NodePort"},"ports":[{"name":"http","containerPort":8080,"nodePort":40000,"protocol":"TCP"}]`, ""},
		{"nodePort on ClusterIP", `"service":{"type":"ClusterIP"},"ports":[{"name":"http","containerPort":8080,"nodePort":30080,"protocol":"TCP"}]`, "nodePort can be set only when service.type is NodePort or LoadBalancer"},
		{"nodePort without service", `"ports":[{"name":"http","containerPort":8080,"nodePort":30080,"protocol":"TCP"}]`, "nodePort can be set only when service.type is NodePort or LoadBalancer"},
		{"nodePort 70000", `"service":{"type":"NodePort"},"ports":[{"name":"http","containerPort":8080,"nodePort":70000,"protocol":"TCP"}]`, "nodePort"},
		{"two nodePorts alike", `"service":{"type":"NodePort"},"ports":[{"name":"http","containerPort":8080,"nodePort":30080,"protocol":"TCP"},{"name":"alt","containerPort":8081,"nodePort":30080,"protocol":"TCP"}]`, "same nodePort and protocol"},
		{"one nodePort, two protocols", `"service":{"type":"NodePort"},"ports":[{"name":"dns","containerPort":53,"nodePort":30053,"protocol":"TCP"},{"name":"dns-udp","containerPort":53,"nodePort":30053,"protocol":"UDP"}]`, ""},
		{"a sidecar's servicePort", `"sidecars":[{"name":"proxy","image":"envoy","ports":[{"name":"admin","containerPort":9901,"servicePort":80,"protocol":"TCP"}]}]`, "a sidecar's ports cannot set servicePort or nodePort"},
		{"a sidecar's nodePort", `"service":{"type":"NodePort"},"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],"sidecars":[{"name":"proxy","image":"envoy","ports":[{"name":"admin","containerPort":9901,"nodePort":30081,"protocol":"TCP"}]}]`, "a sidecar's ports cannot set servicePort or nodePort"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := robot(tc.spec)
			var errs fieldpath.ErrorList
			for _, err := range robotRules(t)["v1beta1"].check([]byte(raw)) {
				if !strings.Contains(err.Error(), "metadata") {
					errs = append(errs, err)
				}
			}
			var object robotv1beta1.Robot
			if err := json.Unmarshal([]byte(raw), &object); err != nil {
				t.Fatal(err)
			}
			spec := &object.Spec
			goErr := errors.Join(robotv1beta1.ValidatePorts(spec.Ports), robotv1beta1.ValidateNodePorts(spec.Ports, spec.Service),
				robotv1beta1.ValidateContainers(spec.InitContainers, spec.Sidecars))
			if tc.refused == "" {
				if len(errs) != 0 || goErr != nil {
					t.Errorf("refused: by the CRD %v, in Go %v", errs, goErr)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.refused) {
				t.Errorf("the CRD's errors %v, want one that says %q", errs, tc.refused)
			}
			// In Go, 0 is no servicePort, as the API server never stores
			// one: the schema's minimum alone refuses it.
			if zero := strings.Contains(tc.spec, `"servicePort":0,`); goErr == nil && !zero {
				t.Errorf("the CRD refuses it, the checks in Go do not")
			}
		})
	}
}
