package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestRunRejectsBadFlagsInOneLine(t *testing.T) {
	for _, args := range [][]string{
		{"-no-such-flag"},
		{"-workers", "0"},
		{"-kube-api-qps", "-1"},
		{"-sync-timeout", "0"},
		{"-sync-timeout=-1s"},
		{"-logging-format", "yaml"},
		{"-metrics-secure=false", "-metrics-cert-dir=/tmp"},
		{"-leader-elect", "-leader-elect-renew-deadline", "20s"},
		{"extra-argument"},
		{"-service-types", "ClusterIP,ExternalName"},
		{"-service-types", ""},
		{"-route-gateways", "public"},
		{"-route-hostnames", "*.example.com"},
		{"-max-termination-grace-period", "48h"},
		{"-http-routes=maybe"},
		{"-serve-v1alpha1=maybe"},
		{"-serve-v1alpha1=false", "-namespace", "team-a"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		if code != 2 {
			t.Errorf("%v: exit code %d, want 2", args, code)
		}
		if lines := strings.Count(stderr.String(), "\n"); lines != 1 || !strings.HasPrefix(stderr.String(), "robot-operator: ") {
			t.Errorf("%v: stderr %q, want one line starting with robot-operator:", args, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: printed %q on stdout", args, stdout.String())
		}
	}
}

func TestRunWithoutACluster(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-metrics-bind-address=0", "-health-probe-bind-address=0"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "robot-operator: no cluster to connect to: pass -kubeconfig or -master") {
		t.Errorf("exit code %d, stderr %q; want 1 and a message saying how to point at a cluster", code, stderr.String())
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-help"}, &stdout, &stderr); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	for _, flag := range []string{"-kubeconfig", "-workers", "-sync-timeout", "-leader-elect", "-metrics-bind-address", "-logging-format", "-memory-limit-from-cgroup",
		"-http-routes", "-route-gateways", "-route-hostnames", "-service-annotations", "-service-labels", "-service-load-balancer-classes", "-max-termination-grace-period", "-serve-v1alpha1"} {
		if !strings.Contains(stdout.String(), flag) {
			t.Errorf("usage does not mention %s", flag)
		}
	}
}

func TestServeV1alpha1(t *testing.T) {
	for args, want := range map[string]string{"": "nil", "-serve-v1alpha1=false": "false", "-serve-v1alpha1=true": "true"} {
		opts, err := parseFlags(strings.Fields(args), io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		got := "nil"
		if opts.run.ServeV1alpha1 != nil {
			got = strconv.FormatBool(*opts.run.ServeV1alpha1)
		}
		if got != want {
			t.Errorf("%q: ServeV1alpha1 %s, want %s", args, got, want)
		}
	}
}

func TestVersion(t *testing.T) {
	defer func(v, r string) { version, revision = v, r }(version, revision)
	version, revision = "v1.2.3-4-gabcdef0", "abcdef0123456789abcdef0123456789abcdef01"
	var stdout, stderr bytes.Buffer
	want := "robot-operator v1.2.3-4-gabcdef0 (revision abcdef0123456789abcdef0123456789abcdef01, " + runtime.Version() + ")\n"
	if code := run([]string{"-version"}, &stdout, &stderr); code != 0 || stdout.String() != want || stderr.Len() != 0 {
		t.Errorf("exit code %d, stdout %q, stderr %q; want 0 and %q", code, stdout.String(), stderr.String(), want)
	}
}

// layers lists the packages under internal/ from the bottom up. A package
// may import only packages of the layers below its own: so the pure ones
// stay at the bottom and no concern reaches up into another.
var layers = [][]string{
	{"outcome", "echo", "outage", "conversion", "memlimit", "lanes", "observe"},
	{"workload", "robottest", "worker"},
	{"drift", "policy", "fleet"},
	{"transform"},
	{"podsummary"},
	{"status", "podcache"},
	{"writer", "events", "leader", "metrics", "serving", "robotclient", "webhookcert", "migration", "preflight"},
	{"owned"},
	{"precheck", "app", "robotctl"},
	{"robotctl/kubectl-robot"},
}

// pure are the packages that decide: from objects they are given, with no
// way to reach the API server.
var pure = []string{"workload", "drift", "outcome", "podsummary", "status", "policy"}

// clients are the packages that can send requests to the API server: the
// clientsets, and the REST and discovery clients beneath them.
var clients = []string{
	"k8s.io/client-go/kubernetes",
	"k8s.io/client-go/dynamic",
	"k8s.io/client-go/metadata",
	"k8s.io/client-go/rest",
	"k8s.io/client-go/discovery",
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset",
	"sigs.k8s.io/gateway-api/pkg/client/clientset/versioned",
	"github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned",
}

// reachesThrough are the packages through which a pure package may depend on
// a client without being able to use one: client-go's apply configurations
// import discovery for their unstructured extractor, which nothing here
// calls.
var reachesThrough = []string{"k8s.io/client-go/applyconfigurations/"}

// TestPackageLayers: each package under internal/ imports only packages of
// lower layers, and the pure packages import no client, not even through
// another package.
func TestPackageLayers(t *testing.T) {
	const internal = "github.com/robot-operator/robot-operator/internal/"
	rank := map[string]int{}
	for i, layer := range layers {
		for _, name := range layer {
			rank[name] = i
		}
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		name := strings.TrimPrefix(fields[0], internal)
		own, ok := rank[name]
		if !ok {
			t.Errorf("package internal/%s is in no layer: add it to layers", name)
			continue
		}
		for _, imported := range fields[1:] {
			dep, ok := strings.CutPrefix(imported, internal)
			if ok && rank[dep] >= own {
				t.Errorf("internal/%s imports internal/%s, which is not in a lower layer", name, dep)
			}
		}
	}
	for _, name := range pure {
		for _, client := range clientsReached(t, "./internal/"+name) {
			t.Errorf("internal/%s is pure but imports the client %s", name, client)
		}
	}
	// The check can fail: a package that sends requests reaches clients.
	if reached := clientsReached(t, "./internal/app"); len(reached) == 0 {
		t.Errorf("internal/app reaches no client: the list of clients is wrong")
	}
}

// clientsReached returns the clients among pkg's dependencies that pkg
// reaches other than through reachesThrough: the clients it imports itself,
// or through packages that import them.
func clientsReached(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	imports := map[string][]string{}
	var root string
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		imports[fields[0]] = fields[1:]
		root = fields[0] // go list -deps lists the package itself last
	}
	var reached []string
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		if slices.Contains(clients, p) {
			reached = append(reached, p)
			return
		}
		if slices.ContainsFunc(reachesThrough, func(prefix string) bool { return strings.HasPrefix(p, prefix) }) {
			return
		}
		for _, imported := range imports[p] {
			walk(imported)
		}
	}
	walk(root)
	slices.Sort(reached)
	return reached
}

