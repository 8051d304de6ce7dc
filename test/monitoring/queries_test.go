// Package monitoring tests the queries of artifacts/monitoring: the alerts
// of the PrometheusRule and the panels of the Grafana dashboard.
//
// It is a Go module of its own because the Prometheus query parser comes
// with the Prometheus server's module, whose requirements would otherwise
// raise the versions of the operator's own dependencies and add hundreds
// of lines to its go.sum, for a test.
//
// Each query is parsed, and the series it names are compared with
// artifacts/monitoring/testdata/series.txt; the end-to-end test
// TestMonitoringSeriesAreExported (test/e2e) checks that the operator
// exports every series listed there. A query that names a series the
// operator does not export, or a metric renamed in the operator, fails one
// of the two.
package monitoring

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite artifacts/monitoring/testdata/series.txt from the queries")

const monitoringDir = "../../artifacts/monitoring"

// madeByPrometheus are series Prometheus makes itself for each target,
// which the operator cannot export.
var madeByPrometheus = []string{"up"}

// query is one query and where it is.
type query struct {
	where, expr string
}

// dashboardVariables are what Grafana puts in place of the dashboard's
// variables, for the parser.
var dashboardVariables = strings.NewReplacer(
	"$__rate_interval", "5m",
	"$job", "robot-operator-metrics",
)

var leftoverVariable = regexp.MustCompile(`\$\{?[A-Za-z_]+`)

func dashboardQueries(t *testing.T) []query {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(monitoringDir, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var dashboard struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	var queries []query
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("dashboard.json: %v", err)
			}
			for i, target := range p.Targets {
				expr := dashboardVariables.Replace(target.Expr)
				if v := leftoverVariable.FindString(expr); v != "" {
					t.Errorf("dashboard panel %q, query %d: variable %s is not one the dashboard defines", p.Title, i, v)
				}
				queries = append(queries, query{where: fmt.Sprintf("dashboard panel %q, query %d", p.Title, i), expr: expr})
			}
			walk(p.Panels)
		}
	}
	walk(dashboard.Panels)
	return queries
}

// rule is one rule of the PrometheusRule.
type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func rules(t *testing.T) []rule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(monitoringDir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Strict: a misspelt field fails here, not silently in the cluster.
	var prometheusRule struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []rule `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(data, &prometheusRule); err != nil {
		t.Fatalf("prometheusrule.yaml: %v", err)
	}
	var all []rule
	for _, g := range prometheusRule.Spec.Groups {
		all = append(all, g.Rules...)
	}
	return all
}

// seriesNames parses expr and returns the names of the series it selects.
func seriesNames(expr string) ([]string, error) {
	// The default options: the features a stock Prometheus has, no
	// experimental ones.
	parsed, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var unnamed error
	parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			unnamed = fmt.Errorf("selector %s names no series", vs)
		}
		names = append(names, name)
		return nil
	})
	return names, unnamed
}

// TestQueriesNameListedSeries: every query parses, and the series they name
// are exactly those of testdata/series.txt, which the e2e test finds in the
// operator's /metrics.
func TestQueriesNameListedSeries(t *testing.T) {
	queries := dashboardQueries(t)
	alerts := rules(t)
	if len(queries) == 0 || len(alerts) == 0 {
		t.Fatalf("%d dashboard queries and %d rules: the files were not read right", len(queries), len(alerts))
	}
	for _, r := range alerts {
		queries = append(queries, query{where: "alert " + r.Alert, expr: r.Expr})
	}
	used := map[string]bool{}
	for _, q := range queries {
		names, err := seriesNames(q.expr)
		if err != nil {
			t.Errorf("%s: %v\n%s", q.where, err, q.expr)
			continue
		}
		for _, name := range names {
			if !slices.Contains(madeByPrometheus, name) {
				used[name] = true
			}
		}
	}
	var got strings.Builder
	got.WriteString("# The series that the queries of the dashboard and the alerts name, but\n" +
		"# for those Prometheus makes itself (up). Written by\n" +
		"# `go test ./... -update` in test/monitoring; the e2e test\n" +
		"# TestMonitoringSeriesAreExported checks that the operator exports each.\n")
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for name := range used {
			if !yield(name) {
				return
			}
		}
	}) {
		got.WriteString(name + "\n")
	}
	path := filepath.Join(monitoringDir, "testdata", "series.txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("the queries name other series than %s lists (if a query changed on purpose, run go test ./... -update in test/monitoring):\n--- listed\n%s\n--- named\n%s", path, want, got.String())
	}
}

// TestAlertsHaveRunbooks: every alert links to a section of
// docs/runbooks.md that exists.
func TestAlertsHaveRunbooks(t *testing.T) {
	data, err := os.ReadFile("../../docs/runbooks.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for line := range strings.Lines(string(data)) {
		if heading, ok := strings.CutPrefix(strings.TrimSpace(line), "## "); ok {
			anchors[strings.ToLower(strings.ReplaceAll(heading, " ", "-"))] = true
		}
	}
	const prefix = "https://github.com/robot-operator/robot-operator/blob/main/docs/runbooks.md#"
	for _, r := range rules(t) {
		if r.Alert == "" {
			continue
		}
		url := r.Annotations["runbook_url"]
		anchor, ok := strings.CutPrefix(url, prefix)
		if !ok || !anchors[anchor] {
			t.Errorf("alert %s: runbook_url %q is not a section of docs/runbooks.md (%s<section>)", r.Alert, url, prefix)
		}
		if anchor != strings.ToLower(r.Alert) {
			t.Errorf("alert %s: runbook_url points at #%s, want the section named after the alert", r.Alert, anchor)
		}
		for _, key := range []string{"summary", "description"} {
			if r.Annotations[key] == "" {
				t.Errorf("alert %s has no %s", r.Alert, key)
			}
		}
	}
}
