//go:build chart

// Package chart tests the Helm chart in artifacts/chart against the
// kustomize manifests it must render the same objects as. It runs helm and
// kubectl (for kustomize) from the paths in $HELM and $KUBECTL: run it with
// `make chart-test`.
package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/robot-operator/robot-operator/test/internal/manifests"
)

const (
	root      = "../.."
	chart     = root + "/artifacts/chart"
	namespace = "robot-operator"
)

// helmTemplate renders the chart as `helm install -n robot-operator` would,
// with the CRD, and the given --set values.
func helmTemplate(t *testing.T, set ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", "robot-operator", chart, "--namespace", namespace, "--include-crds"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return manifests.Objects(t, manifests.Run(t, manifests.Tool(t, "HELM", "chart-test"), args...))
}

func kustomize(t *testing.T, dir string) map[string]*unstructured.Unstructured {
	t.Helper()
	return manifests.Objects(t, manifests.Run(t, manifests.Tool(t, "KUBECTL", "chart-test"), "kustomize", dir))
}

// compare fails for each object that one side has and the other lacks or
// holds otherwise, apart from those listed in onlyKustomize.
func compare(t *testing.T, helm, kust map[string]*unstructured.Unstructured, onlyKustomize ...string) {
	t.Helper()
	for key, want := range kust {
		got, ok := helm[key]
		switch {
		case slices.Contains(onlyKustomize, key):
			if ok {
				t.Errorf("the chart renders %s, which it should leave to helm install --create-namespace", key)
			}
		case !ok:
			t.Errorf("the chart does not render %s", key)
		default:
			wantJSON, gotJSON := manifests.Indent(t, want.Object), manifests.Indent(t, got.Object)
			if wantJSON != gotJSON {
				t.Errorf("%s differs:\n%s", key, manifests.FirstDifference("kustomize", wantJSON, "the chart", gotJSON))
			}
		}
	}
	for key := range helm {
		if _, ok := kust[key]; !ok {
			t.Errorf("the chart renders %s, which kustomize does not", key)
		}
	}
}

// The Namespace is the one object of artifacts/deploy that the chart does
// not render: Helm needs the release's namespace before it installs
// anything, and a chart cannot own the namespace it is installed into.
var operatorNamespace = "Namespace /" + namespace

// TestChartDefaultsRenderArtifactsDeploy: with its default values, the chart
// renders the objects of artifacts/deploy, field for field.
func TestChartDefaultsRenderArtifactsDeploy(t *testing.T) {
	helm, kust := helmTemplate(t), kustomize(t, root+"/artifacts/deploy")
	compare(t, helm, kust, operatorNamespace)
	t.Logf("%d objects compared", len(helm))
}

// TestChartWatchNamespaceRendersArtifactsDeployNamespaced: watchNamespace
// renders artifacts/deploy-namespaced, whose watched namespace is robots.
func TestChartWatchNamespaceRendersArtifactsDeployNamespaced(t *testing.T) {
	helm, kust := helmTemplate(t, "watchNamespace=robots"), kustomize(t, root+"/artifacts/deploy-namespaced")
	compare(t, helm, kust, operatorNamespace)
}

// TestOnlyTheClusterWideOperatorMayCleanStoredVersions: the right to update
// the CRD's status, which only the storage migration uses, is granted to the
// operator that watches every namespace, and to no operator with -namespace:
// that one does not migrate (it cannot see every Robot).
func TestOnlyTheClusterWideOperatorMayCleanStoredVersions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objects map[string]*unstructured.Unstructured
		want    bool
	}{
		{"artifacts/deploy", kustomize(t, root+"/artifacts/deploy"), true},
		{"artifacts/deploy-namespaced", kustomize(t, root+"/artifacts/deploy-namespaced"), false},
		{"the chart", helmTemplate(t), true},
		{"the chart with watchNamespace", helmTemplate(t, "watchNamespace=robots"), false},
	} {
		var granted []string
		for key, object := range tc.objects {
			if kind := object.GetKind(); kind != "ClusterRole" && kind != "Role" {
				continue
			}
			rules, _, err := unstructured.NestedSlice(object.Object, "rules")
			if err != nil {
				t.Fatalf("%s: %s: %v", tc.name, key, err)
			}
			for _, rule := range rules {
				resources, _, _ := unstructured.NestedStringSlice(rule.(map[string]any), "resources")
				if slices.Contains(resources, "customresourcedefinitions/status") {
					granted = append(granted, key)
				}
			}
		}
		if got := len(granted) > 0; got != tc.want {
			t.Errorf("%s: customresourcedefinitions/status granted by %v; want granted: %v", tc.name, granted, tc.want)
		}
	}
}

