//go:build e2e

// Package e2e tests robot-operator end to end, as a user runs it: against the
// cluster that KUBECONFIG points at, with the CRD installed from
// artifacts/crd/ and the operator built from this tree and run as a separate
// process. `make e2e` starts the local cluster and runs them.
//
// This file holds what the tests share: the environment TestMain sets up, the
// operator process, kubectl, per-test namespaces, waiting, and what a failed
// test prints.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
)

// What the operator promises about the Deployments it manages. They are
// repeated here, not imported, because they are the contract under test.
const (
	labelManagedBy      = "app.kubernetes.io/managed-by"
	labelManagedByValue = "robot-operator"
	labelName           = "app.kubernetes.io/name"
	labelNameValue      = "robot"
	labelInstance       = "app.kubernetes.io/instance"
	labelRobot          = "robot.dev/name"
	annotationSpecHash  = "robot.dev/spec-hash"
	containerName       = "robot"
	portName            = "http"
	fieldManager        = "robot-operator"

	// operatorUserAgentPrefix starts the user agent of every request the
	// operator sends, whatever its version.
	operatorUserAgentPrefix = "robot-operator/"
)

const (
	// pollInterval is how often the tests look again while they wait.
	pollInterval = 250 * time.Millisecond
	// convergeTimeout bounds how long the operator and the cluster's own
	// controllers may take to bring a Robot to what it asks. It is generous:
	// the tests run on small, shared machines.
	convergeTimeout = 90 * time.Second
	// operatorStartTimeout bounds how long the operator may take to log
	// "Started workers".
	operatorStartTimeout = 90 * time.Second

	// Images the Robots run. kwok runs no containers, so they are never
	// pulled; they only need to differ.
	image1 = "registry.k8s.io/e2e-test-images/agnhost:2.53"
	image2 = "registry.k8s.io/e2e-test-images/agnhost:2.54"
)

// environment is what TestMain sets up for all the tests.
type environment struct {
	root       string // the repository's root directory
	kubeconfig string
	kubectlBin string
	kube       kubernetes.Interface
	robots     clientset.Interface
	operator   *operator
	audit      *auditLog
	tempDir    string // holds the operator's binary
	// webhookPort is where the shared operator serves the CRD's
	// conversion webhook, on 127.0.0.1.
	webhookPort int
}

// env is the environment of this run; TestMain sets it.
var env *environment

// operator is the robot-operator process under test.
type operator struct {
	bin     string
	args    []string
	logPath string

	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd has exited
	waitErr error         // how cmd exited; set before exited is closed
}

// start starts the operator, its output appended to o.logPath, and waits for
// it to log that its workers run.
func (o *operator) start() error {
	offset, err := o.launch()
	if err != nil {
		return err
	}
	return o.waitForLog(offset, `"Started workers"`, operatorStartTimeout)
}

// launch starts the operator, its output appended to o.logPath, without
// waiting for anything (a follower never starts workers), and returns where
// its log begins in that file.
func (o *operator) launch() (int64, error) {
	out, err := os.OpenFile(o.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	info, err := out.Stat()
	if err != nil {
		out.Close()
		return 0, err
	}
	offset := info.Size()
	fmt.Fprintf(out, "=== e2e: %s starting %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), o.bin, strings.Join(o.args, " "))

	cmd := exec.Command(o.bin, o.args...)
	cmd.Stdout, cmd.Stderr = out, out
	stopWithParent(cmd)
	if err := cmd.Start(); err != nil {
		out.Close()
		return 0, fmt.Errorf("starting the operator: %w", err)
	}
	exited := make(chan struct{})
	o.cmd, o.exited = cmd, exited
	go func() {
		o.waitErr = cmd.Wait()
		out.Close()
		close(exited)
	}()
	return offset, nil
}

// operatorArgs returns the operator's command line: the cluster's
// kubeconfig, -v=2, and metrics over plain HTTP. When the operator serves metrics or health probes,
// they go to free loopback ports, so that the tests never collide with
// another operator on the machine (one `make demo` left running, say) over
// the default ports.
func operatorArgs(bin, kubeconfig string) ([]string, error) {
	usage, err := exec.Command(bin, "-help").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s -help: %w\n%s", bin, err, usage)
	}
	args := []string{"-kubeconfig", kubeconfig, "-v=2"}
	for _, flag := range []string{"-metrics-bind-address", "-health-probe-bind-address"} {
		if bytes.Contains(usage, []byte(flag+" ")) {
			args = append(args, flag+"=127.0.0.1:0")
		}
	}
	// The tests scrape the shared operator over plain HTTP; the secure mode
	// has a test of its own (metrics_secure_test.go).
	if bytes.Contains(usage, []byte("-metrics-secure")) {
		args = append(args, "-metrics-secure=false")
	}
	return args, nil
}

// waitForLog waits until the operator's log, from offset on, contains
// needle.
func (o *operator) waitForLog(offset int64, needle string, timeout time.Duration) error {
	errExited := errors.New("exited")
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if data, err := os.ReadFile(o.logPath); err == nil && int64(len(data)) > offset &&
			bytes.Contains(data[offset:], []byte(needle)) {
			return true, nil
		}
		if !o.running() {
			return false, errExited
		}
		return false, nil
	})
	switch {
	case errors.Is(err, errExited):
		return fmt.Errorf("the operator exited (%v) before logging %s; see %s", o.waitErr, needle, o.logPath)
	case err != nil:
		return fmt.Errorf("the operator did not log %s within %v; see %s", needle, timeout, o.logPath)
	}
	return nil
}

