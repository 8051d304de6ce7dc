package writer

import (
	"strings"
	"testing"

	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"

	appsv1 "k8s.io/api/apps/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

// deploymentObjects returns the writer of Deployments, through a fake
// clientset.
func deploymentObjects() *Objects[*appsv1.Deployment, *appsv1ac.DeploymentApplyConfiguration] {
	kube := k8sfake.NewClientset()
	return NewObjects(New(nil, record.NewFakeRecorder(10), nil), Kind[*appsv1.Deployment, *appsv1ac.DeploymentApplyConfiguration]{
		Name: "Deployment",
		Client: func(namespace string) Client[*appsv1.Deployment, *appsv1ac.DeploymentApplyConfiguration] {
			return kube.AppsV1().Deployments(namespace)
		},
		SpecHash: func(d *appsv1ac.DeploymentApplyConfiguration) string {
			return d.Annotations[workload.AnnotationSpecHash]
		},
		Drift:      drift.DeploymentDriftSkippingSpecs,
		Generation: true,
	})
}

// TestSpecComparisonSkippedOnlyWhileSpecsAreUnchanged: once the specs have
// matched, status-only updates skip the comparison of specs, but another
// writer's change to the spec (which raises the Deployment's generation) is
// still seen.
func TestSpecComparisonSkippedOnlyWhileSpecsAreUnchanged(t *testing.T) {
	robot := robottest.NewRobot("test", 2)
	desired, err := workload.NewDeployment(robot)
	deployment := robottest.LiveDeploymentOf(t, desired, err)
	objects := deploymentObjects()
	if drift := objects.Drift(desired, deployment); drift != "" {
		t.Fatalf("drift %q for the Deployment as applied", drift)
	}
	if !objects.checked.Unchanged(deployment.UID, drift.Version{Generation: deployment.Generation}, desired.Annotations[workload.AnnotationSpecHash]) {
		t.Fatal("a matching spec was not remembered: every status update would compare specs again")
	}
	scaled := deployment.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](5)
	scaled.Generation++
	if drift := objects.Drift(desired, scaled); !strings.Contains(drift, "spec.replicas is 5") {
		t.Errorf("drift %q after another writer scaled the Deployment, want spec.replicas named", drift)
	}
}

// TestSpecComparisonNeedsAGenerationOrAResourceVersion: for a kind whose
// generation does not follow its spec (a Service's), the memo keys on the
// resourceVersion instead: another writer's change to the spec, with the
// generation unchanged, is still seen, since any write moves the
// resourceVersion.
func TestSpecComparisonNeedsAGenerationOrAResourceVersion(t *testing.T) {
	robot := robottest.NewRobot("test", 2)
	desired, err := workload.NewDeployment(robot)
	deployment := robottest.LiveDeploymentOf(t, desired, err)
	objects := deploymentObjects()
	objects.kind.Generation = false
	if drift := objects.Drift(desired, deployment); drift != "" {
		t.Fatalf("drift %q for the Deployment as applied", drift)
	}
	specHash := desired.Annotations[workload.AnnotationSpecHash]
	if !objects.checked.Unchanged(deployment.UID, drift.Version{ResourceVersion: deployment.ResourceVersion}, specHash) {
		t.Fatal("a matching spec was not remembered at its resourceVersion: every sync would compare specs again")
	}
	if objects.checked.Unchanged(deployment.UID, drift.Version{Generation: deployment.Generation}, specHash) {
		t.Fatal("the memo keyed on the generation of a kind whose generation does not follow its spec")
	}
	scaled := deployment.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](5)
	scaled.ResourceVersion = "8"
	if drift := objects.Drift(desired, scaled); !strings.Contains(drift, "spec.replicas is 5") {
		t.Errorf("drift %q after another writer scaled it with the generation unchanged, want spec.replicas named", drift)
	}
}
