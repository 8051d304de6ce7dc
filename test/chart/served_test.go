//go:build chart

package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// operatorArgs are the args of the operator's container in objs.
func operatorArgs(t *testing.T, objs map[string]*unstructured.Unstructured) []string {
	t.Helper()
	d := objs["Deployment "+namespace+"/robot-operator"]
	if d == nil {
		t.Fatal("no Deployment rendered")
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	var args []string
	for _, a := range containers[0].(map[string]any)["args"].([]any) {
		args = append(args, a.(string))
	}
	return args
}

// servedVersions are the CRD's versions in objs, each with whether it is
// served.
func servedVersions(t *testing.T, objs map[string]*unstructured.Unstructured) map[string]bool {
	t.Helper()
	crd := objs["CustomResourceDefinition /robots.robot.dev"]
	if crd == nil {
		t.Fatal("no CRD rendered")
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	served := map[string]bool{}
	for _, v := range versions {
		served[v.(map[string]any)["name"].(string)] = v.(map[string]any)["served"].(bool)
	}
	return served
}

// TestChartServeV1alpha1: the operator is told whether the CRD serves
// v1alpha1, true by default, since Helm never upgrades the CRD it installed.
func TestChartServeV1alpha1(t *testing.T) {
	for value, want := range map[string]string{"": "-serve-v1alpha1=true", "crd.serveV1alpha1=false": "-serve-v1alpha1=false"} {
		var set []string
		if value != "" {
			set = append(set, value)
		}
		if args := operatorArgs(t, helmTemplate(t, set...)); !slices.Contains(args, want) {
			t.Errorf("--set %q: args %q, want %s", value, args, want)
		}
	}
	// An operator with -namespace does not migrate, and leaves the CRD as
	// installed.
	if args := operatorArgs(t, helmTemplate(t, "watchNamespace=robots")); slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-serve-v1alpha1") }) {
		t.Errorf("watchNamespace: args %q, want no -serve-v1alpha1", args)
	}
	out, err := exec.Command(os.Getenv("HELM"), "template", "robot-operator", chart, "--set", "watchNamespace=robots", "--set", "crd.serveV1alpha1=false").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "crd.serveV1alpha1=false needs an operator that watches every namespace") {
		t.Errorf("watchNamespace with crd.serveV1alpha1=false: err %v, output %s; want a refusal", err, out)
	}
}

// TestKustomizeStopServingV1alpha1: the component serves v1beta1 alone, in
// the CRD applied and through the operator's flag, and keeps v1alpha1 in
// the CRD.
func TestKustomizeStopServingV1alpha1(t *testing.T) {
	overlay := t.TempDir()
	deploy, err := filepath.Abs(filepath.Join(root, "artifacts/deploy"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := filepath.Rel(overlay, deploy)
	if err != nil {
		t.Fatal(err)
	}
	kustomization := "resources:\n- " + base + "\ncomponents:\n- " + base + "/stop-serving-v1alpha1\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, shipped := kustomize(t, overlay), kustomize(t, deploy)
	if got := servedVersions(t, shipped); !got["v1alpha1"] || !got["v1beta1"] {
		t.Errorf("artifacts/deploy serves %v, want both versions", got)
	}
	if got := servedVersions(t, objs); len(got) != 2 || got["v1alpha1"] || !got["v1beta1"] {
		t.Errorf("with the component the CRD serves %v, want v1beta1 alone and v1alpha1 kept", got)
	}
	args := operatorArgs(t, objs)
	if !slices.Contains(args, "-serve-v1alpha1=false") || slices.Contains(args, "-serve-v1alpha1=true") {
		t.Errorf("with the component the operator's args are %q, want -serve-v1alpha1=false", args)
	}
}
