//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestCreateRobot: a new Robot gets an owned Deployment as it asks, its pods
// run, and its status and printer columns say so.
func TestCreateRobot(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	robot := newRobot(ns, "web", 2)
	robot.Spec.Ports = httpPorts(8080)
	robot.Spec.Env = []corev1.EnvVar{
		{Name: "LOG_LEVEL", Value: "info"},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}
	robot = createRobot(t, robot)

	d := waitForDeployment(t, ns, "web", "exists", func(*appsv1.Deployment) bool { return true })
	checkControlledBy(t, d, robot)
	wantLabels := map[string]string{
		labelManagedBy: labelManagedByValue,
		labelName:      labelNameValue,
		labelInstance:  "web",
		labelRobot:     "web",
	}
	for key, value := range wantLabels {
		if got, ok := d.Labels[key]; !ok || got != value {
			t.Errorf("Deployment label %s = %q, want %q (labels: %v)", key, got, value, d.Labels)
		}
		if got, ok := d.Spec.Template.Labels[key]; !ok || got != value {
			t.Errorf("pod template label %s = %q, want %q (labels: %v)", key, got, value, d.Spec.Template.Labels)
		}
	}
	if want := map[string]string{labelRobot: "web"}; d.Spec.Selector == nil || !maps.Equal(d.Spec.Selector.MatchLabels, want) || len(d.Spec.Selector.MatchExpressions) > 0 {
		t.Errorf("Deployment selector = %v, want matchLabels %v", d.Spec.Selector, want)
	}
	if d.Annotations[annotationSpecHash] == "" {
		t.Errorf("Deployment has no %s annotation: %v", annotationSpecHash, d.Annotations)
	}
	if got := ptr.Deref(d.Spec.Replicas, -1); got != 2 {
		t.Errorf("Deployment replicas = %d, want 2", got)
	}
	c := robotContainer(t, d)
	if c.Image != image1 {
		t.Errorf("container image = %q, want %q", c.Image, image1)
	}
	wantPort := corev1.ContainerPort{Name: portName, ContainerPort: 8080, Protocol: corev1.ProtocolTCP}
	if !slices.Contains(c.Ports, wantPort) {
		t.Errorf("container ports = %+v, want them to include %+v", c.Ports, wantPort)
	}
	if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "LOG_LEVEL" }); i < 0 || c.Env[i].Value != "info" || c.Env[i].ValueFrom != nil {
		t.Errorf("container env = %+v, want LOG_LEVEL=info", c.Env)
	}
	if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_NAME" }); i < 0 || c.Env[i].ValueFrom == nil ||
		c.Env[i].ValueFrom.FieldRef == nil || c.Env[i].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("container env = %+v, want POD_NAME from the field metadata.name", c.Env)
	}

	robot = waitForRobotReady(t, ns, "web")
	if robot.Status.AvailableReplicas != 2 || robot.Status.ObservedGeneration != robot.Generation {
		t.Errorf("status: availableReplicas %d (want 2), observedGeneration %d (want %d)", robot.Status.AvailableReplicas, robot.Status.ObservedGeneration, robot.Generation)
	}
	if robot.Status.DeploymentName != "web" {
		t.Errorf("status.deploymentName = %q, want %q", robot.Status.DeploymentName, "web")
	}
	if want := labelRobot + "=web"; robot.Status.Selector != want {
		t.Errorf("status.selector = %q, want %q", robot.Status.Selector, want)
	}
	waitForPods(t, ns, labelRobot+"=web", 2, image1)

	// The printer columns, as a person sees them.
	out := mustKubectl(t, "get", "robot", "web", "-n", ns)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl get robot printed %d lines, want a header and one row:\n%s", len(lines), out)
	}
	if header, want := strings.Fields(lines[0]), []string{"NAME", "DESIRED", "READY", "AVAILABLE", "STATUS", "SYNCED", "ADDRESS", "AGE"}; !slices.Equal(header, want) {
		t.Errorf("kubectl get robot header = %v, want %v:\n%s", header, want, out)
	}
	row := strings.Fields(lines[1])
	if want := []string{"web", "2", "2", "2", robotv1beta1.ReasonRolloutComplete, "True", "http://web." + ns + ".svc:8080"}; len(row) != 8 || !slices.Equal(row[:7], want) {
		t.Errorf("kubectl get robot row = %v, want %v followed by the age:\n%s", row, want, out)
	}
	// -o wide adds the Synced reason, the up-to-date pods, the Service and
	// the image.
	out = mustKubectl(t, "get", "robot", "web", "-n", ns, "-o", "wide")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if header, want := strings.Fields(lines[0]), []string{"NAME", "DESIRED", "READY", "AVAILABLE", "STATUS", "SYNCED", "ADDRESS", "AGE", "SYNC-REASON", "UP-TO-DATE", "SERVICE", "IMAGE"}; !slices.Equal(header, want) {
		t.Errorf("kubectl get robot -o wide header = %v, want %v:\n%s", header, want, out)
	}
	if row, want := strings.Fields(lines[len(lines)-1]), []string{robotv1beta1.ReasonSynced, "2", "web", image1}; len(row) != 12 || !slices.Equal(row[8:], want) {
		t.Errorf("kubectl get robot -o wide row = %v, want it to end with %v:\n%s", row, want, out)
	}

	// One Normal Event names all that the first sync created.
	want := `Created Deployment "web", Service "web"`
	if _, err := env.kube.PolicyV1().PodDisruptionBudgets(ns).Get(t.Context(), "web", metav1.GetOptions{}); err == nil {
		want += `, PodDisruptionBudget "web"`
	}
	waitForEvents(t, ns, robot.UID, "Created", 1)
	events, err := robotEvents(t.Context(), ns, robot.UID, "Created")
	if err != nil {
		t.Fatal(err)
	}
	if eventCount(events) != 1 || events[0].Type != corev1.EventTypeNormal || events[0].Message != want {
		t.Errorf("creation Events: %s; want one Normal %q", summarizeEvents(events), want)
	}
}