// TestArchitectureDiagram: the import diagram of docs/architecture.md has
// an arrow for each import between the project's packages, and no other.
func TestArchitectureDiagram(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	arrow := regexp.MustCompile(`(?m)^\s*(\w+) --> (.+)$`)
	drawn := map[string]bool{}
	for _, m := range arrow.FindAllStringSubmatch(string(doc), -1) {
		for _, to := range strings.Split(m[2], "&") {
			drawn[m[1]+" --> "+strings.TrimSpace(to)] = true
		}
	}
	if len(drawn) == 0 {
		t.Fatal("docs/architecture.md has no arrows: the diagram moved or changed its form")
	}
	const module = "github.com/robot-operator/robot-operator"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".", "./internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	node := func(path string) (string, bool) {
		if path == module {
			return "root", true
		}
		name, ok := strings.CutPrefix(path, module+"/internal/")
		// A package below another (a command's main package) is drawn
		// as a name of word characters: robotctl_kubectl_robot.
		return strings.NewReplacer("/", "_", "-", "_").Replace(name), ok && name != "robottest"
	}
	imported := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		from, ok := node(fields[0])
		if !ok {
			continue
		}
		for _, dep := range fields[1:] {
			if to, ok := node(dep); ok {
				imported[from+" --> "+to] = true
			}
		}
	}
	for edge := range imported {
		if !drawn[edge] {
			t.Errorf("docs/architecture.md's diagram lacks %s", edge)
		}
	}
	for edge := range drawn {
		if !imported[edge] {
			t.Errorf("docs/architecture.md's diagram has %s, which is no import", edge)
		}
	}
}
