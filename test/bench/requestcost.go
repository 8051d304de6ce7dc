package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	robotac "github.com/robot-operator/robot-operator/pkg/generated/applyconfiguration/robot/v1beta1"
	"github.com/robot-operator/robot-operator/test/internal/task"
)

// requestProfileLength is how long -profile records the API server at the
// start of each kind of request.
const requestProfileLength = 4 * time.Second

// requestCost is the CPU per request of one kind: the API server's, etcd's
// and the client's (this process's).
type requestCost struct {
	kind                    string
	apiserver, etcd, client time.Duration
	floor, operator         float64 // how many of these the floor and the operator make per Robot
}

// measureRequestCosts makes n requests of each kind the floor and the
// operator make, and of the alternatives the operator could make instead, on
// a fresh cluster whose controllers are paused, and returns the CPU each
// kind costs. It tells which of the operator's requests make it cost more
// than the floor, and what each lever would save. With cbor, the cluster
// serves custom resources in CBOR and every Robot request is made in it
// (the process enabled client-go's CBOR gates at its start); built-in types
// travel as without it.
func measureRequestCosts(ctx context.Context, e *environment, n int, cbor bool) (string, error) {
	if cbor {
		e.FeatureGates = "CBORServingAndStorage=true"
	}
	c, err := e.newCluster(ctx, robotsPerNode)
	if err != nil {
		return "", err
	}
	defer c.Down(ctx)
	if _, err := c.Kubectl(ctx, "apply", "--server-side", "-f", "artifacts/crd/"); err != nil {
		return "", err
	}
	if err := c.servedVersions(ctx); err != nil {
		return "", err
	}
	// The floor is a plain client: JSON. The operator sends and accepts
	// protobuf for built-in types. Both are set explicitly, so that the
	// CBOR gates leave them as they are.
	floorConfig := rest.CopyConfig(c.Admin)
	floorConfig.ContentType = k8sruntime.ContentTypeJSON
	floorKube, err := kubernetes.NewForConfig(floorConfig)
	if err != nil {
		return "", err
	}
	operatorConfig := rest.CopyConfig(c.Admin)
	operatorConfig.ContentType = k8sruntime.ContentTypeProtobuf
	operatorConfig.AcceptContentTypes = k8sruntime.ContentTypeProtobuf + "," + k8sruntime.ContentTypeJSON
	operatorKube, err := kubernetes.NewForConfig(operatorConfig)
	if err != nil {
		return "", err
	}
	if err := checkRobotEncoding(ctx, c, cbor); err != nil {
		return "", err
	}
	// Only the requests measured may cost anything: pause the controllers,
	// which would otherwise act on the Deployments.
	paused, err := c.pause("kube-controller-manager", "kube-scheduler", "kwok-controller")
	defer paused()
	if err != nil {
		return "", err
	}
	for _, ns := range []string{"cost-floor", "cost-operator"} {
		if _, err := floorKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return "", err
		}
	}

	robots := make([]*robotv1beta1.Robot, n)
	var costs []requestCost
	self := map[string]int{"client": os.Getpid()}
	measure := func(kind string, floor, operator float64, fn func(ctx context.Context, i int) error) error {
		// With -profile, what the API server does for the first seconds
		// of each kind, to see where a request's CPU goes.
		profiled := c.profileAPIServer(ctx, fmt.Sprintf("request-cost-%d.pprof", len(costs)+1), requestProfileLength)
		defer profiled()
		before := c.cpuNow(self)
		if err := task.Parallel(ctx, n, e.cfg.concurrency, fn); err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		// Let watch fan-out and etcd finish with the last requests.
		time.Sleep(2 * time.Second)
		used := c.cpuNow(self).since(before)
		perRequest := func(name string) time.Duration { return used[name] / time.Duration(n) }
		costs = append(costs, requestCost{kind: kind, apiserver: perRequest("kube-apiserver"), etcd: perRequest("etcd"), client: perRequest("client"),
			floor: floor, operator: operator})
		return nil
	}
	// Each status write changes the status, as the operator's do: a write
	// that changes nothing costs far less.
	statusWrite := func(write func(ctx context.Context, robot *robotv1beta1.Robot, status *robotac.RobotStatusApplyConfiguration) (*robotv1beta1.Robot, error),
		ready metav1.ConditionStatus, reason string, available int32, note string) func(ctx context.Context, i int) error {
		return func(ctx context.Context, i int) error {
			written, err := write(ctx, robots[i], operatorLikeStatus(robots[i], ready, reason, available, note))
			if err == nil {
				robots[i] = written
			}
			return err
		}
	}
	apply := func(ctx context.Context, robot *robotv1beta1.Robot, status *robotac.RobotStatusApplyConfiguration) (*robotv1beta1.Robot, error) {
		return c.Robots.RobotV1beta1().Robots(robot.Namespace).ApplyStatus(ctx, robotac.Robot(robot.Name, robot.Namespace).WithStatus(status),
			metav1.ApplyOptions{FieldManager: "robot-operator", Force: true})
	}
	mergePatch := func(ctx context.Context, robot *robotv1beta1.Robot, status *robotac.RobotStatusApplyConfiguration) (*robotv1beta1.Robot, error) {
		body, err := json.Marshal(map[string]any{"status": status})
		if err != nil {
			return nil, err
		}
		return c.Robots.RobotV1beta1().Robots(robot.Namespace).Patch(ctx, robot.Name, types.MergePatchType, body,
			metav1.PatchOptions{FieldManager: "robot-operator"}, "status")
	}
	update := func(ctx context.Context, robot *robotv1beta1.Robot, status *robotac.RobotStatusApplyConfiguration) (*robotv1beta1.Robot, error) {
		robot = robot.DeepCopy()
		if err := roundTripJSON(status, &robot.Status); err != nil {
			return nil, err
		}
		return c.Robots.RobotV1beta1().Robots(robot.Namespace).UpdateStatus(ctx, robot, metav1.UpdateOptions{FieldManager: "robot-operator"})
	}
	// smaller writes a smaller status than the operator's: only Ready and
	// Synced unless all, without any condition's message when noMessages.
	smaller := func(write func(ctx context.Context, robot *robotv1beta1.Robot, status *robotac.RobotStatusApplyConfiguration) (*robotv1beta1.Robot, error),
		all, noMessages bool) func(ctx context.Context, robot *robotv1beta1.Robot, status *robotac.RobotStatusApplyConfiguration) (*robotv1beta1.Robot, error) {
		return func(ctx context.Context, robot *robotv1beta1.Robot, status *robotac.RobotStatusApplyConfiguration) (*robotv1beta1.Robot, error) {
			conditions := status.Conditions[:0]
			for _, c := range status.Conditions {
				if !all && *c.Type != "Ready" && *c.Type != "Synced" {
					continue
				}
				if noMessages {
					c.WithMessage("")
				}
				conditions = append(conditions, c)
			}
			status.Conditions = conditions
			return write(ctx, robot, status)
		}
	}
	steps := []struct {
		kind            string
		floor, operator float64
		fn              func(ctx context.Context, i int) error
	}{
		{"create robots (the user, in both)", 1, 1, func(ctx context.Context, i int) error {
			robot := newBenchRobot(i)
			robot.Namespace = "cost-operator"
			created, err := c.Robots.RobotV1beta1().Robots(robot.Namespace).Create(ctx, robot, metav1.CreateOptions{})
			robots[i] = created
			return err
		}},
		{"create deployments (floor: a plain Deployment, JSON)", 1, 0, func(ctx context.Context, i int) error {
			deployment := plainDeployment(robots[i].Name, "robot.dev/name", 1)
			deployment.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(robots[i], robotv1beta1.SchemeGroupVersion.WithKind("Robot"))}
			_, err := floorKube.AppsV1().Deployments("cost-floor").Create(ctx, deployment, metav1.CreateOptions{})
			return err
		}},
		{"create deployments (operator: its labels, owner, hash and security settings, protobuf)", 0, 1, func(ctx context.Context, i int) error {
			_, err := operatorKube.AppsV1().Deployments("cost-operator").Create(ctx, operatorLikeDeployment(robots[i]), metav1.CreateOptions{FieldManager: "robot-operator"})
			return err
		}},
		{"update robots/status, one condition (floor)", 1, 0, func(ctx context.Context, i int) error {
			robot := robots[i].DeepCopy()
			robot.Status = robotv1beta1.RobotStatus{ObservedGeneration: robot.Generation, DeploymentName: robot.Name, Selector: "robot.dev/name=" + robot.Name,
				Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "RolloutInProgress", ObservedGeneration: robot.Generation, LastTransitionTime: metav1.Now()}}}
			written, err := c.Robots.RobotV1beta1().Robots(robot.Namespace).UpdateStatus(ctx, robot, metav1.UpdateOptions{})
			if err == nil {
				robots[i] = written
			}
			return err
		}},
		{"apply robots/status, five conditions (operator, at creation)", 0, 1, statusWrite(apply, metav1.ConditionFalse, "RolloutInProgress", 0, "")},
		{"apply robots/status, four conditions (operator, at Ready)", 0, 1, statusWrite(apply, metav1.ConditionTrue, "RolloutComplete", 1, "")},
		{"lever: the same status at Ready as a JSON merge patch, no server-side apply", 0, 0, statusWrite(mergePatch, metav1.ConditionTrue, "RolloutComplete", 1, " (merge patch)")},
		{"lever: the same status at Ready as an update", 0, 0, statusWrite(update, metav1.ConditionTrue, "RolloutComplete", 1, " (update)")},
		{"lever: the status at Ready applied again, changed (compare with the row above it)", 0, 0, statusWrite(apply, metav1.ConditionTrue, "RolloutComplete", 1, " (apply)")},
		// What the size of the status costs: the first write of each shape
		// changes the set of conditions, the second is the steady state.
		{"lever (first write of the shape): the status at Ready with only the Ready and Synced conditions", 0, 0, statusWrite(smaller(apply, false, false), metav1.ConditionTrue, "RolloutComplete", 1, " (two)")},
		{"lever: the status at Ready with only the Ready and Synced conditions, changed", 0, 0, statusWrite(smaller(apply, false, false), metav1.ConditionTrue, "RolloutComplete", 1, " (two, again)")},
		{"lever (first write of the shape): the status at Ready, four conditions without messages", 0, 0, statusWrite(smaller(apply, true, true), metav1.ConditionTrue, "RolloutComplete", 1, "")},
		{"lever: the status at Ready, four conditions without messages, changed", 0, 0, statusWrite(smaller(apply, true, true), metav1.ConditionTrue, "RolloutComplete", 1, "")},
		{"create events (operator: Deployment created, protobuf)", 0, 1, func(ctx context.Context, i int) error {
			robot := robots[i]
			now := metav1.Now()
			_, err := operatorKube.CoreV1().Events(robot.Namespace).Create(ctx, &corev1.Event{
				ObjectMeta: metav1.ObjectMeta{GenerateName: robot.Name + "."},
				InvolvedObject: corev1.ObjectReference{APIVersion: robotv1beta1.SchemeGroupVersion.String(), Kind: "Robot",
					Namespace: robot.Namespace, Name: robot.Name, UID: robot.UID, ResourceVersion: robot.ResourceVersion},
				Reason: "DeploymentCreated", Message: fmt.Sprintf("Created Deployment %q", robot.Name), Type: corev1.EventTypeNormal,
				Source: corev1.EventSource{Component: "robot-operator"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
			}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, step := range steps {
		logf("request costs: %d × %s", n, step.kind)
		if err := measure(step.kind, step.floor, step.operator, step.fn); err != nil {
			return "", err
		}
	}
	return renderRequestCosts(e, n, cbor, costs), nil
}

// checkRobotEncoding fails unless the API server answers Robot requests in
// the encoding asked for: CBOR with cbor, JSON without. A client that falls
// back to JSON in silence would make the CBOR figures JSON's.
func checkRobotEncoding(ctx context.Context, c *cluster, cbor bool) error {
	var contentType string
	err := c.Robots.RobotV1beta1().RESTClient().Get().Resource("robots").Do(ctx).ContentType(&contentType).Error()
	if err != nil {
		return fmt.Errorf("listing Robots: %w", err)
	}
	want := k8sruntime.ContentTypeJSON
	if cbor {
		want = k8sruntime.ContentTypeCBOR
	}
	if !strings.HasPrefix(contentType, want) {
		return fmt.Errorf("the API server answered a Robot request in %q, not %q", contentType, want)
	}
	return nil
}

// roundTripJSON converts in to out through JSON.
func roundTripJSON(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// operatorLikeDeployment is a Deployment of the shape the operator creates
// for a Robot with an image and replicas only (internal/workload/testdata/golden/deployment.json
// is one with every field): its labels, owner, hash annotation and security
// settings.
func operatorLikeDeployment(robot *robotv1beta1.Robot) *appsv1.Deployment {
	labels := map[string]string{"robot.dev/name": robot.Name, "app.kubernetes.io/managed-by": "robot-operator",
		"app.kubernetes.io/name": "robot", "app.kubernetes.io/instance": robot.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: robot.Name, Labels: labels,
			Annotations:     map[string]string{"robot.dev/spec-hash": "0123456789abcdef"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(robot, robotv1beta1.SchemeGroupVersion.WithKind("Robot"))}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"robot.dev/name": robot.Name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					SecurityContext:              &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{Name: "robot", Image: robot.Spec.Image,
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)}}},
				},
			},
		},
	}
}