// checkControlledBy fails the test unless the Deployment's controller is the
// Robot.
func checkControlledBy(t *testing.T, d *appsv1.Deployment, robot *robotv1beta1.Robot) {
	t.Helper()
	ref := metav1.GetControllerOf(d)
	if ref == nil || ref.APIVersion != robotv1beta1.SchemeGroupVersion.String() || ref.Kind != "Robot" ||
		ref.Name != robot.Name || ref.UID != robot.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("Deployment %s/%s controller = %s, want Robot %s uid %s, with blockOwnerDeletion", d.Namespace, d.Name, describeOwner(ref), robot.Name, robot.UID)
	}
}

// TestScaleRobot: a Robot scales through spec.replicas and through the scale
// subresource (kubectl scale), and its status.selector selects exactly its
// pods.
func TestScaleRobot(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	robot := createRobot(t, newRobot(ns, "web", 2))
	// A neighbour, whose pods the Robot's selector must not select.
	createRobot(t, newRobot(ns, "web-neighbour", 1))
	waitForRobotReady(t, ns, "web")
	waitForRobotReady(t, ns, "web-neighbour")

	patchRobot(t, ns, "web", `{"spec":{"replicas":4}}`)
	waitForDeployment(t, ns, "web", "has 4 replicas", func(d *appsv1.Deployment) bool { return ptr.Deref(d.Spec.Replicas, 1) == 4 })
	if robot = waitForRobotReady(t, ns, "web"); robot.Status.AvailableReplicas != 4 {
		t.Fatalf("after patching spec.replicas to 4: %s", summarizeRobot(robot))
	}

	mustKubectl(t, "scale", "robot/web", "--replicas=3", "-n", ns)
	if robot = getRobot(t, ns, "web"); ptr.Deref(robot.Spec.Replicas, 1) != 3 {
		t.Fatalf("kubectl scale --replicas=3 left spec.replicas at %d", ptr.Deref(robot.Spec.Replicas, 1))
	}
	waitForDeployment(t, ns, "web", "has 3 replicas", func(d *appsv1.Deployment) bool { return ptr.Deref(d.Spec.Replicas, 1) == 3 })
	if robot = waitForRobotReady(t, ns, "web"); robot.Status.AvailableReplicas != 3 {
		t.Fatalf("after kubectl scale --replicas=3: %s", summarizeRobot(robot))
	}

	// The scale subresource reports what an autoscaler needs.
	var scale autoscalingv1.Scale
	if err := env.robots.RobotV1beta1().RESTClient().Get().Namespace(ns).Resource("robots").Name("web").SubResource("scale").Do(t.Context()).Into(&scale); err != nil {
		t.Fatalf("getting robots/web/scale: %v", err)
	}
	if want := labelRobot + "=web"; scale.Spec.Replicas != 3 || scale.Status.Replicas != 3 || scale.Status.Selector != want {
		t.Errorf("robots/web/scale: spec.replicas %d, status.replicas %d, status.selector %q; want 3, 3, %q",
			scale.Spec.Replicas, scale.Status.Replicas, scale.Status.Selector, want)
	}

	// status.selector selects the Robot's pods, all of them and nothing
	// else.
	selected := waitForPods(t, ns, robot.Status.Selector, 3, image1)
	owned := robotPods(t, ns, robot)
	if got, want := podNames(selected), podNames(owned); !slices.Equal(got, want) {
		t.Errorf("status.selector %q selects pods %v; the Robot's pods (through its Deployment's ReplicaSets) are %v", robot.Status.Selector, got, want)
	}
}

