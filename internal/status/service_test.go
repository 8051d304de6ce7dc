package status

import (
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestServiceStatus: the status names the Service the Robot controls, and
// a failure of the Service alone leaves Ready about the Deployment.
func TestServiceStatus(t *testing.T) {
	robot := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeClusterIP)
	deployment := liveDeployment(t, robot)
	service := robottest.LiveServiceOf(t, workload.NewService(robot))
	now := metav1.NewTime(robottest.FixtureNow)
	if got := Compute(robot, deployment, service, nil, now).ServiceName; got != "web" {
		t.Errorf("with its Service: serviceName %q, want %q", got, "web")
	}
	if got := Compute(robot, deployment, nil, nil, now).ServiceName; got != "" {
		t.Errorf("without a Service: serviceName %q, want none", got)
	}
	nameTaken := &outcome.NameTakenError{Kind: "Service", Name: "web", Reason: robotv1beta1.ReasonServiceNameTaken,
		Hint: "set spec.service.type to None, or recreate the Robot with another spec.deploymentName"}
	for _, syncErr := range []error{nameTaken, &outcome.EarlierRobotError{Name: "web", Kind: "Service"}} {
		status := Compute(robot, deployment, nil, syncErr, now)
		ready, synced := meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionReady), meta.FindStatusCondition(status.Conditions, robotv1beta1.ConditionSynced)
		if ready.Status != metav1.ConditionTrue {
			t.Errorf("%v: Ready %s (%s), want True", syncErr, ready.Status, ready.Reason)
		}
		if synced.Status != metav1.ConditionFalse || !strings.Contains(synced.Message, `Service "web"`) {
			t.Errorf("%v: Synced %s %q, want False naming the Service", syncErr, synced.Status, synced.Message)
		}
	}
	// The status apply carries workload.ServiceName only when there is one, so that
	// a Robot without a Service writes what it wrote before the field
	// existed.
	computed := Compute(robot, deployment, nil, nil, now)
	if body := string(robottest.MustJSON(t, ApplyConfiguration(robot, &computed))); strings.Contains(body, "serviceName") {
		t.Errorf("status apply without a Service mentions serviceName: %s", body)
	}
}
