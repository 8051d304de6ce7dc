package owned

import (
	"fmt"
	"testing"

	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/cache"
)

// TestDeploymentEchoIsDropped: an add or update event that brings back
// exactly the Deployment this process last wrote (same UID, same
// resourceVersion) queues nothing, since the sync that wrote it has seen it
// all; any other version queues the Robot. An update whose resourceVersion
// did not change is a resync and is dropped as well.
func TestDeploymentEchoIsDropped(t *testing.T) {
	// The Deployment, as liveDeployment returns it, has resourceVersion 7.
	at := func(deployment *appsv1.Deployment, resourceVersion string) *appsv1.Deployment {
		d := deployment.DeepCopy()
		d.ResourceVersion = resourceVersion
		return d
	}
	// Each event remembers what the operator wrote, if anything, and
	// delivers one event. The informer hands handlers objects of its own,
	// never the ones the operator holds: each is a copy.
	for _, tt := range []struct {
		name   string
		event  func(deployments *DeploymentPath, deployment *appsv1.Deployment)
		queued bool
	}{
		{"addDeployment: the Deployment last written", func(deployments *DeploymentPath, deployment *appsv1.Deployment) {
			deployments.Objects().Remember(at(deployment, "8"))
			deployments.Handlers().AddFunc(at(deployment, "8"))
		}, false},
		{"addDeployment: another resourceVersion than the one written", func(deployments *DeploymentPath, deployment *appsv1.Deployment) {
			deployments.Objects().Remember(at(deployment, "8"))
			deployments.Handlers().AddFunc(at(deployment, "9"))
		}, true},
		{"addDeployment: another Deployment, at the resourceVersion written", func(deployments *DeploymentPath, deployment *appsv1.Deployment) {
			deployments.Objects().Remember(at(deployment, "8"))
			other := at(deployment, "8")
			other.UID = "another-deployment"
			deployments.Handlers().AddFunc(other)
		}, true},
		{"addDeployment: nothing written", func(deployments *DeploymentPath, deployment *appsv1.Deployment) {
			deployments.Handlers().AddFunc(deployment.DeepCopy())
		}, true},
		{"updateDeployment: the Deployment last written", func(deployments *DeploymentPath, deployment *appsv1.Deployment) {
			deployments.Objects().Remember(at(deployment, "8"))
			deployments.Handlers().UpdateFunc(deployment.DeepCopy(), at(deployment, "8"))
		}, false},
		{"updateDeployment: another resourceVersion than the one written", func(deployments *DeploymentPath, deployment *appsv1.Deployment) {
			deployments.Objects().Remember(at(deployment, "8"))
			deployments.Handlers().UpdateFunc(at(deployment, "8"), at(deployment, "9"))
		}, true},
		{"updateDeployment: nothing written", func(deployments *DeploymentPath, deployment *appsv1.Deployment) {
			deployments.Handlers().UpdateFunc(deployment.DeepCopy(), at(deployment, "8"))
		}, true},
		{"updateDeployment: a resync, resourceVersion unchanged", func(deployments *DeploymentPath, deployment *appsv1.Deployment) {
			deployments.Handlers().UpdateFunc(deployment.DeepCopy(), deployment.DeepCopy())
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			robot := robottest.NewRobot("test", 1)
			f := newPolicyFixture(t, robot)
			deployment := liveDeployment(t, robot)
			tt.event(f.paths(t, policy.Policy{}).Deployments, deployment)
			var want []cache.ObjectName
			if tt.queued {
				want = []cache.ObjectName{cache.MetaObjectToName(robot)}
			}
			if got := f.queued; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("queued %v, want %v", got, want)
			}
		})
	}
}
