package drift

import (
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
)

func liveDeployment(t *testing.T, robot *robotv1beta1.Robot) *appsv1.Deployment {
	desired, err := workload.NewDeployment(robot)
	return robottest.LiveDeploymentOf(t, desired, err)
}
