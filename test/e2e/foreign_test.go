//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// foreignEdit is a change another writer (kubectl edit, another controller)
// makes to a Robot's Deployment with a plain update.
type foreignEdit struct {
	name string
	edit func(d *appsv1.Deployment, c *corev1.Container)
	// want reports whether the Deployment, once converged, is as it should
	// be: what the Robot sets is back, what the other writer added to fields
	// the Robot does not set is still there.
	want func(robot *robotv1beta1.Robot, d *appsv1.Deployment, c *corev1.Container) bool
}

var foreignEdits = []foreignEdit{
	{
		name: "args added",
		edit: func(_ *appsv1.Deployment, c *corev1.Container) { c.Args = []string{"--foreign"} },
		want: func(robot *robotv1beta1.Robot, _ *appsv1.Deployment, c *corev1.Container) bool {
			if len(robot.Spec.Args) > 0 {
				return slices.Equal(c.Args, robot.Spec.Args)
			}
			return slices.Equal(c.Args, []string{"--foreign"})
		},
	},
	{
		name: "command added",
		edit: func(_ *appsv1.Deployment, c *corev1.Container) { c.Command = []string{"/foreign"} },
		want: func(_ *robotv1beta1.Robot, _ *appsv1.Deployment, c *corev1.Container) bool {
			return slices.Equal(c.Command, []string{"/foreign"})
		},
	},
	{
		name: "env var added",
		edit: func(_ *appsv1.Deployment, c *corev1.Container) {
			c.Env = append(c.Env, corev1.EnvVar{Name: "FOREIGN", Value: "1"})
		},
		want: func(_ *robotv1beta1.Robot, _ *appsv1.Deployment, c *corev1.Container) bool {
			return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "FOREIGN" })
		},
	},
	{
		name: "port added",
		edit: func(_ *appsv1.Deployment, c *corev1.Container) {
			c.Ports = append(c.Ports, corev1.ContainerPort{Name: "metrics", ContainerPort: 9999, Protocol: corev1.ProtocolTCP})
		},
		want: func(_ *robotv1beta1.Robot, _ *appsv1.Deployment, c *corev1.Container) bool {
			return slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == 9999 })
		},
	},
	{
		name: "memory limit added",
		edit: func(_ *appsv1.Deployment, c *corev1.Container) {
			if c.Resources.Limits == nil {
				c.Resources.Limits = corev1.ResourceList{}
			}
			c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("64Mi")
		},
		want: func(_ *robotv1beta1.Robot, _ *appsv1.Deployment, c *corev1.Container) bool {
			_, ok := c.Resources.Limits[corev1.ResourceMemory]
			return ok
		},
	},
	{
		name: "label and annotation added",
		edit: func(d *appsv1.Deployment, _ *corev1.Container) {
			d.Labels["team"] = "blue"
			d.Annotations["example.com/note"] = "theirs"
		},
		want: func(_ *robotv1beta1.Robot, d *appsv1.Deployment, _ *corev1.Container) bool {
			return d.Labels["team"] == "blue" && d.Annotations["example.com/note"] == "theirs"
		},
	},
	{
		name: "sidecar added",
		edit: func(d *appsv1.Deployment, _ *corev1.Container) {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: image2})
		},
		want: func(_ *robotv1beta1.Robot, d *appsv1.Deployment, _ *corev1.Container) bool {
			return len(d.Spec.Template.Spec.Containers) == 2
		},
	},
	{
		name: "replicas changed",
		edit: func(d *appsv1.Deployment, _ *corev1.Container) {
			d.Spec.Replicas = ptr.To(ptr.Deref(d.Spec.Replicas, 1) + 2)
		},
		want: func(robot *robotv1beta1.Robot, d *appsv1.Deployment, _ *corev1.Container) bool {
			return ptr.Deref(d.Spec.Replicas, 1) == ptr.Deref(robot.Spec.Replicas, 1)
		},
	},
	{
		name: "image changed",
		edit: func(_ *appsv1.Deployment, c *corev1.Container) { c.Image = "nginx:1.27" },
		want: func(robot *robotv1beta1.Robot, _ *appsv1.Deployment, c *corev1.Container) bool {
			return c.Image == robot.Spec.Image
		},
	},
	{
		name: "managed-by label removed",
		edit: func(d *appsv1.Deployment, _ *corev1.Container) { delete(d.Labels, labelManagedBy) },
		want: func(_ *robotv1beta1.Robot, d *appsv1.Deployment, _ *corev1.Container) bool {
			return d.Labels[labelManagedBy] == labelManagedByValue
		},
	},
}

