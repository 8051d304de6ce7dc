//go:build chart

package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/robot-operator/robot-operator/test/internal/manifests"
)

// networkPolicyRules returns, for the operator's NetworkPolicy in objs,
// each port it opens and the peers allowed to it (nil: from anywhere).
func networkPolicyRules(t *testing.T, objs map[string]*unstructured.Unstructured) map[string][]any {
	t.Helper()
	policy := objs["NetworkPolicy "+namespace+"/robot-operator"]
	if policy == nil {
		t.Fatal("no NetworkPolicy robot-operator limits who reaches the operator's pods")
	}
	spec := policy.Object["spec"].(map[string]any)
	selector, _, _ := unstructured.NestedStringMap(spec, "podSelector", "matchLabels")
	if selector["app.kubernetes.io/name"] != "robot-operator" || selector["app.kubernetes.io/component"] != "operator" {
		t.Errorf("the NetworkPolicy selects %v, want the operator's pods", selector)
	}
	types, _, _ := unstructured.NestedStringSlice(spec, "policyTypes")
	if !slices.Equal(types, []string{"Ingress"}) {
		t.Errorf("policyTypes %v, want [Ingress]: the operator must reach the API server", types)
	}
	rules := map[string][]any{}
	ingress, _, _ := unstructured.NestedSlice(spec, "ingress")
	for _, r := range ingress {
		rule := r.(map[string]any)
		from, _, _ := unstructured.NestedSlice(rule, "from")
		ports, _, _ := unstructured.NestedSlice(rule, "ports")
		for _, p := range ports {
			rules[fmt.Sprint(p.(map[string]any)["port"])] = from
		}
	}
	return rules
}

// TestNetworkPolicy: the manifests let the API server reach the webhook
// from anywhere (it cannot be selected), the metrics port only from
// namespaces labelled for scraping, and nothing else: the health probes
// come from the kubelet on the pod's own node.
func TestNetworkPolicy(t *testing.T) {
	for name, objs := range map[string]map[string]*unstructured.Unstructured{
		"artifacts/deploy":            kustomize(t, root+"/artifacts/deploy"),
		"artifacts/deploy-namespaced": kustomize(t, root+"/artifacts/deploy-namespaced"),
	} {
		t.Run(name, func(t *testing.T) {
			rules := networkPolicyRules(t, objs)
			if from, ok := rules["webhook"]; !ok || from != nil {
				t.Errorf("webhook port: %v (open %v), want open to all", from, ok)
			}
			metrics := rules["metrics"]
			if len(metrics) == 0 || !strings.Contains(manifests.Indent(t, metrics), `"robot-operator.dev/metrics-scraper": "true"`) {
				t.Errorf("metrics port: from %s, want namespaces labelled robot-operator.dev/metrics-scraper=true", manifests.Indent(t, metrics))
			}
			if len(rules) != 2 {
				t.Errorf("ports opened: %v, want webhook and metrics only", rules)
			}
		})
	}
}

// TestChartNetworkPolicyValues: who may reach the webhook and the metrics
// port is set by values, extra rules are added, and the policy can be left
// out.
func TestChartNetworkPolicyValues(t *testing.T) {
	rules := networkPolicyRules(t, helmTemplate(t,
		"networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/24",
		"networkPolicy.metricsFrom[0].podSelector.matchLabels.app=prometheus",
		"networkPolicy.extraIngress[0].ports[0].port=health",
		"networkPolicy.extraIngress[0].from[0].ipBlock.cidr=192.168.0.0/16"))
	for port, want := range map[string]string{"webhook": `"cidr": "10.0.0.0/24"`, "metrics": `"app": "prometheus"`, "health": `"cidr": "192.168.0.0/16"`} {
		if got := manifests.Indent(t, rules[port]); !strings.Contains(got, want) {
			t.Errorf("port %s: from %s, want %s", port, got, want)
		}
	}
	for key := range helmTemplate(t, "networkPolicy.enabled=false") {
		if strings.HasPrefix(key, "NetworkPolicy ") {
			t.Errorf("%s is rendered although networkPolicy.enabled=false", key)
		}
	}
}

// TestChartWebhookCIDRs: networkPolicy.webhookCIDRs narrows the webhook
// port to the API server's addresses, one ipBlock each, beside any peers of
// networkPolicy.webhookFrom; the metrics rule is left as it was.
func TestChartWebhookCIDRs(t *testing.T) {
	rules := networkPolicyRules(t, helmTemplate(t,
		"networkPolicy.webhookCIDRs={10.0.0.0/24,192.0.2.10/32}",
		"networkPolicy.webhookFrom[0].ipBlock.cidr=172.16.0.0/12"))
	webhook := manifests.Indent(t, rules["webhook"])
	for _, cidr := range []string{"10.0.0.0/24", "192.0.2.10/32", "172.16.0.0/12"} {
		if !strings.Contains(webhook, fmt.Sprintf(`"cidr": %q`, cidr)) {
			t.Errorf("webhook port: from %s, want an ipBlock of %s", webhook, cidr)
		}
	}
	if len(rules["webhook"]) != 3 {
		t.Errorf("webhook port: %d peers, want 3", len(rules["webhook"]))
	}
	if metrics := manifests.Indent(t, rules["metrics"]); !strings.Contains(metrics, "metrics-scraper") {
		t.Errorf("metrics port: from %s, want the scrapers' namespaces still", metrics)
	}
}