// running reports whether the operator process is still running.
func (o *operator) running() bool {
	if o.cmd == nil {
		return false
	}
	select {
	case <-o.exited:
		return false
	default:
		return true
	}
}

// stop sends the operator SIGTERM and waits for it to exit; it kills it if it
// takes longer than 30 s. It returns an error unless the operator exited
// cleanly, with status 0.
func (o *operator) stop() error {
	if o.cmd == nil {
		return nil
	}
	if !o.running() {
		return fmt.Errorf("the operator had already exited: %v", o.waitErr)
	}
	if err := o.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("sending SIGTERM to the operator: %w", err)
	}
	select {
	case <-o.exited:
		if o.waitErr != nil {
			return fmt.Errorf("the operator exited with %v after SIGTERM; see %s", o.waitErr, o.logPath)
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = o.cmd.Process.Kill()
		<-o.exited
		return fmt.Errorf("the operator did not exit within 30 s of SIGTERM; killed it")
	}
}

// restartOperator stops the operator with SIGTERM, starts it again and waits
// for its workers to run. It returns the time just before the new process
// started: anything the operator writes from then on is the new process's.
func restartOperator(t *testing.T) time.Time {
	t.Helper()
	requireExclusive(t, "restarts the shared operator")
	if err := env.operator.stop(); err != nil {
		t.Fatalf("stopping the operator: %v", err)
	}
	started := time.Now()
	if err := env.operator.start(); err != nil {
		t.Fatalf("restarting the operator: %v", err)
	}
	t.Logf("restarted the operator at %s", started.UTC().Format(time.RFC3339Nano))
	return started
}

