package writer

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/client-go/tools/record"

	"github.com/robot-operator/robot-operator/internal/robottest"
)

// TestRecordCreated: what one sync creates is named in one Event, in the
// order created; a sync that creates nothing records none; a create made
// without a collector is left to record its own.
func TestRecordCreated(t *testing.T) {
	recorder := record.NewFakeRecorder(10)
	w := New(nil, recorder, nil)
	robot := robottest.NewRobot("web", 1)

	ctx, created := CollectCreated(context.Background())
	w.RecordCreated(robot, created)
	if len(recorder.Events) != 0 {
		t.Fatalf("a sync that created nothing recorded %q", <-recorder.Events)
	}
	for _, kind := range []string{"Deployment", "Service", "PodDisruptionBudget"} {
		if !addCreated(ctx, kind, "web") {
			t.Fatalf("%s not collected", kind)
		}
	}
	w.RecordCreated(robot, created)
	var events []string
	for len(recorder.Events) > 0 {
		events = append(events, <-recorder.Events)
	}
	want := []string{`Normal Created Created Deployment "web", Service "web", PodDisruptionBudget "web"`}
	if fmt.Sprint(events) != fmt.Sprint(want) {
		t.Errorf("events %q, want %q", events, want)
	}

	if addCreated(context.Background(), "Deployment", "web") {
		t.Error("a create without a collector was collected, and would go unsaid")
	}
}
