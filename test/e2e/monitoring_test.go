//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMonitoringSeriesAreExported: every series that the alerts and the
// dashboard of artifacts/monitoring query (listed in testdata/series.txt,
// which test/monitoring keeps in step with the queries) is in the
// operator's /metrics once it has made a Robot Ready. A metric renamed in
// the operator fails here, not silently in a dashboard.
func TestMonitoringSeriesAreExported(t *testing.T) {
	parallel(t)
	path := filepath.Join(env.root, "artifacts", "monitoring", "testdata", "series.txt")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			names = append(names, line)
		}
	}
	if len(names) == 0 {
		t.Fatalf("%s lists no series: the check below would prove nothing", path)
	}

	address := servingAddress(env.operator, 0, "metrics")
	if address == "" {
		t.Fatalf("the shared operator did not log where it serves metrics; see %s", env.operator.logPath)
	}
	url := "http://" + address + "/metrics"

	// Series with labels appear once something is counted: a Robot made
	// Ready gives syncs, a time to Ready, queue and API request series.
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "monitored", 1))
	waitForRobotReady(t, ns, "monitored")
	eventually(t, 15*time.Second, "the operator exports every series the monitoring queries", func(context.Context) (bool, string, error) {
		m, err := scrapeErr(url)
		if err != nil {
			return false, "", err
		}
		var missing []string
		for _, name := range names {
			if !m.has(name) {
				missing = append(missing, name)
			}
		}
		return len(missing) == 0, "missing: " + strings.Join(missing, ", "), nil
	})
}
