package main

import (
	"strings"
	"testing"

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
	robot := newRobot("test", 1)
	robot.Spec = robotv1alpha1.RobotSpec{}
	robot.Annotations = map[string]string{undecodableSpecAnnotation: `spec.replicas is "two", which the operator cannot read`}
	f.addRobot(robot)

	_, err := newDeployment(robot)
	status := computeStatus(robot, nil, nil, err, metav1.NewTime(fixtureNow))
	f.expectApplyStatus(robot, status)
	if requeueAfter := f.run(ctx, cache.MetaObjectToName(robot)); requeueAfter != 0 {
		t.Errorf("requeue after %v, want none", requeueAfter)
	}
	events := f.events()
	if len(events) != 1 || !hasPrefix(events[0], corev1.EventTypeWarning+" "+robotv1alpha1.ReasonInvalidSpec) || !strings.Contains(events[0], `spec.replicas is "two"`) {
		t.Errorf("expected one %s warning naming the field, got %q", robotv1alpha1.ReasonInvalidSpec, events)
	}
}