// kubectl runs kubectl against the test cluster, with stdin as its standard
// input, and returns what it wrote to standard output and standard error.
func kubectl(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, env.kubectlBin, append([]string{"--kubeconfig", env.kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var outBuf, errBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &errBuf
	err = cmd.Run()
	return outBuf.String(), errBuf.String(), err
}

// mustKubectl runs kubectl and fails the test unless it succeeds. It returns
// kubectl's standard output.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := kubectl(t.Context(), "", args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}

// newNamespace creates a namespace for the test, with a unique name. When the
// test ends the namespace is deleted, after, if the test failed, printing
// what is in it.
func newNamespace(t *testing.T) string {
	t.Helper()
	requireGroup(t)
	ns, err := env.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "e2e-" + namespaceSlug(t.Name()) + "-",
			Labels:       map[string]string{"e2e.robot.dev/test": namespaceSlug(t.Name())},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the test namespace: %v", err)
	}
	name := ns.Name
	t.Logf("namespace %s", name)
	// Cleanups run last-registered first: dump, then delete.
	t.Cleanup(func() {
		if err := deleteNamespace(name, namespaceDeleteTimeout); err != nil {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("what the failed test left in namespace %s:\n%s", name, dumpNamespace(name))
		}
	})
	return name
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// namespaceSlug turns a test name into something a namespace name can start
// with.
func namespaceSlug(testName string) string {
	s := nonSlug.ReplaceAllString(strings.ToLower(strings.TrimPrefix(testName, "Test")), "-")
	s = strings.Trim(s, "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	return s
}

// namespaceDeleteTimeout bounds how long a test's namespace may take to go.
// The namespace controller deletes a few namespaces at a time, and waits
// out the pods' grace before it looks again: with the parallel tests ending
// together, on a busy machine, one namespace took over two minutes.
const namespaceDeleteTimeout = 5 * time.Minute

// deleteNamespace deletes a namespace and waits until it is gone, so that
// nothing of one test is still being torn down while the next one runs.
func deleteNamespace(name string, timeout time.Duration) error {
	ctx := context.Background()
	err := env.kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		ns, err := env.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil {
			last = fmt.Sprintf("phase %s, conditions %v", ns.Status.Phase, ns.Status.Conditions)
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("still there after %v (%s)", timeout, last)
	}
	return nil
}

// dumpNamespace describes what is in a namespace, for a person reading a
// failed test's output: its Robots, Deployments and pods, its events, and
// what the operator logged about it.
func dumpNamespace(ns string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	for _, section := range []struct {
		title string
		args  []string
	}{
		{"Robots", []string{"get", "robots", "-n", ns, "-o", "yaml"}},
		{"Deployments", []string{"get", "deployments", "-n", ns, "-o", "yaml"}},
		{"Pods", []string{"get", "pods", "-n", ns, "-o", "wide", "--show-labels"}},
		{"Events", []string{"events", "-n", ns}},
	} {
		stdout, stderr, err := kubectl(ctx, "", section.args...)
		fmt.Fprintf(&b, "--- %s (kubectl %s)\n%s", section.title, strings.Join(section.args, " "), stdout)
		if err != nil {
			fmt.Fprintf(&b, "(kubectl failed: %v: %s)\n", err, stderr)
		}
	}
	fmt.Fprintf(&b, "--- The operator's log about %s (%s)\n", ns, env.operator.logPath)
	if data, err := os.ReadFile(env.operator.logPath); err != nil {
		fmt.Fprintf(&b, "(cannot read it: %v)\n", err)
	} else {
		for line := range strings.Lines(string(data)) {
			if strings.Contains(line, ns+"/") || strings.Contains(line, `"`+ns+`"`) {
				b.WriteString(line)
			}
		}
	}
	if !env.operator.running() {
		fmt.Fprintf(&b, "--- The operator is NOT running: it exited with %v\n", env.operator.waitErr)
	}
	return b.String()
}

// eventually polls check until it reports done, and fails the test, saying
// what check last saw, when that does not happen within timeout. Errors from
// check do not end the wait: they are what it saw.
func eventually(t *testing.T, timeout time.Duration, what string, check func(ctx context.Context) (done bool, seen string, err error)) {
	t.Helper()
	var last string
	start := time.Now()
	err := wait.PollUntilContextTimeout(t.Context(), pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		done, seen, err := check(ctx)
		if err != nil {
			if ctx.Err() == nil { // else the wait is over: keep what was seen before
				last = "error: " + err.Error()
			}
			return false, nil
		}
		last = seen
		return done, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %v; last saw: %s", what, timeout, last)
	}
	t.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
}

// newRobot returns a Robot that runs image1 with replicas pods.
func newRobot(ns, name string, replicas int32) *robotv1beta1.Robot {
	return &robotv1beta1.Robot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: robotv1beta1.RobotSpec{
			Image:    image1,
			Replicas: ptr.To(replicas),
		},
	}
}

// httpPorts returns the ports of a Robot that listens on port alone: one TCP
// port named portName. Protocol is set as the API server defaults it, so that
// a Robot read back compares equal.
func httpPorts(port int32) []robotv1beta1.RobotPort {
	return []robotv1beta1.RobotPort{{Name: portName, ContainerPort: port, Protocol: corev1.ProtocolTCP}}
}

// createRobot creates robot and returns it as stored.
func createRobot(t *testing.T, robot *robotv1beta1.Robot) *robotv1beta1.Robot {
	t.Helper()
	created, err := env.robots.RobotV1beta1().Robots(robot.Namespace).Create(t.Context(), robot, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Robot %s/%s: %v", robot.Namespace, robot.Name, err)
	}
	return created
}

// getRobot returns a Robot as stored.
func getRobot(t *testing.T, ns, name string) *robotv1beta1.Robot {
	t.Helper()
	robot, err := env.robots.RobotV1beta1().Robots(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting Robot %s/%s: %v", ns, name, err)
	}
	return robot
}

// patchRobot applies a JSON merge patch to a Robot.
func patchRobot(t *testing.T, ns, name, patch string) *robotv1beta1.Robot {
	t.Helper()
	robot, err := env.robots.RobotV1beta1().Robots(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patching Robot %s/%s with %s: %v", ns, name, patch, err)
	}
	return robot
}

// readyCondition returns the Robot's Ready condition, or nil.
func readyCondition(robot *robotv1beta1.Robot) *metav1.Condition {
	return meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionReady)
}

// summarizeRobot describes a Robot's spec and status on one line.
func summarizeRobot(robot *robotv1beta1.Robot) string {
	ready := "no Ready condition"
	if c := readyCondition(robot); c != nil {
		ready = fmt.Sprintf("Ready=%s reason=%s (of generation %d) message=%q", c.Status, c.Reason, c.ObservedGeneration, c.Message)
	}
	s := robot.Status
	return fmt.Sprintf("generation %d observedGeneration %d; replicas: spec %d, status %d, updated %d, ready %d, available %d; %s",
		robot.Generation, s.ObservedGeneration, ptr.Deref(robot.Spec.Replicas, 1),
		s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, ready)
}

// robotConverged reports whether the Robot's status says, about its current
// generation, that every replica it asks for runs its current spec and is
// available.
func robotConverged(robot *robotv1beta1.Robot) bool {
	c := readyCondition(robot)
	want := ptr.Deref(robot.Spec.Replicas, 1)
	s := robot.Status
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == robotv1beta1.ReasonRolloutComplete &&
		c.ObservedGeneration == robot.Generation && s.ObservedGeneration == robot.Generation &&
		s.Replicas == want && s.UpdatedReplicas == want && s.ReadyReplicas == want && s.AvailableReplicas == want
}

// robotSettled reports whether the Robot is converged and the Deployment
// conditions it mirrors are final too (the Deployment controller reports the
// end of a rollout a little after the pods are available), so that nothing
// is left for the operator to write.
func robotSettled(robot *robotv1beta1.Robot) bool {
	available := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionAvailable)
	progressing := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionProgressing)
	return robotConverged(robot) &&
		available != nil && available.Status == metav1.ConditionTrue &&
		progressing != nil && progressing.Reason == newReplicaSetAvailable
}

