package conversion

import (
	"context"
	"errors"
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
		{"a sidecar's nodePort", `"service":{"type":"NodePort"},"sidecars":[{"name":"proxy","image":"envoy","ports":[{"name":"admin","containerPort":9901,"nodePort":30081,"protocol":"TCP"}]}]`, "a sidecar's ports cannot set servicePort or nodePort"},
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
