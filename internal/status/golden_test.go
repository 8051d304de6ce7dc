package status

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/robot-operator/robot-operator/internal/robottest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden with what the tests produce")

// TestGoldenStatusApplyBody: the status apply body of a Robot whose
// Deployment is available is byte for byte the one in
// testdata/golden/status.json, so that a change to what the operator sends
// shows in review.
func TestGoldenStatusApplyBody(t *testing.T) {
	robot := robottest.GoldenRobot()
	status := Compute(robot, robottest.GoldenDeployment(robot), nil, nil, metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)))
	got, err := json.MarshalIndent(ApplyConfiguration(robot, &status), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "golden", "status.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (to write it: go test -run Golden ./internal/status -update)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("the apply body differs from %s (-file +now); if the change is meant, rewrite it with `go test -run Golden ./internal/status -update` and commit it:\n%s",
			path, robottest.LineDiff(string(want), string(got)))
	}
}