// newReplicaSetAvailable is the reason of a Deployment's Progressing
// condition once a rollout is complete.
const newReplicaSetAvailable = "NewReplicaSetAvailable"

// deploymentSettled reports whether the Deployment controller is done with
// a Deployment: it has observed its spec, every replica is updated and
// available, and it has reported the rollout complete.
func deploymentSettled(d *appsv1.Deployment) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	if s.ObservedGeneration != d.Generation || s.Replicas != want || s.UpdatedReplicas != want || s.AvailableReplicas != want {
		return false
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			return c.Reason == newReplicaSetAvailable
		}
	}
	return false
}

// waitForRobot polls a Robot until done accepts it, and returns it.
func waitForRobot(t *testing.T, ns, name string, timeout time.Duration, what string, done func(*robotv1beta1.Robot) bool) *robotv1beta1.Robot {
	t.Helper()
	var robot *robotv1beta1.Robot
	eventually(t, timeout, fmt.Sprintf("Robot %s/%s %s", ns, name, what), func(ctx context.Context) (bool, string, error) {
		r, err := env.robots.RobotV1beta1().Robots(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		robot = r
		return done(r), summarizeRobot(r), nil
	})
	return robot
}

// waitForRobotReady waits until the Robot is Ready about its current
// generation, with every replica it asks for available, and returns it.
func waitForRobotReady(t *testing.T, ns, name string) *robotv1beta1.Robot {
	t.Helper()
	return waitForRobot(t, ns, name, convergeTimeout, "is Ready with every replica available", robotConverged)
}

// waitForRobotReason waits until the Robot's Ready condition, about its
// current generation, has the given status and reason, and returns it.
func waitForRobotReason(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string, timeout time.Duration) *robotv1beta1.Robot {
	t.Helper()
	return waitForRobot(t, ns, name, timeout, fmt.Sprintf("has Ready=%s reason %s", status, reason), func(r *robotv1beta1.Robot) bool {
		c := readyCondition(r)
		return c != nil && c.Status == status && c.Reason == reason &&
			c.ObservedGeneration == r.Generation && r.Status.ObservedGeneration == r.Generation
	})
}

// getDeployment returns a Deployment as stored.
func getDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := env.kube.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting Deployment %s/%s: %v", ns, name, err)
	}
	return d
}

// summarizeDeployment describes a Deployment on one line.
func summarizeDeployment(d *appsv1.Deployment) string {
	images := []string{}
	for _, c := range d.Spec.Template.Spec.Containers {
		images = append(images, c.Name+"="+c.Image)
	}
	s := d.Status
	return fmt.Sprintf("uid %s generation %d observedGeneration %d; replicas: spec %d, status %d, updated %d, ready %d, available %d; containers %v; controller %v",
		d.UID, d.Generation, s.ObservedGeneration, ptr.Deref(d.Spec.Replicas, 1), s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas,
		images, describeOwner(metav1.GetControllerOf(d)))
}

func describeOwner(ref *metav1.OwnerReference) string {
	if ref == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s/%s uid %s", ref.APIVersion, ref.Kind, ref.Name, ref.UID)
}

