package main

import (
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/status"
	"github.com/robot-operator/robot-operator/internal/workload"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// TestUndecodableRobotIsReportedNotRetried: the sync handler reports it as
// InvalidSpec, once, and touches no Deployment.
func TestUndecodableRobotIsReportedNotRetried(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	robot := robottest.NewRobot("test", 1)
	robot.Spec = robotv1alpha1.RobotSpec{}
	robot.Annotations = map[string]string{workload.UndecodableSpecAnnotation: `spec.replicas is "two", which the operator cannot read`}
	f.addRobot(robot)

	_, err := workload.NewDeployment(robot)
	status := status.ComputeStatus(robot, nil, nil, err, metav1.NewTime(robottest.FixtureNow))
	f.expectApplyStatus(robot, status)
	if requeueAfter := f.run(ctx, cache.MetaObjectToName(robot)); requeueAfter != 0 {
		t.Errorf("requeue after %v, want none", requeueAfter)
	}
	events := f.events()
	if len(events) != 1 || !hasPrefix(events[0], corev1.EventTypeWarning+" "+robotv1alpha1.ReasonInvalidSpec) || !strings.Contains(events[0], `spec.replicas is "two"`) {
		t.Errorf("expected one %s warning naming the field, got %q", robotv1alpha1.ReasonInvalidSpec, events)
	}
}