// randomRobot returns a Robot that the CRD admits, with a random choice of
// the optional fields set: none of them in round 0, all of them in round 1,
// any in the rounds after, so that every edit meets both a Robot that sets
// the field it touches and one that does not.
func randomRobot(rng *rand.Rand, round int, ns, name string) *robotv1beta1.Robot {
	robot := newRobot(ns, name, int32(1+rng.IntN(2)))
	set := func() bool {
		switch round {
		case 0:
			return false
		case 1:
			return true
		}
		return rng.IntN(2) == 0
	}
	if set() {
		robot.Spec.Args = []string{"--robot", fmt.Sprint(rng.IntN(100))}
	}
	if set() {
		robot.Spec.Ports = httpPorts(int32(8000 + rng.IntN(1000)))
	}
	if set() {
		robot.Spec.Env = []corev1.EnvVar{
			{Name: "MODE", Value: "e2e"},
			{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		}
	}
	if set() {
		robot.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
		if set() {
			robot.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m")}
		}
	}
	return robot
}

// TestForeignEditsConverge: for Robots of random shapes and each kind of edit
// another writer makes to their Deployments, the operator converges in at
// most one write and then writes nothing: it reverts what it owns and leaves
// what the other writer added to fields the Robot does not set.
func TestForeignEditsConverge(t *testing.T) {
	parallel(t)
	requireAuditLog(t)
	ns := newNamespace(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	type trial struct {
		edit  foreignEdit
		robot *robotv1beta1.Robot
	}
	var trials []trial
	for round := range 3 {
		for i, edit := range foreignEdits {
			robot := createRobot(t, randomRobot(rng, round, ns, fmt.Sprintf("r%d-%d", round, i)))
			trials = append(trials, trial{edit: edit, robot: robot})
		}
	}
	for _, tr := range trials {
		waitForRobot(t, ns, tr.robot.Name, convergeTimeout, "is settled", robotSettled)
	}

	edited := time.Now()
	for _, tr := range trials {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := env.kube.AppsV1().Deployments(ns).Get(t.Context(), tr.robot.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			tr.edit.edit(d, robotContainer(t, d))
			_, err = env.kube.AppsV1().Deployments(ns).Update(t.Context(), d, metav1.UpdateOptions{FieldManager: "e2e-other-writer"})
			return err
		})
		if err != nil {
			t.Fatalf("%s on Deployment %s/%s: %v", tr.edit.name, ns, tr.robot.Name, err)
		}
	}

	for _, tr := range trials {
		waitForDeployment(t, ns, tr.robot.Name, "has settled after "+tr.edit.name, deploymentSettled)
		waitForRobot(t, ns, tr.robot.Name, convergeTimeout, "is settled after "+tr.edit.name, robotSettled)
	}
	// Every sync the edits caused has run by now; give late ones a moment.
	settled := time.Now()
	time.Sleep(5 * time.Second)

	for _, tr := range trials {
		what := fmt.Sprintf("%s on %s (%s)", tr.edit.name, tr.robot.Name, describeRobotShape(tr.robot))
		d := getDeployment(t, ns, tr.robot.Name)
		c := robotContainer(t, d)
		if !tr.edit.want(tr.robot, d, c) {
			t.Errorf("%s: the Deployment is not as it should be (what the Robot sets put back, the other writer's additions kept): %s, container %+v", what, summarizeDeployment(d), *c)
		}
		writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: edited, Namespace: ns, Resource: "deployments", Name: tr.robot.Name})
		if err != nil {
			t.Fatal(err)
		}
		// A create refused because the Deployment exists writes nothing: the
		// operator makes one when the Deployment has left its cache (its
		// managed-by label was removed).
		accepted := 0
		for _, w := range writes {
			if !w.refusedCreate() {
				accepted++
			}
		}
		if accepted > 1 {
			t.Errorf("%s: the operator wrote the Deployment %d times after the edit, want at most 1: %v", what, accepted, writes)
		}
		for _, w := range writes {
			if w.RequestReceivedTimestamp.After(settled) {
				t.Errorf("%s: the operator still writes once everything has settled: %s", what, &w)
			}
		}
		events, err := robotEvents(t.Context(), ns, tr.robot.UID, "DeploymentUpdated")
		if err != nil {
			t.Fatal(err)
		}
		if n := eventCount(events); n > 1 {
			t.Errorf("%s: %d DeploymentUpdated events, want at most 1: %s", what, n, summarizeEvents(events))
		}
	}
}

// describeRobotShape says which optional fields a Robot sets.
func describeRobotShape(robot *robotv1beta1.Robot) string {
	s := robot.Spec
	return fmt.Sprintf("replicas=%d args=%v ports=%v env=%d requests=%v limits=%v",
		ptr.Deref(s.Replicas, 1), s.Args, s.Ports, len(s.Env), s.Resources.Requests, s.Resources.Limits)
}