// waitForDeployment polls a Deployment until done accepts it, and returns
// it.
func waitForDeployment(t *testing.T, ns, name, what string, done func(*appsv1.Deployment) bool) *appsv1.Deployment {
	t.Helper()
	var deployment *appsv1.Deployment
	eventually(t, convergeTimeout, fmt.Sprintf("Deployment %s/%s %s", ns, name, what), func(ctx context.Context) (bool, string, error) {
		d, err := env.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		deployment = d
		return done(d), summarizeDeployment(d), nil
	})
	return deployment
}

// waitForDeploymentGone waits until a Deployment does not exist.
func waitForDeploymentGone(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, convergeTimeout, fmt.Sprintf("Deployment %s/%s is gone", ns, name), func(ctx context.Context) (bool, string, error) {
		d, err := env.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, "still there: " + summarizeDeployment(d), nil
	})
}

// robotContainer returns the container named "robot" of a Deployment's pod
// template, failing the test if there is none.
func robotContainer(t *testing.T, d *appsv1.Deployment) *corev1.Container {
	t.Helper()
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == containerName {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	t.Fatalf("Deployment %s/%s has no container named %q: %s", d.Namespace, d.Name, containerName, summarizeDeployment(d))
	return nil
}

// podRunningAndReady reports whether a pod is Running, Ready and not being
// deleted.
func podRunningAndReady(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podImage returns the image of a pod's "robot" container, or "".
func podImage(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == containerName {
			return c.Image
		}
	}
	return ""
}

// summarizePods describes pods on one line.
func summarizePods(pods []corev1.Pod) string {
	var parts []string
	for i := range pods {
		p := &pods[i]
		state := string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			state += ",terminating"
		}
		if podRunningAndReady(p) {
			state += ",ready"
		}
		parts = append(parts, fmt.Sprintf("%s(%s %s)", p.Name, state, podImage(p)))
	}
	return fmt.Sprintf("%d pods %v", len(pods), parts)
}

// waitForPods waits until exactly n pods match the label selector, all
// Running, Ready and running image, none of them being deleted, and returns
// them.
func waitForPods(t *testing.T, ns, selector string, n int, image string) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	what := fmt.Sprintf("exactly %d pods %q in %s are Running and Ready with image %s", n, selector, ns, image)
	eventually(t, convergeTimeout, what, func(ctx context.Context) (bool, string, error) {
		list, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, "", err
		}
		pods = list.Items
		if len(pods) != n {
			return false, summarizePods(pods), nil
		}
		for i := range pods {
			if !podRunningAndReady(&pods[i]) || podImage(&pods[i]) != image {
				return false, summarizePods(pods), nil
			}
		}
		return true, summarizePods(pods), nil
	})
	return pods
}

// robotEvents returns the events recorded about the object with uid, of the
// given reason.
func robotEvents(ctx context.Context, ns string, uid types.UID, reason string) ([]corev1.Event, error) {
	list, err := env.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.uid": string(uid), "reason": reason}.String(),
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// eventCount is how many times events were recorded: an Event object that
// the recorder aggregated counts as many times as its count.
func eventCount(events []corev1.Event) int32 {
	var n int32
	for _, e := range events {
		n += max(e.Count, 1)
	}
	return n
}

// summarizeEvents describes events on one line.
func summarizeEvents(events []corev1.Event) string {
	var parts []string
	for _, e := range events {
		parts = append(parts, fmt.Sprintf("%s %s x%d %q", e.Type, e.Reason, e.Count, e.Message))
	}
	return fmt.Sprintf("%d events %v", len(events), parts)
}

// waitForEvents waits until at least want events of the given reason were
// recorded about the object with uid (counting aggregated repeats), and
// returns them.
func waitForEvents(t *testing.T, ns string, uid types.UID, reason string, want int32) []corev1.Event {
	t.Helper()
	var events []corev1.Event
	eventually(t, convergeTimeout, fmt.Sprintf("%d %s event(s) about %s", want, reason, uid), func(ctx context.Context) (bool, string, error) {
		var err error
		events, err = robotEvents(ctx, ns, uid, reason)
		if err != nil {
			return false, "", err
		}
		return eventCount(events) >= want, summarizeEvents(events), nil
	})
	return events
}

// repoRoot returns the repository's root directory: two levels above this
// package, where go.mod is.
func repoRoot() (string, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("the repository root should be two levels above the test package: %w", err)
	}
	if !bytes.Contains(data, []byte("module github.com/robot-operator/robot-operator\n")) {
		return "", errors.New(root + "/go.mod is not robot-operator's")
	}
	return root, nil
}
