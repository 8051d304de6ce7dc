//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// The tests of this file give a Robot a sidecar and an init container, a
// grace period and a preStop hook: on its pods, diagnosed, refused when
// inconsistent, and kept through v1alpha1.

// withContainers gives robot a sidecar, proxy, and an init container,
// migrate, which share an emptyDir with each other.
func withContainers(robot *robotv1beta1.Robot) *robotv1beta1.Robot {
	robot.Spec.Volumes = append(robot.Spec.Volumes, robotv1beta1.RobotVolume{Name: "shared", EmptyDir: &corev1.EmptyDirVolumeSource{}})
	robot.Spec.Sidecars = []robotv1beta1.RobotSidecar{{
		RobotContainer: robotv1beta1.RobotContainer{
			Name: "proxy", Image: image2, Args: []string{"netexec", "--http-port=15001"},
			VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}},
		},
		Ports:          []robotv1beta1.RobotPort{{Name: "proxy", ContainerPort: 15001}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("proxy")}}},
	}}
	robot.Spec.InitContainers = []robotv1beta1.RobotContainer{{
		Name: "migrate", Image: image1, Args: []string{"migrate", "up"},
		VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/shared", ReadOnly: true}},
	}}
	return robot
}

// TestSidecarsAndInitContainers: a restricted Robot with a sidecar, an init
// container, a grace period and a preStop sleep gets them on its pod
// template, the sidecar first and restarting always, every container
// restricted, so that its pods are admitted where Pod Security "restricted"
// is enforced; and the sidecar deleted by hand, or moved after the init
// container, is put back.
func TestSidecarsAndInitContainers(t *testing.T) {
	parallel(t)
	requireAuditLog(t)
	ns := newNamespace(t)
	patch := `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted","pod-security.kubernetes.io/enforce-version":"latest"}}}`
	if _, err := env.kube.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling namespace %s: %v", ns, err)
	}
	robot := withContainers(newRobot(ns, "web", 1))
	robot.Spec.Ports = httpPorts(8080)
	robot.Spec.SecurityProfile = robotv1beta1.SecurityProfileRestricted
	robot.Spec.TerminationGracePeriodSeconds = ptr.To[int64](45)
	robot.Spec.PreStop = &robotv1beta1.RobotPreStop{Sleep: &robotv1beta1.RobotSleep{Seconds: 10}}
	createRobot(t, robot)
	robot = waitForRobotReady(t, ns, "web")
	pods := waitForPods(t, ns, robot.Status.Selector, 1, image1)

	d := getDeployment(t, ns, "web")
	pod := d.Spec.Template.Spec
	if names := containerNames(pod.InitContainers); names != "proxy,migrate" {
		t.Fatalf("the pod template's init containers are %s, want the sidecar proxy, then the init container migrate", names)
	}
	proxy, migrate := pod.InitContainers[0], pod.InitContainers[1]
	if ptr.Deref(proxy.RestartPolicy, "") != corev1.ContainerRestartPolicyAlways || migrate.RestartPolicy != nil {
		t.Errorf("restart policies: proxy %v, migrate %v; want Always and none", proxy.RestartPolicy, migrate.RestartPolicy)
	}
	if len(proxy.Ports) != 1 || proxy.Ports[0].Name != "proxy" || proxy.ReadinessProbe == nil || proxy.ReadinessProbe.TCPSocket == nil {
		t.Errorf("the sidecar's ports %+v and readiness probe %s, want proxy: 15001 and the TCP probe", proxy.Ports, asJSON(proxy.ReadinessProbe))
	}
	if !sameJSON(t, migrate.Args, []string{"migrate", "up"}) || len(migrate.VolumeMounts) != 1 {
		t.Errorf("the init container's args %v and mounts %+v", migrate.Args, migrate.VolumeMounts)
	}
	main := robotContainer(t, d)
	for _, c := range []corev1.Container{proxy, migrate} {
		if !sameJSON(t, c.SecurityContext, main.SecurityContext) {
			t.Errorf("container %s's security context is %s, the Robot's %s: want the same", c.Name, asJSON(c.SecurityContext), asJSON(main.SecurityContext))
		}
	}
	if ptr.Deref(pod.TerminationGracePeriodSeconds, 0) != 45 {
		t.Errorf("terminationGracePeriodSeconds %v, want 45", pod.TerminationGracePeriodSeconds)
	}
	if l := main.Lifecycle; l == nil || l.PreStop == nil || l.PreStop.Sleep == nil || l.PreStop.Sleep.Seconds != 10 {
		t.Errorf("the Robot's container's lifecycle is %s, want a preStop sleep of 10 s", asJSON(main.Lifecycle))
	}
	// Admitted under Pod Security "restricted", every container of them.
	if names := containerNames(pods[0].Spec.InitContainers); names != "proxy,migrate" {
		t.Errorf("pod %s's init containers are %s, want proxy,migrate", pods[0].Name, names)
	}

	// kubectl edit, the sidecar deleted.
	edited := time.Now()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := getDeployment(t, ns, "web")
		d.Spec.Template.Spec.InitContainers = d.Spec.Template.Spec.InitContainers[1:]
		_, err := env.kube.AppsV1().Deployments(ns).Update(t.Context(), d, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
	if err != nil {
		t.Fatalf("removing the sidecar from Deployment %s/web: %v", ns, err)
	}
	waitForDeployment(t, ns, "web", "has the sidecar back, first", func(d *appsv1.Deployment) bool {
		return containerNames(d.Spec.Template.Spec.InitContainers) == "proxy,migrate"
	})
	waitForEventMessage(t, ns, robot, "DeploymentUpdated", `initContainers[name="proxy"] is not set`)
	expectOneWrite(t, ns, edited)

	// The sidecar moved after the init container: the same containers, in
	// an order that would run the migration without its proxy.
	edited = time.Now()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := getDeployment(t, ns, "web")
		init := d.Spec.Template.Spec.InitContainers
		init[0], init[1] = init[1], init[0]
		_, err := env.kube.AppsV1().Deployments(ns).Update(t.Context(), d, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
	if err != nil {
		t.Fatalf("reordering the init containers of Deployment %s/web: %v", ns, err)
	}
	waitForDeployment(t, ns, "web", "has the sidecar first again", func(d *appsv1.Deployment) bool {
		return containerNames(d.Spec.Template.Spec.InitContainers) == "proxy,migrate"
	})
	waitForEventMessage(t, ns, robot, "DeploymentUpdated", "initContainers are in the order migrate, proxy; the Robot asks for proxy, migrate")
	expectOneWrite(t, ns, edited)
}

// expectOneWrite checks that the operator wrote the Deployment web of ns
// once since edited: the revert of the edit. A second write would mean that
// the Deployment, as the API server stores and defaults it (the sidecar's
// probe timings, the containers' pull policies and termination message
// paths), still looks different from what the Robot asks for.
func expectOneWrite(t *testing.T, ns string, edited time.Time) {
	t.Helper()
	waitForRobot(t, ns, "web", convergeTimeout, "is settled after the edit", robotSettled)
	waitForNoOperatorWrites(t, ns)
	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, After: edited, Namespace: ns, Resource: "deployments", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 1 {
		t.Errorf("the operator wrote the Deployment %d times after the edit, want 1: %v", len(writes), writes)
	}
}

// containerNames are the names of containers, joined by commas.
func containerNames(containers []corev1.Container) string {
	var names []string
	for _, c := range containers {
		names = append(names, c.Name)
	}
	return strings.Join(names, ",")
}

// TestInitContainerImagePullFailed: an init container whose image cannot be
// pulled is named on Ready's message, with its image and the runtime's
// message, and the Robot recovers once it is fixed.
func TestInitContainerImagePullFailed(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	robot := withContainers(simulating(ns, "web", "init-pull-fails"))
	robot.Spec.InitContainers[0].Image = pullFailsImage
	createRobot(t, robot)
	since := time.Now()
	expectCause(t, ns, "web", robotv1beta1.ReasonImagePullFailed, since,
		`init container "migrate" cannot pull image "`+pullFailsImage+`" (ErrImagePull)`, "no such host")

	// Fixed: an image that can be pulled.
	patchRobot(t, ns, "web", fmt.Sprintf(`{"spec":{"podLabels":null,"initContainers":[{"name":"migrate","image":%q}]}}`, image1))
	expectRecovered(t, ns, "web")
}

// TestSidecarNotReady: a sidecar that runs and never becomes ready keeps
// the pods from being ready; after the readiness grace of 30 s, the Robot
// names it.
func TestSidecarNotReady(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	createRobot(t, withContainers(simulating(ns, "web", "sidecar-not-ready")))
	// The clock starts when the sidecar started or the pod stopped being
	// ready, whichever is later, as the status says it (to the second): a
	// clock started by the test, a moment after the Robot's create, can be
	// up to a second late on it.
	since := sidecarNotReadySince(t, ns, "web", "proxy")
	waitForRobotReason(t, ns, "web", metav1.ConditionFalse, robotv1beta1.ReasonReadinessProbeFailing, 30*time.Second+causeTimeout)
	if took := time.Since(since); took < 30*time.Second {
		t.Errorf("the Robot said %s %v after its sidecar started, not ready, before the 30 s grace", robotv1beta1.ReasonReadinessProbeFailing, took)
	}
	expectCause(t, ns, "web", robotv1beta1.ReasonReadinessProbeFailing, since.Add(30*time.Second), `sidecar "proxy" of pod web-`, "running but not ready")

	// Fixed: a release whose sidecar's probe succeeds.
	stopSimulating(t, ns, "web")
	expectRecovered(t, ns, "web")
}

// TestContainersInvalidRobotsAreRejected: the CRD refuses init containers
// and sidecars that would clash with each other or with the Robot's
// container, and a preStop hook that does not fit the grace period, with
// messages that say why.
func TestContainersInvalidRobotsAreRejected(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	sidecar := func(fields string) string { return "sidecars: [{name: proxy, image: proxy:1" + fields + "}]" }
	for _, tc := range []struct {
		input    string
		name     string
		spec     []string
		contains []string
	}{
		{"a sidecar named `robot`", "sidecar-robot", []string{"sidecars: [{name: robot, image: proxy:1}]"},
			[]string{"spec.sidecars[0].name", "a container cannot be named robot: that is the name of the Robot's own container"}},
		{"an init container named `robot`", "init-robot", []string{"initContainers: [{name: robot, image: migrate:1}]"},
			[]string{"spec.initContainers[0].name", "a container cannot be named robot"}},
		{"a sidecar and an init container of one name", "same-name", []string{sidecar(""), "initContainers: [{name: proxy, image: migrate:1}]"},
			[]string{"spec.sidecars", "a sidecar and an init container cannot have the same name"}},
		{"two sidecars of one name", "two-proxies", []string{"sidecars: [{name: proxy, image: a}, {name: proxy, image: b}]"},
			[]string{"spec.sidecars[1]", "Duplicate value"}},
		{"five sidecars", "five-sidecars", []string{"sidecars: [{name: a, image: x}, {name: b, image: x}, {name: c, image: x}, {name: d, image: x}, {name: e, image: x}]"},
			[]string{"spec.sidecars", "must have at most 4 items"}},
		{"a container name that is no DNS label", "bad-name", []string{"initContainers: [{name: Migrate, image: migrate:1}]"},
			[]string{"spec.initContainers[0].name", "a container's name must be a DNS-1123 label"}},
		{"an init container mounting no volume", "mount-nothing", []string{"initContainers: [{name: migrate, image: migrate:1, volumeMounts: [{name: missing, mountPath: /x}]}]"},
			[]string{"spec.initContainers", "every volumeMounts entry of an init container must name a volume of spec.volumes"}},
		{"a sidecar port named as a Robot port", "port-name", []string{"ports: [{name: http, containerPort: 8080}]", sidecar(", ports: [{name: http, containerPort: 15001}]")},
			[]string{"spec.sidecars", "a sidecar's port cannot have the name of another port of the pod"}},
		{"a sidecar's `cpu: 1e1.5`", "sidecar-quantity", []string{sidecar(", resources: {requests: {cpu: 1e1.5}}")},
			[]string{"spec.sidecars[0].resources.requests", `must be a quantity such as 128Mi, 1Gi, 500m or 0.5; "1e1.5" is not one`}},
		{"`preStop.sleep` of the default grace period", "sleep-30", []string{"preStop: {sleep: {seconds: 30}}"},
			[]string{"spec.preStop", "preStop.sleep.seconds must be below terminationGracePeriodSeconds (30 when unset)"}},
		{"`preStop.sleep` longer than `terminationGracePeriodSeconds`", "sleep-long", []string{"terminationGracePeriodSeconds: 5", "preStop: {sleep: {seconds: 10}}"},
			[]string{"spec.preStop", "preStop.sleep.seconds must be below terminationGracePeriodSeconds"}},
		{"`preStop` with both `sleep` and `exec`", "sleep-and-exec", []string{"preStop: {sleep: {seconds: 1}, exec: {command: [drain]}}"},
			[]string{"spec.preStop", "preStop must have exactly one of sleep or exec"}},
		{"`preStop.exec` with no command", "exec-nothing", []string{"preStop: {exec: {command: []}}"},
			[]string{"spec.preStop.exec.command", "should have at least 1 items"}},
	} {
		manifest := robotYAML(ns, tc.name, append([]string{"image: " + image1}, tc.spec...)...)
		code, apiMsg := sendRaw(t, ns, tc.name, manifest, false)
		t.Logf("| %s | %d | %s |", tc.input, code, markdownCode(apiMsg))
		if code != http.StatusUnprocessableEntity {
			t.Errorf("%s: the API server answered %d, want %d (Invalid): %s", tc.input, code, http.StatusUnprocessableEntity, apiMsg)
		}
		for _, want := range tc.contains {
			if !strings.Contains(apiMsg, want) {
				t.Errorf("%s: the message does not say %q: %s", tc.input, want, apiMsg)
			}
		}
	}
	// And what fits: a preStop sleep below the grace period it names.
	ok := robotYAML(ns, "fits", "image: "+image1, "terminationGracePeriodSeconds: 60", "preStop: {sleep: {seconds: 45}}", sidecar(""),
		"initContainers: [{name: migrate, image: migrate:1}]")
	if _, stderr, err := kubectl(t.Context(), ok, "apply", "--dry-run=server", "-f", "-"); err != nil {
		t.Errorf("a Robot with a sidecar, an init container and a preStop sleep below its grace period is refused: %v: %s", err, stderr)
	}
}

// TestContainersSurviveAnEditThroughV1alpha1: a Robot's sidecar, init
// container, grace period and preStop hook, which v1alpha1 has no field
// for, survive a replace through v1alpha1, and stay on the Deployment.
func TestContainersSurviveAnEditThroughV1alpha1(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := t.Context()
	waitForConversion(t, ns)
	robot := withContainers(newRobot(ns, "web", 1))
	robot.Spec.TerminationGracePeriodSeconds = ptr.To[int64](45)
	robot.Spec.PreStop = &robotv1beta1.RobotPreStop{Exec: &robotv1beta1.RobotExec{Command: []string{"/drain", "--wait=5s"}}}
	createRobot(t, robot)
	old, err := env.robots.RobotV1alpha1().Robots(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading it as v1alpha1: %v", err)
	}
	if data := old.Annotations[robotv1alpha1.ConversionDataAnnotation]; !strings.Contains(data, `"proxy"`) || !strings.Contains(data, `"/drain"`) {
		t.Fatalf("as v1alpha1, %s is %q: want the sidecar and the preStop hook in it", robotv1alpha1.ConversionDataAnnotation, data)
	}
	for attempt := 0; ; attempt++ {
		old.Spec.Replicas = ptr.To[int32](2)
		_, err := env.robots.RobotV1alpha1().Robots(ns).Update(ctx, old, metav1.UpdateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsConflict(err) || attempt == 5 {
			t.Fatalf("replacing it through v1alpha1: %v", err)
		}
		if old, err = env.robots.RobotV1alpha1().Robots(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got := getRobot(t, ns, "web")
	if len(got.Spec.Sidecars) != 1 || len(got.Spec.InitContainers) != 1 || ptr.Deref(got.Spec.TerminationGracePeriodSeconds, 0) != 45 ||
		got.Spec.PreStop == nil || got.Spec.PreStop.Exec == nil || ptr.Deref(got.Spec.Replicas, 0) != 2 {
		t.Errorf("after the replace through v1alpha1, as v1beta1: %s; want the sidecar, the init container, 45, the preStop command and 2 replicas", asJSON(got.Spec))
	}
	waitForDeployment(t, ns, "web", "runs 2 replicas with the sidecar, the init container and the preStop hook", func(d *appsv1.Deployment) bool {
		pod := d.Spec.Template.Spec
		return ptr.Deref(d.Spec.Replicas, 0) == 2 && containerNames(pod.InitContainers) == "proxy,migrate" &&
			ptr.Deref(pod.TerminationGracePeriodSeconds, 0) == 45 && pod.Containers[0].Lifecycle != nil
	})
}

// sidecarNotReadySince waits for a pod of the Robot ns/name whose sidecar
// runs, started and not ready, and returns since when the pod's status says
// it has been so: the later of the sidecar's start and the pod's last Ready
// transition.
func sidecarNotReadySince(t *testing.T, ns, name, sidecar string) time.Time {
	t.Helper()
	var since time.Time
	eventually(t, convergeTimeout, fmt.Sprintf("a pod of Robot %s/%s whose sidecar %s runs, not ready", ns, name, sidecar), func(ctx context.Context) (bool, string, error) {
		pods, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labelRobot + "=" + name})
		if err != nil {
			return false, "", err
		}
		for _, p := range pods.Items {
			for _, c := range p.Status.InitContainerStatuses {
				if c.Name != sidecar || c.State.Running == nil || !ptr.Deref(c.Started, false) || c.Ready || p.DeletionTimestamp != nil {
					continue
				}
				since = c.State.Running.StartedAt.Time
				for _, condition := range p.Status.Conditions {
					if condition.Type == corev1.PodReady && condition.LastTransitionTime.After(since) {
						since = condition.LastTransitionTime.Time
					}
				}
				return true, "", nil
			}
		}
		return false, summarizePods(pods.Items), nil
	})
	return since
}
