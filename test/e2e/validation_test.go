//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// robotYAML is a Robot manifest with the given name and spec lines (each
// indented under spec:).
func robotYAML(ns, name string, specLines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: robot.dev/v1beta1\nkind: Robot\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n", name, ns)
	for _, line := range specLines {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	return b.String()
}

// validationMessage is what the API server answered to one bad input.
type validationMessage struct {
	input   string
	code    int32  // the HTTP status
	message string // the Status message
}

// sendRaw sends a Robot manifest to the API server as a dry run, as it is:
// a create (POST), or with update a JSON merge patch of the whole object,
// which is what kubectl apply sends for a Robot. It returns the API server's
// answer: its HTTP status and message.
func sendRaw(t *testing.T, ns, name, manifest string, update bool) (int32, string) {
	t.Helper()
	body, err := utilyaml.ToJSON([]byte(manifest))
	if err != nil {
		t.Fatalf("converting the manifest to JSON: %v\n%s", err, manifest)
	}
	rest := env.robots.RobotV1beta1().RESTClient()
	req := rest.Post().Namespace(ns).Resource("robots")
	if update {
		req = rest.Patch(types.MergePatchType).Namespace(ns).Resource("robots").Name(name)
	}
	err = req.Param("dryRun", metav1.DryRunAll).Body(body).Do(t.Context()).Error()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("the API server accepted (dry run) or did not answer: %v\n%s", err, manifest)
	}
	return status.Status().Code, status.Status().Message
}