// robotPods returns the pods, not being deleted, that belong to the Robot by
// ownership: pods controlled by a ReplicaSet controlled by the Deployment
// that the Robot controls.
func robotPods(t *testing.T, ns string, robot *robotv1beta1.Robot) []corev1.Pod {
	t.Helper()
	deployments, err := env.kube.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replicaSets, err := env.kube.AppsV1().ReplicaSets(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := env.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	controlledBy := func(obj metav1.Object, uids map[types.UID]bool) bool {
		ref := metav1.GetControllerOf(obj)
		return ref != nil && uids[ref.UID]
	}
	robotUIDs := map[types.UID]bool{robot.UID: true}
	deploymentUIDs := map[types.UID]bool{}
	for i := range deployments.Items {
		if controlledBy(&deployments.Items[i], robotUIDs) {
			deploymentUIDs[deployments.Items[i].UID] = true
		}
	}
	replicaSetUIDs := map[types.UID]bool{}
	for i := range replicaSets.Items {
		if controlledBy(&replicaSets.Items[i], deploymentUIDs) {
			replicaSetUIDs[replicaSets.Items[i].UID] = true
		}
	}
	var owned []corev1.Pod
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil && controlledBy(&pod, replicaSetUIDs) {
			owned = append(owned, pod)
		}
	}
	return owned
}

// podNames returns the pods' names, sorted.
func podNames(pods []corev1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// TestUpdateRobotImage: changing a Robot's image rolls its Deployment out to
// the new image, and the Robot's status follows.
func TestUpdateRobotImage(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "web", 2))
	before := waitForRobotReady(t, ns, "web")
	oldHash := getDeployment(t, ns, "web").Annotations[annotationSpecHash]

	after := patchRobot(t, ns, "web", fmt.Sprintf(`{"spec":{"image":%q}}`, image2))
	if after.Generation == before.Generation {
		t.Fatalf("changing spec.image left the Robot's generation at %d", after.Generation)
	}
	d := waitForDeployment(t, ns, "web", "runs "+image2, func(d *appsv1.Deployment) bool {
		c := robotContainer(t, d)
		return c.Image == image2
	})
	if d.Annotations[annotationSpecHash] == oldHash {
		t.Errorf("the Deployment's %s annotation stayed %q after the image changed", annotationSpecHash, oldHash)
	}
	robot := waitForRobotReady(t, ns, "web")
	if robot.Status.UpdatedReplicas != 2 || robot.Status.ObservedGeneration != after.Generation {
		t.Errorf("after the rollout: %s; want updatedReplicas 2 and observedGeneration %d", summarizeRobot(robot), after.Generation)
	}
	waitForPods(t, ns, robot.Status.Selector, 2, image2)
}