// TestChartMonitoringRendersArtifactsMonitoring: the ServiceMonitor and the
// PrometheusRule render artifacts/deploy with the artifacts/monitoring
// component.
func TestChartMonitoringRendersArtifactsMonitoring(t *testing.T) {
	dir := filepath.Join(root, "_output", "chart-test-monitoring")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	overlay := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../artifacts/deploy\ncomponents:\n- ../../artifacts/monitoring\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	helm := helmTemplate(t, "serviceMonitor.enabled=true", "prometheusRule.enabled=true")
	compare(t, helm, kustomize(t, dir), operatorNamespace)
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "Service"} {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(helm)), func(k string) bool { return strings.HasPrefix(k, kind+" ") }) {
			t.Errorf("no %s rendered", kind)
		}
	}
	// Off by default.
	for key := range helmTemplate(t) {
		if strings.HasPrefix(key, "ServiceMonitor ") || strings.HasPrefix(key, "PrometheusRule ") {
			t.Errorf("%s is rendered with the default values", key)
		}
	}
}

// TestChartConfigRolloutsRenderTheComponent: configRollouts.secrets renders
// artifacts/deploy and deploy-namespaced with the config-rollouts-secrets
// component; Secrets may not be listed by default, ConfigMaps may, and
// configRollouts.configMaps=false takes that away.
func TestChartConfigRolloutsRenderTheComponent(t *testing.T) {
	for _, tc := range []struct {
		name, base string
		values     []string
	}{
		{"deploy", "artifacts/deploy", nil},
		{"deploy-namespaced", "artifacts/deploy-namespaced", []string{"watchNamespace=robots"}},
	} {
		dir := filepath.Join(root, "_output", "chart-test-config-rollouts-"+tc.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		overlay := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../" + tc.base + "\ncomponents:\n- ../../artifacts/config-rollouts-secrets\n"
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
			t.Fatal(err)
		}
		helm := helmTemplate(t, append(tc.values, "configRollouts.secrets=true")...)
		compare(t, helm, kustomize(t, dir), operatorNamespace)
		if !listsAndWatches(t, helm, "secrets") {
			t.Errorf("%s: configRollouts.secrets=true lets the operator list and watch no Secrets", tc.name)
		}
		defaults := helmTemplate(t, tc.values...)
		if listsAndWatches(t, defaults, "secrets") || !listsAndWatches(t, defaults, "configmaps") {
			t.Errorf("%s: by default the operator may list and watch Secrets: %v, ConfigMaps: %v; want false, true", tc.name,
				listsAndWatches(t, defaults, "secrets"), listsAndWatches(t, defaults, "configmaps"))
		}
		if listsAndWatches(t, helmTemplate(t, append(tc.values, "configRollouts.configMaps=false")...), "configmaps") {
			t.Errorf("%s: configRollouts.configMaps=false still lets the operator list and watch ConfigMaps", tc.name)
		}
	}
}

// listsAndWatches reports whether a Role or ClusterRole of objects grants
// list and watch of every object of the core group's resource.
func listsAndWatches(t *testing.T, objects map[string]*unstructured.Unstructured, resource string) bool {
	t.Helper()
	for _, object := range objects {
		if kind := object.GetKind(); kind != "ClusterRole" && kind != "Role" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(object.Object, "rules")
		for _, rule := range rules {
			r := rule.(map[string]any)
			groups, _, _ := unstructured.NestedStringSlice(r, "apiGroups")
			resources, _, _ := unstructured.NestedStringSlice(r, "resources")
			verbs, _, _ := unstructured.NestedStringSlice(r, "verbs")
			names, _, _ := unstructured.NestedStringSlice(r, "resourceNames")
			if slices.Contains(groups, "") && slices.Contains(resources, resource) && len(names) == 0 &&
				slices.Contains(verbs, "list") && slices.Contains(verbs, "watch") {
				return true
			}
		}
	}
	return false
}