// TestInvalidRobotsAreRejected: bad input is refused when it is written,
// with a message a person understands, and nothing of it is stored. The
// manifests go through kubectl, as a person would send them, so that 1.5
// really reaches the API server as a number with a fraction. The messages are
// written to _output/validation-messages.md (docs/validation.md shows them).
func TestInvalidRobotsAreRejected(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	var seen []validationMessage
	t.Cleanup(func() { writeValidationMessages(t, seen) })

	creates := []struct {
		input    string // for a person, in the table
		name     string
		spec     []string
		contains []string // what the message must say
	}{
		{"`replicas: -1`", "replicas-negative", []string{"image: " + image1, "replicas: -1"},
			[]string{"spec.replicas", "greater than or equal to 0"}},
		{"`replicas: 1.5`", "replicas-fraction", []string{"image: " + image1, "replicas: 1.5"},
			[]string{"spec.replicas", "must be of type int"}},
		{"`replicas: 5000`", "replicas-too-many", []string{"image: " + image1, "replicas: 5000"},
			[]string{"spec.replicas", "less than or equal to 1000"}},
		{"`image: \"\"`", "image-empty", []string{`image: ""`},
			[]string{"spec.image", "at least 1 chars long"}},
		{"`image: \"nginx latest\"` (a space)", "image-space", []string{`image: "nginx latest"`},
			[]string{"spec.image", "image must be an image reference without spaces"}},
		{"`deploymentName: Bad_Name`", "bad-deployment-name", []string{"image: " + image1, "deploymentName: Bad_Name"},
			[]string{"spec.deploymentName", "must be a DNS-1123 label"}},
		{"`service: {type: External}`", "service-type-unknown", []string{"image: " + image1, "ports: [{name: http, containerPort: 8080}]", "service: {type: External}"},
			[]string{"spec.service.type", "Unsupported value"}},
		{"`service: {labels: {app.kubernetes.io/managed-by: me}}`", "service-label-reserved", []string{"image: " + image1, "ports: [{name: http, containerPort: 8080}]", "service: {labels: {app.kubernetes.io/managed-by: me}}"},
			[]string{"spec.service.labels", "service.labels cannot set robot.dev/name, app.kubernetes.io/managed-by"}},
		{"`service: {annotations: {robot.dev/spec-hash: x}}`", "service-annotation-reserved", []string{"image: " + image1, "ports: [{name: http, containerPort: 8080}]", "service: {annotations: {robot.dev/spec-hash: x}}"},
			[]string{"spec.service.annotations", "cannot set robot.dev/spec-hash"}},
		{"`service: {type: ClusterIP, externalTrafficPolicy: Local}`", "service-etp-clusterip", []string{"image: " + image1, "ports: [{name: http, containerPort: 8080}]", "service: {type: ClusterIP, externalTrafficPolicy: Local}"},
			[]string{"spec.service.externalTrafficPolicy", "can be set only when type is NodePort or LoadBalancer"}},
		{"`service: {type: LoadBalancer, loadBalancerSourceRanges: [10.0.0.1/8]}`", "service-source-range", []string{"image: " + image1, "ports: [{name: http, containerPort: 8080}]", "service: {type: LoadBalancer, loadBalancerSourceRanges: [10.0.0.1/8]}"},
			[]string{"spec.service.loadBalancerSourceRanges", "no bits set beyond its prefix length"}},
		{"`service: {type: NodePort, loadBalancerClass: example.com/lb}`", "service-class-nodeport", []string{"image: " + image1, "ports: [{name: http, containerPort: 8080}]", "service: {type: NodePort, loadBalancerClass: example.com/lb}"},
			[]string{"spec.service.loadBalancerClass", "can be set only when type is LoadBalancer"}},
		{"`readinessProbe: {httpGet: {port: htp}}`, no port named `htp`", "probe-port-unknown", []string{"image: " + image1, "ports: [{name: http, containerPort: 8080}]", "readinessProbe: {httpGet: {port: htp}}"},
			[]string{"spec.readinessProbe.httpGet.port", "readinessProbe.httpGet.port must be a port number or the name of one of spec.ports"}},
		{"a sidecar's `livenessProbe: {tcpSocket: {port: http}}`, `http` a port of `spec.ports`, not of the sidecar", "sidecar-probe-port", []string{"image: " + image1, "ports: [{name: http, containerPort: 8080}]",
			"sidecars: [{name: proxy, image: " + image2 + ", ports: [{name: admin, containerPort: 9901}], livenessProbe: {tcpSocket: {port: http}}}]"},
			[]string{"spec.sidecars[0].livenessProbe.tcpSocket.port", "livenessProbe.tcpSocket.port must be a port number or the name of one of the sidecar's ports"}},
		{"two ports on one Service port, `servicePort: 80` and `containerPort: 80`", "service-port-twice", []string{"image: " + image1,
			"ports: [{name: http, containerPort: 8080, servicePort: 80}, {name: alt, containerPort: 80}]"},
			[]string{"spec.ports", "two ports cannot have the same Service port and protocol"}},
		{"`nodePort: 30080` with the default `service.type`, ClusterIP", "node-port-clusterip", []string{"image: " + image1,
			"ports: [{name: http, containerPort: 8080, nodePort: 30080}]"},
			[]string{"spec.ports", "a port's nodePort can be set only when service.type is NodePort or LoadBalancer"}},
		{"a sidecar's port with `servicePort: 80`", "sidecar-service-port", []string{"image: " + image1,
			"sidecars: [{name: proxy, image: " + image2 + ", ports: [{name: admin, containerPort: 9901, servicePort: 80}]}]"},
			[]string{"spec.sidecars[0].ports", "a sidecar's ports cannot set servicePort or nodePort"}},
		{"a Robot name of 64 characters", strings.Repeat("r", 64), []string{"image: " + image1},
			[]string{"metadata", "must be at most 63 characters"}},
		{"a Robot named `web.v2` with a port (its Service would be named `web.v2`)", "web.v2", []string{"image: " + image1, "ports: [{name: http, containerPort: 8080}]"},
			[]string{"metadata", "a Service's name must be a DNS-1035 label"}},
		{"`deploymentName: 1web` with a port (its Service would be named `1web`)", "digit-first", []string{"image: " + image1, "ports: [{name: http, containerPort: 8080}]", "deploymentName: 1web"},
			[]string{"metadata", "a Service's name must be a DNS-1035 label"}},
		{"`image: nginx:1.27:latest`", "image-two-tags", []string{"image: nginx:1.27:latest"},
			[]string{"spec.image", `image must be an image reference such as nginx:1.27 or registry.example.com/team/app@sha256:…; "nginx:1.27:latest" has two tags`}},
		{"`image: Nginx:latest`", "image-upper-case", []string{"image: Nginx:latest"},
			[]string{"spec.image", `"Nginx:latest" has upper-case letters: a repository name is lower-case`}},
		{"`image: nginx@sha256:abc` (a digest too short)", "image-short-digest", []string{"image: nginx@sha256:abc"},
			[]string{"spec.image", "has a digest that is not sha256:, sha384: or sha512: followed by 64, 96 or 128 lower-case hex digits"}},
		{"a sidecar's `image: \"envoy:\"` (no tag after the `:`)", "sidecar-image-no-tag", []string{"image: " + image1, `sidecars: [{name: proxy, image: "envoy:"}]`},
			[]string{"spec.sidecars[0].image", `"envoy:" has a ":" with no tag after it`}},
		{"an init container's `image: app:1:2`", "init-image-two-tags", []string{"image: " + image1, "initContainers: [{name: migrate, image: \"app:1:2\"}]"},
			[]string{"spec.initContainers[0].image", "has two tags"}},
		{"`resources: {limits: {memory: 64Mi}, requests: {memory: 128Mi}}`", "limit-below-request", []string{"image: " + image1, "resources: {limits: {memory: 64Mi}, requests: {memory: 128Mi}}"},
			[]string{"spec.resources", "resources.limits.memory (64Mi) must be at least resources.requests.memory (128Mi)"}},
		{"a sidecar's `resources: {limits: {cpu: 100m}, requests: {cpu: 250m}}`", "sidecar-limit-below-request", []string{"image: " + image1, "sidecars: [{name: proxy, image: " + image2 + ", resources: {limits: {cpu: 100m}, requests: {cpu: 250m}}}]"},
			[]string{"spec.sidecars[0].resources", "resources.limits.cpu (100m) must be at least resources.requests.cpu (250m)"}},
		{"`resources: {limits: {memory: 64MB}}`", "quantity-mb", []string{"image: " + image1, "resources: {limits: {memory: 64MB}}"},
			[]string{"spec.resources.limits", `must be a quantity such as 128Mi, 1Gi, 500m or 0.5; "64MB" is not one: write 64M or 64Mi`}},
		{"`resources: {requests: {cpu: 1.5 cores}}`", "quantity-cores", []string{"image: " + image1, "resources: {requests: {cpu: 1.5 cores}}"},
			[]string{"spec.resources.requests", `"1.5 cores" is not one`, "cpu is in cores (1.5 or 1500m)"}},
		{"an emptyDir's `sizeLimit: -1Gi`", "quantity-negative", []string{"image: " + image1, "volumes: [{name: scratch, emptyDir: {sizeLimit: -1Gi}}]"},
			[]string{"spec.volumes[0].emptyDir.sizeLimit", "it cannot be negative"}},
		{"`readinessProbe: {periodSeconds: 5}` (no action)", "probe-no-action", []string{"image: " + image1, "readinessProbe: {periodSeconds: 5}"},
			[]string{"spec.readinessProbe", "readinessProbe must have exactly one of httpGet, tcpSocket, grpc or exec"}},
		{"a sidecar's `startupProbe: {failureThreshold: 30}` (no action)", "sidecar-probe-no-action", []string{"image: " + image1, "sidecars: [{name: proxy, image: " + image2 + ", startupProbe: {failureThreshold: 30}}]"},
			[]string{"spec.sidecars[0].startupProbe", "startupProbe must have exactly one of httpGet, tcpSocket, grpc or exec"}},
		{"`livenessProbe: {tcpSocket: {port: 0}}`", "probe-port-zero", []string{"image: " + image1, "livenessProbe: {tcpSocket: {port: 0}}"},
			[]string{"spec.livenessProbe", "livenessProbe's port must be a number from 1 to 65535"}},
		{"`livenessProbe: {exec: {command: [\"true\"]}, successThreshold: 3}`", "probe-liveness-threshold", []string{"image: " + image1, `livenessProbe: {exec: {command: ["true"]}, successThreshold: 3}`},
			[]string{"spec.livenessProbe.successThreshold", "livenessProbe.successThreshold must be 1"}},
		{"`service: {type: LoadBalancer}` with no ports", "service-without-ports", []string{"image: " + image1, "service: {type: LoadBalancer}"},
			[]string{"spec.service", "a Service needs ports: set spec.ports, or remove spec.service"}},
		{"`service: {annotations: {\"not a key\": x}}`", "service-annotation-key", []string{"image: " + image1, "ports: [{name: http, containerPort: 8080}]", `service: {annotations: {"not a key": x}}`},
			[]string{"spec.service.annotations", "every service.annotations key must be an annotation key"}},
		{"`service: {labels: {team: blue-}}`", "service-label-value", []string{"image: " + image1, "ports: [{name: http, containerPort: 8080}]", "service: {labels: {team: blue-}}"},
			[]string{"spec.service.labels", "every service.labels value must be a label value"}},
		{"`podLabels: {team: \"blue team\"}`", "pod-label-value", []string{"image: " + image1, `podLabels: {team: "blue team"}`},
			[]string{"spec.podLabels", "every podLabels value must be a label value"}},
		{"`podAnnotations: {\"-owner\": x}`", "pod-annotation-key", []string{"image: " + image1, `podAnnotations: {"-owner": x}`},
			[]string{"spec.podAnnotations", "every podAnnotations key must be an annotation key"}},
		{"`http: {hostnames: [https://robot.example.com]}`", "http-hostname-scheme", []string{"image: " + image1, "ports: [{name: http, containerPort: 8080}]", "http: {gateways: [{name: gw}], hostnames: [\"https://robot.example.com\"]}"},
			[]string{"spec.http.hostnames", "hostnames are lower-case DNS names, with no scheme, port or path"}},
		{"`http: {pathPrefixes: [/api//v1]}`", "http-path-double-slash", []string{"image: " + image1, "ports: [{name: http, containerPort: 8080}]", "http: {gateways: [{name: gw}], pathPrefixes: [/api//v1]}"},
			[]string{"spec.http.pathPrefixes", "pathPrefixes are paths such as /api"}},
		{"a toleration `{key: gpu, operator: Exists, value: \"yes\"}`", "toleration-exists-value", []string{"image: " + image1, `placement: {tolerations: [{key: gpu, operator: Exists, value: "yes"}]}`},
			[]string{"spec.placement.tolerations", "a toleration with operator Exists cannot have a value"}},
		{"`env: [{name: PASSWORD, value: x, valueFrom: {secretKeyRef: {name: db, key: password}}}]`", "env-value-and-from", []string{"image: " + image1, "env: [{name: PASSWORD, value: x, valueFrom: {secretKeyRef: {name: db, key: password}}}]"},
			[]string{"spec.env", "an env variable has a value or a valueFrom, not both"}},
		{"`envFrom: [{configMapRef: {name: a}, secretRef: {name: b}}]`", "envfrom-two", []string{"image: " + image1, "envFrom: [{configMapRef: {name: a}, secretRef: {name: b}}]"},
			[]string{"spec.envFrom", "every envFrom entry has exactly one of configMapRef or secretRef"}},
		{"`placement: {priorityClassName: High}`", "priority-class-upper", []string{"image: " + image1, "placement: {priorityClassName: High}"},
			[]string{"spec.placement.priorityClassName", "priorityClassName must be the name of a PriorityClass"}},
	}
	for _, tc := range creates {
		manifest := robotYAML(ns, tc.name, tc.spec...)
		stdout, stderr, err := kubectl(t.Context(), manifest, "apply", "-f", "-")
		msg := strings.TrimSpace(stderr)
		if err == nil {
			t.Errorf("%s: kubectl apply succeeded, want it refused: %s", tc.input, stdout)
		}
		code, apiMsg := sendRaw(t, ns, tc.name, manifest, false)
		seen = append(seen, validationMessage{tc.input, code, apiMsg})
		if code != http.StatusUnprocessableEntity {
			t.Errorf("%s: the API server answered %d, want %d (Invalid): %s", tc.input, code, http.StatusUnprocessableEntity, apiMsg)
		}
		for _, want := range tc.contains {
			if !strings.Contains(msg, want) || !strings.Contains(apiMsg, want) {
				t.Errorf("%s: the message does not say %q:\nkubectl: %s\nAPI server: %s", tc.input, want, msg, apiMsg)
			}
		}
		if _, err := env.robots.RobotV1beta1().Robots(ns).Get(t.Context(), tc.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: Robot %s was stored (get: %v), want nothing stored", tc.input, tc.name, err)
		}
	}

	// deploymentName cannot change, nor be added, once the Robot exists.
	updates := []struct {
		input              string
		name               string
		before, after      []string
		wantDeploymentName string
	}{
		{"`deploymentName` changed from `a` to `b`", "renamed",
			[]string{"image: " + image1, "deploymentName: a"}, []string{"image: " + image1, "deploymentName: b"}, "a"},
		{"`deploymentName: b` added to a Robot created without one", "named-later",
			[]string{"image: " + image1}, []string{"image: " + image1, "deploymentName: b"}, ""},
	}
	for _, tc := range updates {
		if _, stderr, err := kubectl(t.Context(), robotYAML(ns, tc.name, tc.before...), "apply", "-f", "-"); err != nil {
			t.Fatalf("creating Robot %s: %v\n%s", tc.name, err, stderr)
		}
		before := getRobot(t, ns, tc.name)
		manifest := robotYAML(ns, tc.name, tc.after...)
		stdout, stderr, err := kubectl(t.Context(), manifest, "apply", "-f", "-")
		msg := strings.TrimSpace(stderr)
		if err == nil {
			t.Errorf("%s: kubectl apply succeeded, want it refused: %s", tc.input, stdout)
		}
		code, apiMsg := sendRaw(t, ns, tc.name, manifest, true)
		seen = append(seen, validationMessage{tc.input, code, apiMsg})
		if code != http.StatusUnprocessableEntity {
			t.Errorf("%s: the API server answered %d, want %d (Invalid): %s", tc.input, code, http.StatusUnprocessableEntity, apiMsg)
		}
		if want := "spec.deploymentName: Invalid value: deploymentName is immutable"; !strings.Contains(msg, want) || !strings.Contains(apiMsg, want) {
			t.Errorf("%s: the message does not say %q:\nkubectl: %s\nAPI server: %s", tc.input, want, msg, apiMsg)
		}
		after := getRobot(t, ns, tc.name)
		if after.Spec.DeploymentName != tc.wantDeploymentName || after.Generation != before.Generation {
			t.Errorf("%s: the Robot changed: deploymentName %q (want %q), generation %d -> %d", tc.input, after.Spec.DeploymentName, tc.wantDeploymentName, before.Generation, after.Generation)
		}
	}
}

