package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestBuildInfoGauge(t *testing.T) {
	registry := prometheus.NewRegistry()
	registry.MustRegister(NewBuildInfoGauge(BuildInfo{Version: "v0.2.0", Revision: "0123abcd", GoVersion: "go1.26.8"}))
	want := `# HELP robot_operator_build_info Always 1, labelled with the operator's release (version), commit (revision) and Go version (goversion).
# TYPE robot_operator_build_info gauge
robot_operator_build_info{goversion="go1.26.8",revision="0123abcd",version="v0.2.0"} 1
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want), "robot_operator_build_info"); err != nil {
		t.Error(err)
	}
}

func TestBuildInfoString(t *testing.T) {
	got := BuildInfo{Version: "v0.2.0", Revision: "0123abcd", GoVersion: "go1.26.8"}.String()
	if want := "robot-operator v0.2.0 (revision 0123abcd, go1.26.8)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