// TestDeletedDeploymentIsRecreated: when a Robot's Deployment is deleted,
// the operator creates it again, once.
func TestDeletedDeploymentIsRecreated(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	robot := createRobot(t, newRobot(ns, "web", 2))
	waitForRobotReady(t, ns, "web")
	old := getDeployment(t, ns, "web")
	waitForEvents(t, ns, robot.UID, "Created", 1)

	if err := env.kube.AppsV1().Deployments(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting Deployment %s/web: %v", ns, err)
	}
	recreated := waitForDeployment(t, ns, "web", "is recreated", func(d *appsv1.Deployment) bool { return d.UID != old.UID })
	checkControlledBy(t, recreated, robot)
	waitForRobotReady(t, ns, "web")
	waitForEvents(t, ns, robot.UID, "Created", 2)

	// Once, and only once: after a while there is still exactly that one
	// Deployment, and no further creation.
	time.Sleep(3 * time.Second)
	list, err := env.kube.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{LabelSelector: labelRobot + "=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].UID != recreated.UID {
		var uids []types.UID
		for _, d := range list.Items {
			uids = append(uids, d.UID)
		}
		t.Errorf("Deployments labelled %s=web: %v; want only the recreated one, %s", labelRobot, uids, recreated.UID)
	}
	// The first sync's Event names all it created, the Deployment first;
	// the second names the Deployment alone.
	events, err := robotEvents(t.Context(), ns, robot.UID, "Created")
	if err != nil {
		t.Fatal(err)
	}
	if n := eventCount(events); n != 2 {
		t.Errorf("Created recorded %d times, want 2 (created, recreated): %s", n, summarizeEvents(events))
	}
	for _, e := range events {
		if !strings.HasPrefix(e.Message, `Created Deployment "web"`) {
			t.Errorf("Created Event %q does not name the Deployment first", e.Message)
		}
	}
}

// TestDeletedRobotDeletesDeployment: deleting a Robot deletes its Deployment
// and pods, through the garbage collector.
func TestDeletedRobotDeletesDeployment(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	createRobot(t, newRobot(ns, "web", 2))
	waitForRobotReady(t, ns, "web")
	waitForPods(t, ns, labelRobot+"=web", 2, image1)

	if err := env.robots.RobotV1beta1().Robots(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting Robot %s/web: %v", ns, err)
	}
	waitForDeploymentGone(t, ns, "web")
	eventually(t, convergeTimeout, "the Robot's pods are gone", func(ctx context.Context) (bool, string, error) {
		pods, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labelRobot + "=web"})
		if err != nil {
			return false, "", err
		}
		return len(pods.Items) == 0, summarizePods(pods.Items), nil
	})
}

// TestRecreatedRobotConverges: a Robot deleted and created again under the
// same name finds the first one's Deployment until the garbage collector has
// deleted it. A finalizer holds that Deployment here, so the new Robot is
// sure to see it. The new Robot says it waits, records no warning (no one
// else's Deployment is in the way), and converges as soon as the old
// Deployment is gone, not at a periodic recheck.
func TestRecreatedRobotConverges(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	const finalizer = "e2e.robot.dev/hold"
	first := createRobot(t, newRobot(ns, "web", 1))
	waitForRobotReady(t, ns, "web")
	mustKubectl(t, "patch", "deployment/web", "-n", ns, "--type=merge", "-p", `{"metadata":{"finalizers":["`+finalizer+`"]}}`)
	release := func() {
		// Ignore a Deployment already gone.
		_, _, _ = kubectl(context.Background(), "", "patch", "deployment/web", "-n", ns, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	}
	t.Cleanup(release)

	if err := env.robots.RobotV1beta1().Robots(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting Robot %s/web: %v", ns, err)
	}
	waitForDeployment(t, ns, "web", "is being deleted by the garbage collector", func(d *appsv1.Deployment) bool { return d.DeletionTimestamp != nil })
	second := createRobot(t, newRobot(ns, "web", 1))
	if second.UID == first.UID {
		t.Fatalf("the Robot was not recreated: UID %s", second.UID)
	}
	robot := waitForRobot(t, ns, "web", convergeTimeout, "says it waits for the earlier Robot's Deployment", func(r *robotv1beta1.Robot) bool {
		c := readyCondition(r)
		return c != nil && c.ObservedGeneration == r.Generation && c.Reason == robotv1beta1.ReasonRolloutInProgress && strings.Contains(c.Message, "earlier Robot")
	})

	released := time.Now()
	release()
	robot = waitForRobotReady(t, ns, "web")
	if took := time.Since(released); took > 15*time.Second {
		t.Errorf("the Robot took %v to be Ready once the old Deployment could go, want well under the %v recheck", took.Round(time.Second), 30*time.Second)
	}
	checkControlledBy(t, getDeployment(t, ns, "web"), robot)
	events, err := robotEvents(t.Context(), ns, second.UID, robotv1beta1.ReasonDeploymentNameTaken)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 0 {
		t.Errorf("the new Robot was warned that its name is taken: %s", summarizeEvents(events))
	}
}