// writeValidationMessages writes what the API server answered, as a
// Markdown table, to _output/validation-messages.md.
func writeValidationMessages(t *testing.T, seen []validationMessage) {
	if len(seen) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString("| Input | HTTP status | The API server's message |\n|---|---|---|\n")
	for _, m := range seen {
		fmt.Fprintf(&b, "| %s | %d | %s |\n", m.input, m.code, markdownCode(m.message))
	}
	path := filepath.Join(env.root, "_output", "validation-messages.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Errorf("writing %s: %v", path, err)
		return
	}
	t.Logf("wrote the validation messages to %s:\n%s", path, b.String())
}

// markdownCode formats text as code in a Markdown table cell, line by line.
func markdownCode(text string) string {
	var lines []string
	for line := range strings.Lines(text) {
		lines = append(lines, "`"+strings.ReplaceAll(strings.TrimRight(line, "\n"), "|", `\|`)+"`")
	}
	return strings.Join(lines, "<br>")
}

// TestMistakesOnlyTheClusterKnowsAreReported: a mistake that no rule of the
// CRD can see, since it is about the rest of the cluster, is admitted and
// then reported on the Robot, Ready=False with the reason the diagnosis
// gives and the cluster's own words. The messages are written to
// _output/validation-cluster-messages.md (docs/validation.md shows them).
// kwok runs no kubelet: the kubelet's message for the missing Secret is
// played by the cluster's stages (hack/kwok-stages.yaml, secret-missing),
// for pods that name that Secret; the ResourceQuota is the API server's.
func TestMistakesOnlyTheClusterKnowsAreReported(t *testing.T) {
	parallel(t)
	type reported struct{ input, reason, message string }
	var seen []reported
	t.Cleanup(func() {
		if len(seen) == 0 {
			return
		}
		var b strings.Builder
		b.WriteString("| Mistake | Ready's reason | Ready's message |\n|---|---|---|\n")
		for _, r := range seen {
			fmt.Fprintf(&b, "| %s | `%s` | %s |\n", r.input, r.reason, markdownCode(r.message))
		}
		path := filepath.Join(env.root, "_output", "validation-cluster-messages.md")
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Errorf("writing %s: %v", path, err)
		}
	})
	for _, tc := range []struct {
		input  string
		setup  func(t *testing.T, ns string)
		spec   []string
		reason string
		want   string // what Ready's message must say
	}{
		{"`envFrom: [{secretRef: {name: db-credentials}}]`, no such Secret", nil,
			[]string{"image: " + image1, "envFrom: [{secretRef: {name: db-credentials}}]", "podLabels: {" + simulateLabel + ": secret-missing}"},
			robotv1beta1.ReasonConfigMissing, `secret "db-credentials" not found`},
		{"a namespace whose ResourceQuota allows no more pods", fillQuota, []string{"image: " + image1},
			robotv1beta1.ReasonQuotaExceeded, "exceeded quota: pods"},
	} {
		ns := newNamespace(t)
		if tc.setup != nil {
			tc.setup(t, ns)
		}
		since := time.Now()
		if _, stderr, err := kubectl(t.Context(), robotYAML(ns, "web", tc.spec...), "apply", "-f", "-"); err != nil {
			t.Fatalf("%s: kubectl apply refused the Robot, which no rule can know is wrong: %v\n%s", tc.input, err, stderr)
		}
		robot := expectCause(t, ns, "web", tc.reason, since, tc.want)
		seen = append(seen, reported{tc.input, tc.reason, readyCondition(robot).Message})
	}
}

// fillQuota gives ns a ResourceQuota of no pods, and waits until the quota
// controller has counted it: until then pods are refused for another
// reason ("status unknown for quota").
func fillQuota(t *testing.T, ns string) {
	t.Helper()
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}
	if _, err := env.kube.CoreV1().ResourceQuotas(ns).Create(t.Context(), quota, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the ResourceQuota: %v", err)
	}
	eventually(t, convergeTimeout, "the ResourceQuota counted", func(ctx context.Context) (bool, string, error) {
		q, err := env.kube.CoreV1().ResourceQuotas(ns).Get(ctx, "pods", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		_, counted := q.Status.Hard[corev1.ResourcePods]
		return counted, fmt.Sprintf("status %v", q.Status), nil
	})
}
