package robotctl

import (
	"bytes"
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/robot-operator/robot-operator/internal/workload"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	robotfake "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/fake"
)

const (
	ns     = "shop"
	image1 = "registry.example/web:1.27"
	image2 = "registry.example/web:1.28"
	image3 = "registry.example/web:1.29"
)

// created is when the first revision was made; each next one a minute later.
var created = time.Date(2026, 11, 28, 14, 2, 0, 0, time.UTC)

// webRobot returns the Robot web with image and replicas.
func webRobot(image string, replicas int32) *robotv1beta1.Robot {
	return &robotv1beta1.Robot{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "web-uid", ResourceVersion: "41", Generation: 3},
		Spec:       robotv1beta1.RobotSpec{Image: image, Replicas: ptr.To(replicas)},
	}
}

// revisionOf returns the revision numbered number of robot's spec, as the
// operator makes it.
func revisionOf(t *testing.T, robot *robotv1beta1.Robot, number int64) *appsv1.ControllerRevision {
	t.Helper()
	revision, err := workload.NewRevision(robot, number)
	if err != nil {
		t.Fatal(err)
	}
	revision.CreationTimestamp = metav1.NewTime(created.Add(time.Duration(number-1) * time.Minute))
	return revision
}

// threeSpecs returns the Robot web at its third spec and its three
// revisions, oldest first: image1 x 1, then image2 x 1, then image2 x 3
// with LOG_LEVEL=debug.
func threeSpecs(t *testing.T) (*robotv1beta1.Robot, []*appsv1.ControllerRevision) {
	t.Helper()
	first := webRobot(image1, 1)
	second := webRobot(image2, 1)
	third := webRobot(image2, 3)
	third.Spec.Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}}
	return third, []*appsv1.ControllerRevision{revisionOf(t, first, 1), revisionOf(t, second, 2), revisionOf(t, third, 3)}
}

// fixture holds the fake clientsets a command runs against. The Robots'
// is the simple one: the one that manages fields has no schema for them.
type fixture struct {
	robots *robotfake.Clientset
	kube   *kubefake.Clientset
}

func newFixture(robot *robotv1beta1.Robot, revisions ...*appsv1.ControllerRevision) *fixture {
	var robots, kube []runtime.Object
	if robot != nil {
		robots = append(robots, robot)
	}
	for _, revision := range revisions {
		kube = append(kube, revision)
	}
	return &fixture{robots: robotfake.NewSimpleClientset(robots...), kube: kubefake.NewClientset(kube...)}
}

func (f *fixture) clients() Clients { return Clients{Robots: f.robots, Kube: f.kube} }

// run runs the kubectl robot command with args against the fixture, and
// returns its exit code, standard output and error.
func (f *fixture) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	connect := func() (Clients, string, error) { return f.clients(), ns, nil }
	code := Execute(context.Background(), NewCommand(connect, &stdout, &stderr), args, &stderr)
	return code, stdout.String(), stderr.String()
}

// writes returns the requests that wrote to the Robots.
func (f *fixture) writes() []string {
	var writes []string
	for _, action := range f.robots.Actions() {
		if verb := action.GetVerb(); verb != "get" && verb != "list" && verb != "watch" {
			writes = append(writes, verb+" "+action.GetResource().Resource)
		}
	}
	return writes
}