// TestChartCopiesAreCurrent: the CRD and the monitoring objects that the
// chart carries are the originals, byte for byte (hack/update-chart.sh).
func TestChartCopiesAreCurrent(t *testing.T) {
	for copy, original := range map[string]string{
		"crds/robot.dev_robots.yaml":   "artifacts/crd/robot.dev_robots.yaml",
		"files/service.yaml":           "artifacts/monitoring/service.yaml",
		"files/servicemonitor.yaml":    "artifacts/monitoring/servicemonitor.yaml",
		"files/prometheusrule.yaml":    "artifacts/monitoring/prometheusrule.yaml",
		"files/aggregate-roles.yaml":   "artifacts/deploy/aggregate-roles.yaml",
		"files/size-policy.yaml":       "artifacts/deploy/size-policy.yaml",
		"files/annotation-policy.yaml": "artifacts/deploy/annotation-policy.yaml",
	} {
		a, err := os.ReadFile(filepath.Join(chart, copy))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(root, original))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("artifacts/chart/%s differs from %s: run hack/update-chart.sh", copy, original)
		}
	}
}

// TestChartValues: the values that artifacts/deploy does not use reach the
// operator's Deployment.
func TestChartValues(t *testing.T) {
	objs := helmTemplate(t,
		"image.repository=registry.example/robot-operator", "image.tag=v1.2.3", "image.pullPolicy=IfNotPresent",
		"replicas=1", "leaderElection.enabled=false", "logFormat=text", "extraArgs={-workers=8,-v=2}",
		"metrics.certSecret=robot-operator-metrics-tls", "nodeSelector.pool=system", "priorityClassName=system-cluster-critical",
		"tolerations[0].key=dedicated", "tolerations[0].operator=Exists", "resources.limits.memory=768Mi", "podDisruptionBudget.enabled=false", "aggregateRoles=false",
		"robotDisruptionBudgets=off", "sizePolicy=false", "annotationPolicy=false")
	d := objs["Deployment "+namespace+"/robot-operator"]
	if d == nil {
		t.Fatal("no Deployment rendered")
	}
	spec := d.Object["spec"].(map[string]any)
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	container := pod["containers"].([]any)[0].(map[string]any)
	var args []string
	for _, a := range container["args"].([]any) {
		args = append(args, a.(string))
	}
	for what, ok := range map[string]bool{
		"image":                            container["image"] == "registry.example/robot-operator:v1.2.3",
		"imagePullPolicy":                  container["imagePullPolicy"] == "IfNotPresent",
		"replicas":                         fmt.Sprint(spec["replicas"]) == "1",
		"no -leader-elect":                 !slices.Contains(args, "-leader-elect"),
		"-logging-format=text":             slices.Contains(args, "-logging-format=text"),
		"extra args":                       slices.Contains(args, "-workers=8") && slices.Contains(args, "-v=2"),
		"-disruption-budgets=off":          slices.Contains(args, "-disruption-budgets=off"),
		"-metrics-cert-dir":                slices.Contains(args, "-metrics-cert-dir=/etc/robot-operator/metrics-tls"),
		"the certificate's Secret mounted": strings.Contains(manifests.Indent(t, pod["volumes"]), `"secretName": "robot-operator-metrics-tls"`),
		"nodeSelector":                     strings.Contains(manifests.Indent(t, pod["nodeSelector"]), `"pool": "system"`),
		"priorityClassName":                pod["priorityClassName"] == "system-cluster-critical",
		"tolerations":                      strings.Contains(manifests.Indent(t, pod["tolerations"]), `"key": "dedicated"`),
		"resources":                        strings.Contains(manifests.Indent(t, container["resources"]), `"memory": "768Mi"`),
	} {
		if !ok {
			t.Errorf("%s: not as set; the Deployment:\n%s", what, manifests.Indent(t, d.Object))
		}
	}
	for key := range objs {
		if strings.HasPrefix(key, "PodDisruptionBudget ") || strings.Contains(key, "leader-election") || strings.Contains(key, "robot-operator-robots-") || strings.Contains(key, "robot-operator-v1alpha1-size") || strings.Contains(key, "robot-operator-annotations") {
			t.Errorf("%s is rendered although it is turned off", key)
		}
	}
}

