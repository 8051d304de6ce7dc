package conversion

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/json"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
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
