package app

import (
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/transform"
	"github.com/robot-operator/robot-operator/internal/workload"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	robotfake "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/fake"
)

// TestInformersWaitForTheRobots: the Deployments' informer starts only once
// the Robot cache has synced, so that a Robot's own Deployment, listed at
// start-up, is cached whole, not as a stub of an object whose Robot the
// transform cannot find yet; and a forged Deployment naming the same Robot
// is a stub.
func TestInformersWaitForTheRobots(t *testing.T) {
	robot := robottest.NewRobot("web", 1)
	controller := []metav1.OwnerReference{{APIVersion: robotv1beta1.SchemeGroupVersion.String(), Kind: "Robot", Name: robot.Name, UID: robot.UID, Controller: ptr.To(true)}}
	labelled := map[string]string{workload.LabelManagedBy: workload.LabelManagedByValue}
	own := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: robot.Namespace, Name: "web", UID: "own", Labels: labelled, OwnerReferences: controller}}
	forged := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: robot.Namespace, Name: "forged", UID: "forged", Labels: labelled, OwnerReferences: controller}}

	robots := robotfake.NewClientset(robot)
	listing := make(chan struct{})
	var listed sync.Once
	release := make(chan struct{})
	robots.PrependReactor("list", "robots", func(k8stesting.Action) (bool, runtime.Object, error) {
		listed.Do(func() { close(listing) })
		<-release
		return false, nil, nil
	})
	kube := k8sfake.NewClientset(own, forged)
	c := &clients{kube: kube, robots: robots, gateway: gatewayfake.NewClientset()}
	inf := newInformers(Options{}, c)
	deployments := inf.kube.Apps().V1().Deployments()
	deployments.Informer() // asked for, as the Controller does
	stop := make(chan struct{})
	defer func() {
		close(stop)
		inf.shutdown()
	}()
	inf.start(stop)

	<-listing
	time.Sleep(200 * time.Millisecond) // time for a Deployment list, were it sent
	for _, action := range kube.Actions() {
		if action.GetResource().Resource == "deployments" {
			t.Fatalf("the Deployments were %sed before the Robot cache synced", action.GetVerb())
		}
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for !deployments.Informer().HasSynced() {
		if time.Now().After(deadline) {
			t.Fatal("the Deployment cache did not sync once the Robot cache had")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cached, err := deployments.Lister().Deployments(robot.Namespace).Get("web")
	if err != nil {
		t.Fatal(err)
	}
	if transform.IsStub(cached) {
		t.Errorf("the Robot's own Deployment is cached as a stub")
	}
	cached, err = deployments.Lister().Deployments(robot.Namespace).Get("forged")
	if err != nil {
		t.Fatal(err)
	}
	if !transform.IsStub(cached) {
		t.Errorf("a Deployment named otherwise, with the Robot's UID as controller, is cached whole")
	}
}