// TestChartPolicy: each policy value other than the operator's default
// becomes its flag, as given; the defaults pass none (which
// TestChartDefaultsRenderArtifactsDeploy checks).
func TestChartPolicy(t *testing.T) {
	objs := helmTemplate(t, "policy.httpRoutes=false", `policy.routeGateways=infra/public\,infra/internal`,
		`policy.routeHostnames=team-a=*.a.example.com`, `policy.serviceAnnotations=*\,external-dns.alpha.kubernetes.io/`,
		"policy.serviceLabels=", "policy.serviceLoadBalancerClasses=example.com/internal-lb", "policy.maxTerminationGracePeriod=5m")
	d := objs["Deployment "+namespace+"/robot-operator"]
	if d == nil {
		t.Fatal("no Deployment rendered")
	}
	container := d.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	var args []string
	for _, a := range container["args"].([]any) {
		args = append(args, a.(string))
	}
	for _, want := range []string{
		"-http-routes=false",
		"-route-gateways=infra/public,infra/internal",
		"-route-hostnames=team-a=*.a.example.com",
		"-service-annotations=*,external-dns.alpha.kubernetes.io/",
		"-service-labels=",
		"-service-load-balancer-classes=example.com/internal-lb",
		"-max-termination-grace-period=5m",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q, want %s", args, want)
		}
	}
}

// TestChartPreflightOff: policy.preflight=false turns the check off and
// takes what it needs out of the RBAC: no pod is created, not even as a dry
// run, and nothing it would read is read.
func TestChartPreflightOff(t *testing.T) {
	for _, watch := range []string{"", "team-a"} {
		objs := helmTemplate(t, "policy.preflight=false", "watchNamespace="+watch)
		d := objs["Deployment "+namespace+"/robot-operator"]
		if d == nil {
			t.Fatal("no Deployment rendered")
		}
		container := d.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		if args := fmt.Sprint(container["args"]); !strings.Contains(args, "-preflight=false") {
			t.Errorf("watch %q: args %s, want -preflight=false", watch, args)
		}
		for key, obj := range objs {
			if !strings.HasPrefix(key, "ClusterRole ") && !strings.HasPrefix(key, "Role ") {
				continue
			}
			rules, _ := json.Marshal(obj.Object["rules"])
			// ConfigMaps' list and watch stay: the config rollouts' (configRollouts.configMaps).
			for _, granted := range []string{`"resources":["pods"],"verbs":["create"]`, `"resources":["configmaps","serviceaccounts"],"verbs":["get"]`, `"serviceaccounts"`, `"priorityclasses"`} {
				if strings.Contains(string(rules), granted) {
					t.Errorf("watch %q: %s still grants %s: %s", watch, key, granted, rules)
				}
			}
		}
	}
}

// TestChartCertManager: with webhook.certManager.enabled, cert-manager signs
// the webhook's certificate into the Secret the operator serves from, for
// the release's namespace, and the operator only serves it.
func TestChartCertManager(t *testing.T) {
	objs := helmTemplate(t, "webhook.certManager.enabled=true")
	certificate := objs["Certificate "+namespace+"/robot-operator-webhook"]
	if certificate == nil || objs["Issuer "+namespace+"/robot-operator-webhook"] == nil {
		t.Fatal("no Certificate and Issuer rendered")
	}
	rendered := manifests.Indent(t, certificate.Object)
	for _, want := range []string{`"secretName": "robot-operator-webhook-cert"`, `"robot-operator-webhook.` + namespace + `.svc"`} {
		if !strings.Contains(rendered, want) {
			t.Errorf("the Certificate does not have %s:\n%s", want, rendered)
		}
	}
	if args := manifests.Indent(t, objs["Deployment "+namespace+"/robot-operator"].Object); !strings.Contains(args, `"-webhook-certs=external"`) {
		t.Errorf("the operator does not run with -webhook-certs=external:\n%s", args)
	}
	// The operator only reads the Secret: it may neither write it nor
	// create any Secret. The kustomize component grants the same.
	for name, role := range map[string]*unstructured.Unstructured{
		"the chart":                     objs["Role "+namespace+"/robot-operator-webhook"],
		"artifacts/deploy/cert-manager": kustomize(t, withCertManager(t))["Role robot-operator/robot-operator-webhook"],
	} {
		if role == nil {
			t.Fatalf("%s: no Role robot-operator-webhook", name)
		}
		if rules := manifests.Indent(t, role.Object["rules"]); strings.Contains(rules, `"update"`) || strings.Contains(rules, `"create"`) || !strings.Contains(rules, `"robot-operator-webhook-cert"`) {
			t.Errorf("%s: with cert-manager the operator may write Secrets:\n%s", name, rules)
		}
	}
	for key := range helmTemplate(t) {
		if strings.HasPrefix(key, "Certificate ") || strings.HasPrefix(key, "Issuer ") {
			t.Errorf("%s is rendered with the default values", key)
		}
	}
}