// operatorLikeStatus is a status of the shape the operator writes
// (internal/status/testdata/golden/status.json at Ready): the replica counts
// and Ready, Available, Progressing and Synced, the Ready condition's
// message ending in note. Before Ready, at creation, the Deployment
// controller has not observed the Deployment yet: no replica is counted,
// Available and Progressing say so, and Reconciling, on the Robot only
// while True, repeats Ready's reason and message. Stalled is not written.
func operatorLikeStatus(robot *robotv1beta1.Robot, ready metav1.ConditionStatus, reason string, available int32, note string) *robotac.RobotStatusApplyConfiguration {
	now := metav1.Now()
	condition := func(conditionType string, status metav1.ConditionStatus, reason, message string) *metav1ac.ConditionApplyConfiguration {
		return metav1ac.Condition().WithType(conditionType).WithStatus(status).WithObservedGeneration(robot.Generation).
			WithLastTransitionTime(now).WithReason(reason).WithMessage(message)
	}
	readyMessage := fmt.Sprintf("%d of 1 replicas are available%s", available, note)
	synced := condition("Synced", metav1.ConditionTrue, "Synced", "the Deployment holds what the Robot asks for")
	status := robotac.RobotStatus().
		WithObservedGeneration(robot.Generation).WithDeploymentName(robot.Name).WithSelector("robot.dev/name=" + robot.Name)
	if ready == metav1.ConditionTrue {
		return status.WithReplicas(1).WithUpdatedReplicas(1).WithReadyReplicas(available).WithAvailableReplicas(available).WithConditions(
			condition("Ready", ready, reason, readyMessage),
			condition("Available", ready, "MinimumReplicasAvailable", "Deployment has minimum availability."),
			condition("Progressing", metav1.ConditionTrue, "NewReplicaSetAvailable", fmt.Sprintf("ReplicaSet %q has successfully progressed.", robot.Name)),
			synced)
	}
	notObserved := fmt.Sprintf("the Deployment controller has not observed generation 1 of Deployment %q yet", robot.Name)
	readyMessage = fmt.Sprintf("waiting for the Deployment controller to observe generation 1 of Deployment %q%s", robot.Name, note)
	return status.WithConditions(
		condition("Ready", ready, reason, readyMessage),
		condition("Available", metav1.ConditionUnknown, "DeploymentNotObserved", notObserved),
		condition("Progressing", metav1.ConditionUnknown, "DeploymentNotObserved", notObserved),
		synced,
		condition("Reconciling", metav1.ConditionTrue, reason, readyMessage))
}

