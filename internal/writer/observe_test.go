package writer

import (
	"context"
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/observe"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	robotfake "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/fake"
)

// TestObservingWriterSendsNothing: an observe-only writer sends no request
// for any write, answers each as if it were made, and reports per sync
// what it would have written, naming the updates that roll the pods.
func TestObservingWriterSendsNothing(t *testing.T) {
	kube, robots := k8sfake.NewClientset(), robotfake.NewClientset()
	report := observe.NewReport(klog.Background())
	w := NewObserving(robots, report)
	objects := NewObjects(w, Kind[*appsv1.Deployment, *appsv1ac.DeploymentApplyConfiguration]{
		Name: "Deployment",
		Client: func(namespace string) Client[*appsv1.Deployment, *appsv1ac.DeploymentApplyConfiguration] {
			return kube.AppsV1().Deployments(namespace)
		},
		SpecHash: func(d *appsv1ac.DeploymentApplyConfiguration) string {
			return d.Annotations[workload.AnnotationSpecHash]
		},
		Drift:       drift.DeploymentDriftSkippingSpecs,
		Generation:  true,
		PodTemplate: drift.PodTemplateDrift,
	})

	// A new Robot: its Deployment would be created.
	fresh := robottest.NewRobot("fresh", 1)
	desired, err := workload.NewDeployment(fresh)
	if err != nil {
		t.Fatal(err)
	}
	ctx, created := CollectCreated(context.Background())
	if object, err := objects.Create(ctx, fresh, desired); err != nil || object.Name != "fresh" {
		t.Fatalf("create: %v, %v; want it answered as made", object, err)
	}
	w.RecordCreated(fresh, created)

	// A Robot whose image changed: the update rolls the pods.
	rolled := robottest.NewRobot("rolled", 1)
	before, err := workload.NewDeployment(rolled)
	current := robottest.LiveDeploymentOf(t, before, err)
	rolled.Spec.Image = "nginx:next"
	desired, err = workload.NewDeployment(rolled)
	if err != nil {
		t.Fatal(err)
	}
	ctx, created = CollectCreated(context.Background())
	if _, err := objects.Patch(ctx, current, []byte(`[]`)); err != nil {
		t.Fatal(err)
	}
	if got, err := objects.Apply(ctx, rolled, desired, current, objects.Drift(desired, current)); err != nil || got != current {
		t.Fatalf("apply: %v; want current back, unchanged", err)
	}
	if written, err := w.ApplyStatus(ctx, rolled, &rolled.Status); written != nil || err != nil {
		t.Fatalf("status apply: %v, %v; want nothing written", written, err)
	}
	w.RecordCreated(rolled, created)

	// A Robot scaled: the update leaves the pods as they are.
	scaled := robottest.NewRobot("scaled", 1)
	before, err = workload.NewDeployment(scaled)
	current = robottest.LiveDeploymentOf(t, before, err)
	scaled.Spec.Replicas = ptr.To[int32](3)
	desired, err = workload.NewDeployment(scaled)
	if err != nil {
		t.Fatal(err)
	}
	ctx, created = CollectCreated(context.Background())
	if _, err := objects.Apply(ctx, scaled, desired, current, objects.Drift(desired, current)); err != nil {
		t.Fatal(err)
	}
	if err := objects.Delete(ctx, scaled, current); err != nil {
		t.Fatal(err)
	}
	w.RecordCreated(scaled, created)

	// A Robot as this release keeps it.
	w.RecordCreated(robottest.NewRobot("same", 1), &Created{})

	if actions := append(kube.Actions(), robots.Actions()...); len(actions) > 0 {
		t.Errorf("the observe-only writer sent %d requests, want none: %v", len(actions), actions)
	}
	if w, c := objects.Remembered(); w != 0 {
		t.Errorf("the echo filter holds %d objects (%d checked), want none: nothing was written", w, c)
	}
	s := report.Summary()
	if s.Checked != 4 || s.Changing != 3 || s.Rolling != 1 {
		t.Errorf("summary: %d checked, %d changing, %d rolling; want 4, 3, 1", s.Checked, s.Changing, s.Rolling)
	}
	want := map[string]string{
		"fresh":  "create Deployment fresh",
		"rolled": `update Deployment rolled: spec.template.spec.containers[name="robot"].image is "registry.example/robot:1.0"; the Robot asks for "nginx:next" (rolls the pods)`,
		"scaled": "update Deployment scaled: spec.replicas is 1; the Robot asks for 3|delete Deployment scaled",
	}
	for _, robot := range s.Robots {
		var got []string
		for _, c := range robot.Changes {
			got = append(got, c.String())
		}
		if !strings.HasPrefix(strings.Join(got, "|"), want[robot.Robot.Name]) || want[robot.Robot.Name] == "" {
			t.Errorf("Robot %s: %q, want %q", robot.Robot, got, want[robot.Robot.Name])
		}
		if robot.RollsPods != (robot.Robot.Name == "rolled") {
			t.Errorf("Robot %s: rolls pods %v", robot.Robot, robot.RollsPods)
		}
	}
	if s.Objects[[2]string{"Deployment", observe.Update}] != 2 || s.Objects[[2]string{"Deployment", observe.Create}] != 1 {
		t.Errorf("changes by kind and action: %v", s.Objects)
	}
}