// withCertManager returns an overlay of artifacts/deploy with its
// cert-manager component, as its comment says to use it.
func withCertManager(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	// kustomize takes only relative paths to other kustomizations.
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		t.Fatal(err)
	}
	overlay := fmt.Sprintf("resources:\n- %s/artifacts/deploy\ncomponents:\n- %s/artifacts/deploy/cert-manager\n", rel, rel)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestChartValuesSchema: a wrong value fails helm template (and so helm
// install and upgrade) with a message that names it, before anything is
// rendered.
func TestChartValuesSchema(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"logFormat=yaml", "/logFormat"},
		{"replicas=two", "/replicas"},
		{"robotDisruptionBudgets=sometimes", "/robotDisruptionBudgets"},
		{"image.digest=latest", "/image/digest"},
		{"image.pullPolicy=Sometimes", "/image/pullPolicy"},
		{"webhook.port=70000", "/webhook/port"},
		{"metrics.port=0", "/metrics/port"},
		{"watchNamespace=Not_A_Namespace", "/watchNamespace"},
		{"policy.maxTerminationGracePeriod=an hour", "/policy/maxTerminationGracePeriod"},
		{"policy.httpRoutes=maybe", "/policy/httpRoutes"},
		{"extraArgs={workers=8}", "/extraArgs/0"},
		{"networkPolicy.webhookCIDRs={10.0.0.0}", "/networkPolicy/webhookCIDRs/0"},
		{"replica=1", "'replica' not allowed"},
	} {
		cmd := exec.Command(manifests.Tool(t, "HELM", "chart-test"), "template", "robot-operator", chart, "--namespace", namespace, "--set", tc.set)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("helm template --set %s succeeded; want the schema to refuse it", tc.set)
			continue
		}
		if !strings.Contains(string(out), "don't meet the specifications of the schema") || !strings.Contains(string(out), tc.want) {
			t.Errorf("helm template --set %s: %v\n%s\nwant the schema's refusal naming %s", tc.set, err, out, tc.want)
		}
	}
}

// TestHelmLint: helm lint --strict passes with the default values and with
// every optional part on.
func TestHelmLint(t *testing.T) {
	for _, set := range [][]string{nil, {"watchNamespace=robots", "serviceMonitor.enabled=true", "prometheusRule.enabled=true", "metrics.certSecret=tls"}} {
		args := []string{"lint", "--strict", chart}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		out := manifests.Run(t, manifests.Tool(t, "HELM", "chart-test"), args...)
		if !strings.Contains(string(out), "0 chart(s) failed") {
			t.Errorf("helm lint %v:\n%s", set, out)
		}
	}
}

// TestWebhookServiceReachesOnlyWebhookPods: the webhook's Service targets
// the container port by its name, which only pods of a release that serves
// the webhook have (a pod of the previous release, during a rolling
// upgrade, has the same labels but no such port, so it is never an
// endpoint), and pods are ready, and so endpoints, on the readiness that
// asks for the webhook's certificate and not for the caches. The Secret
// carries no data.
func TestWebhookServiceReachesOnlyWebhookPods(t *testing.T) {
	for name, objs := range map[string]map[string]*unstructured.Unstructured{"kustomize": kustomize(t, root+"/artifacts/deploy"), "chart": helmTemplate(t)} {
		service := objs["Service "+namespace+"/robot-operator-webhook"]
		deployment := objs["Deployment "+namespace+"/robot-operator"]
		secret := objs["Secret "+namespace+"/robot-operator-webhook-cert"]
		if service == nil || deployment == nil || secret == nil {
			t.Fatalf("%s: the webhook's Service, the Deployment or the Secret is not rendered", name)
		}
		ports, _, _ := unstructured.NestedSlice(service.Object, "spec", "ports")
		if len(ports) != 1 || ports[0].(map[string]any)["targetPort"] != "webhook" {
			t.Errorf("%s: the webhook's Service targets %v, want the container port named webhook", name, ports)
		}
		containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
		container := manifests.Indent(t, containers[0])
		for _, want := range []string{`"name": "webhook"`, `"path": "/readyz/webhook"`} {
			if !strings.Contains(container, want) {
				t.Errorf("%s: the operator's container has no %s:\n%s", name, want, container)
			}
		}
		if _, found := secret.Object["data"]; found {
			t.Errorf("%s: the webhook's Secret carries data", name)
		}
	}
}