// TestKustomizeWebhookCIDRs: the patch that artifacts/deploy/networkpolicy.yaml
// shows, in an overlay of artifacts/deploy, narrows the webhook port and
// leaves the metrics rule as it was.
func TestKustomizeWebhookCIDRs(t *testing.T) {
	shipped, err := os.ReadFile(filepath.Join(root, "artifacts/deploy/networkpolicy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The example: the comment lines from "patches:" to the line that sets
	// the value, without their "#   " prefix.
	example := regexp.MustCompile(`(?s)\n#(\s+)(patches:.*?value: [^\n]*)\n`).FindSubmatch(shipped)
	if example == nil {
		t.Fatal("artifacts/deploy/networkpolicy.yaml shows no patch that narrows the webhook port")
	}
	patch := strings.ReplaceAll(string(example[2]), "\n#"+string(example[1]), "\n")
	overlay := t.TempDir()
	deploy, err := filepath.Abs(filepath.Join(root, "artifacts/deploy"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := filepath.Rel(overlay, deploy)
	if err != nil {
		t.Fatal(err)
	}
	kustomization := "resources:\n- " + base + "\n" + patch + "\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	rules := networkPolicyRules(t, kustomize(t, overlay))
	if webhook := manifests.Indent(t, rules["webhook"]); !strings.Contains(webhook, `"cidr": "10.0.0.0/24"`) {
		t.Errorf("webhook port with the documented patch:\n%s\nfrom %s, want the ipBlock 10.0.0.0/24", kustomization, webhook)
	}
	if metrics := manifests.Indent(t, rules["metrics"]); !strings.Contains(metrics, "metrics-scraper") {
		t.Errorf("metrics port with the documented patch: from %s, want the scrapers' namespaces still", metrics)
	}
}

// TestEveryShippedPodIsBehindANetworkPolicy: each Deployment the manifests
// and the chart ship runs pods that a NetworkPolicy of the same manifests
// selects, with no port open to all but the webhook: a pod outside every
// policy takes connections on every port from anywhere in the cluster. The
// observe-only operator's health port serves /observe, which names
// Robots of every namespace and the values their Deployments differ by.
func TestEveryShippedPodIsBehindANetworkPolicy(t *testing.T) {
	for name, objs := range map[string]map[string]*unstructured.Unstructured{
		"artifacts/deploy":            kustomize(t, root+"/artifacts/deploy"),
		"artifacts/deploy-namespaced": kustomize(t, root+"/artifacts/deploy-namespaced"),
		"artifacts/observe":           kustomize(t, root+"/artifacts/observe"),
		"the chart":                   helmTemplate(t),
	} {
		t.Run(name, func(t *testing.T) {
			deployments := 0
			for key, deployment := range objs {
				if !strings.HasPrefix(key, "Deployment ") {
					continue
				}
				deployments++
				labels, _, _ := unstructured.NestedStringMap(deployment.Object, "spec", "template", "metadata", "labels")
				var selecting []string
				for policyKey, policy := range objs {
					if !strings.HasPrefix(policyKey, "NetworkPolicy ") || policy.GetNamespace() != deployment.GetNamespace() {
						continue
					}
					selector, _, _ := unstructured.NestedStringMap(policy.Object, "spec", "podSelector", "matchLabels")
					if len(selector) > 0 && isSubset(selector, labels) {
						selecting = append(selecting, policyKey)
						ingress, _, _ := unstructured.NestedSlice(policy.Object, "spec", "ingress")
						for _, r := range ingress {
							rule := r.(map[string]any)
							if _, limited := rule["from"]; limited {
								continue
							}
							ports, _, _ := unstructured.NestedSlice(rule, "ports")
							for _, p := range ports {
								if port := fmt.Sprint(p.(map[string]any)["port"]); port != "webhook" {
									t.Errorf("%s opens port %s of %s's pods to all", policyKey, port, key)
								}
							}
							if len(ports) == 0 {
								t.Errorf("%s opens every port of %s's pods to all", policyKey, key)
							}
						}
					}
				}
				if len(selecting) == 0 {
					t.Errorf("no NetworkPolicy selects the pods of %s (labels %v)", key, labels)
				}
			}
			if deployments == 0 {
				t.Fatal("no Deployment rendered")
			}
		})
	}
}

// isSubset reports whether every label of sub is in labels, with its value.
func isSubset(sub, labels map[string]string) bool {
	for k, v := range sub {
		if labels[k] != v {
			return false
		}
	}
	return true
}