// pause stops the named cluster processes (SIGSTOP) until the returned
// function resumes them.
func (c *cluster) pause(names ...string) (resume func(), err error) {
	home, _ := os.UserHomeDir()
	var pids []int
	resume = func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(home, ".kwok", "clusters", c.env.cfg.cluster, "pids", name+".pid"))
		if err != nil {
			return resume, err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return resume, fmt.Errorf("pid of %s: %w", name, err)
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return resume, fmt.Errorf("pausing %s: %w", name, err)
		}
		pids = append(pids, pid)
	}
	return resume, nil
}

func renderRequestCosts(e *environment, n int, cbor bool, costs []requestCost) string {
	var b strings.Builder
	command, encoding := "-request-costs", "JSON, as every supported Kubernetes version serves them by default"
	if cbor {
		command, encoding = "-request-costs -cbor", "CBOR (the API server with its alpha gate CBORServingAndStorage on, client-go with ClientsAllowCBOR and ClientsPreferCBOR)"
	}
	b.WriteString(`# What each request costs the API server

Written by ` + "`go run ./test/bench " + command + " -n N`" + `. On a fresh local cluster with the
controller-manager, scheduler and kwok paused, N requests of each kind the floor and the
operator make, at the benchmark's concurrency; the CPU the API server, etcd and the client
(the benchmark's own process, which makes them) used, from /proc, per request. A row that
neither side makes (0 and 0) is a lever: what the operator could send instead. The last rows
sum them per Robot, as each side makes them from creation to Ready.

`)
	fmt.Fprintf(&b, "Robot requests in %s.\n\n", encoding)
	fmt.Fprintf(&b, "Measured %s on %d cores; Kubernetes %s, operator %s; N = %d, concurrency %d.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), e.Tools["K8S_VERSION"], e.Commit, n, e.cfg.concurrency)
	b.WriteString("| request | kube-apiserver ms | etcd ms | client ms | floor, per Robot | operator, per Robot |\n|---|---|---|---|---|---|\n")
	var floor, operator [3]float64
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, c := range costs {
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.2f | %g | %g |\n", c.kind, ms(c.apiserver), ms(c.etcd), ms(c.client), c.floor, c.operator)
		for i, d := range []time.Duration{c.apiserver, c.etcd, c.client} {
			floor[i] += c.floor * ms(d)
			operator[i] += c.operator * ms(d)
		}
	}
	fmt.Fprintf(&b, "| **per Robot: floor** | **%.2f** | **%.2f** | **%.2f** | | |\n", floor[0], floor[1], floor[2])
	fmt.Fprintf(&b, "| **per Robot: operator** | **%.2f** | **%.2f** | **%.2f** | | |\n", operator[0], operator[1], operator[2])
	if floor[0] > 0 {
		fmt.Fprintf(&b, "\nThe operator's requests cost the API server %.2f× the floor's.\n", operator[0]/floor[0])
	}
	return b.String()
}
