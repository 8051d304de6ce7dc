package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	robotac "github.com/robot-operator/robot-operator/pkg/generated/applyconfiguration/robot/v1alpha1"
	"github.com/robot-operator/robot-operator/test/internal/task"
)

// requestProfileLength is how long -profile records the API server at the
// start of each kind of request.
const requestProfileLength = 4 * time.Second

// requestCost is the API server's and etcd's CPU per request of one kind.
type requestCost struct {
	kind            string
	apiserver       time.Duration
	etcd            time.Duration
	floor, operator float64 // how many of these the floor and the operator make per Robot
}

// measureRequestCosts makes n requests of each kind the floor and the
// operator make, on a fresh cluster whose controllers are paused, and
// returns the CPU each kind costs the API server and etcd. It tells which
// of the operator's requests make T_ready longer than floor-ready.
func measureRequestCosts(ctx context.Context, e *environment, n int) (string, error) {
	c, err := e.newCluster(ctx, robotsPerNode)
	if err != nil {
		return "", err
	}
	defer c.Down(ctx)
	if _, err := c.Kubectl(ctx, "apply", "--server-side", "-f", "artifacts/crd/"); err != nil {
		return "", err
	}
	if err := c.WaitEstablished(ctx); err != nil {
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
		if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return "", err
		}
	}

	robots := make([]*robotv1alpha1.Robot, n)
	var costs []requestCost
	measure := func(kind string, floor, operator float64, fn func(ctx context.Context, i int) error) error {
		// With -profile, what the API server does for the first seconds
		// of each kind, to see where a request's CPU goes.
		profiled := c.profileAPIServer(ctx, fmt.Sprintf("request-cost-%d.pprof", len(costs)+1), requestProfileLength)
		defer profiled()
		before := c.cpuNow(nil)
		if err := task.Parallel(ctx, n, e.cfg.concurrency, fn); err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		// Let watch fan-out and etcd finish with the last requests.
		time.Sleep(2 * time.Second)
		used := c.cpuNow(nil).since(before)
		costs = append(costs, requestCost{kind: kind, apiserver: used["kube-apiserver"] / time.Duration(n), etcd: used["etcd"] / time.Duration(n), floor: floor, operator: operator})
		return nil
	}
	steps := []struct {
		kind            string
		floor, operator float64
		fn              func(ctx context.Context, i int) error
	}{
		{"create robots (the user, in both)", 1, 1, func(ctx context.Context, i int) error {
			robot := newBenchRobot(i)
			robot.Namespace = "cost-operator"
			created, err := c.Robots.RobotV1alpha1().Robots(robot.Namespace).Create(ctx, robot, metav1.CreateOptions{})
			robots[i] = created
			return err
		}},
		{"get deployments 404 (operator: a cache miss confirmed)", 0, 1, func(ctx context.Context, i int) error {
			_, err := c.Kube.AppsV1().Deployments("cost-operator").Get(ctx, robots[i].Name, metav1.GetOptions{})
			if err == nil {
				return fmt.Errorf("deployment %s exists", robots[i].Name)
			}
			return nil
		}},
		{"create deployments (floor)", 1, 0, func(ctx context.Context, i int) error {
			deployment := plainDeployment(robots[i].Name, "robot.dev/name", 1)
			deployment.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(robots[i], robotv1alpha1.SchemeGroupVersion.WithKind("Robot"))}
			_, err := c.Kube.AppsV1().Deployments("cost-floor").Create(ctx, deployment, metav1.CreateOptions{})
			return err
		}},
		{"apply deployments (operator, server-side apply)", 0, 1, func(ctx context.Context, i int) error {
			_, err := c.Kube.AppsV1().Deployments("cost-operator").Apply(ctx, operatorLikeDeployment(robots[i]), metav1.ApplyOptions{FieldManager: "robot-operator", Force: true})
			return err
		}},
		{"update robots/status, one condition (floor)", 1, 0, func(ctx context.Context, i int) error {
			robot := robots[i].DeepCopy()
			robot.Status = robotv1alpha1.RobotStatus{ObservedGeneration: robot.Generation, DeploymentName: robot.Name, Selector: "robot.dev/name=" + robot.Name,
				Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "RolloutInProgress", ObservedGeneration: robot.Generation, LastTransitionTime: metav1.Now()}}}
			_, err := c.Robots.RobotV1alpha1().Robots(robot.Namespace).UpdateStatus(ctx, robot, metav1.UpdateOptions{})
			return err
		}},
		{"apply robots/status, three conditions (operator, at creation)", 0, 1, func(ctx context.Context, i int) error {
			written, err := applyOperatorLikeStatus(ctx, c, robots[i], metav1.ConditionFalse, "RolloutInProgress", 0)
			robots[i] = written
			return err
		}},
		{"apply robots/status, three conditions (operator, at Ready)", 0, 1, func(ctx context.Context, i int) error {
			written, err := applyOperatorLikeStatus(ctx, c, robots[i], metav1.ConditionTrue, "RolloutComplete", 1)
			robots[i] = written
			return err
		}},
		{"update robots/status, the same three conditions (comparison only: the operator's status without server-side apply)", 0, 0, func(ctx context.Context, i int) error {
			robot := robots[i].DeepCopy()
			for j := range robot.Status.Conditions {
				robot.Status.Conditions[j].Message += "."
			}
			_, err := c.Robots.RobotV1alpha1().Robots(robot.Namespace).UpdateStatus(ctx, robot, metav1.UpdateOptions{})
			return err
		}},
		{"create events (operator: Deployment created)", 0, 1, func(ctx context.Context, i int) error {
			robot := robots[i]
			now := metav1.Now()
			_, err := c.Kube.CoreV1().Events(robot.Namespace).Create(ctx, &corev1.Event{
				ObjectMeta: metav1.ObjectMeta{GenerateName: robot.Name + "."},
				InvolvedObject: corev1.ObjectReference{APIVersion: robotv1alpha1.SchemeGroupVersion.String(), Kind: "Robot",
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
	return renderRequestCosts(e, n, costs), nil
}

// operatorLikeDeployment is an apply configuration of the shape the
// operator applies: its labels, owner, hash annotation and security
// settings.
func operatorLikeDeployment(robot *robotv1alpha1.Robot) *appsv1ac.DeploymentApplyConfiguration {
	labels := map[string]string{"robot.dev/name": robot.Name, "app.kubernetes.io/managed-by": "robot-operator",
		"app.kubernetes.io/name": "robot", "app.kubernetes.io/instance": robot.Name}
	return appsv1ac.Deployment(robot.Name, robot.Namespace).
		WithLabels(labels).
		WithAnnotations(map[string]string{"robot.dev/spec-hash": "0123456789abcdef"}).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion(robotv1alpha1.SchemeGroupVersion.String()).WithKind("Robot").
			WithName(robot.Name).WithUID(robot.UID).WithController(true).WithBlockOwnerDeletion(true)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"robot.dev/name": robot.Name})).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().
					WithSecurityContext(corev1ac.PodSecurityContext().WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
					WithContainers(corev1ac.Container().WithName("robot").WithImage(robot.Spec.Image).
						WithSecurityContext(corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false))))))
}

// applyOperatorLikeStatus applies a status of the shape the operator
// writes: the replica counts and its three conditions.
func applyOperatorLikeStatus(ctx context.Context, c *cluster, robot *robotv1alpha1.Robot, ready metav1.ConditionStatus, reason string, available int32) (*robotv1alpha1.Robot, error) {
	now := metav1.Now()
	condition := func(conditionType string, status metav1.ConditionStatus, reason, message string) *metav1ac.ConditionApplyConfiguration {
		return metav1ac.Condition().WithType(conditionType).WithStatus(status).WithObservedGeneration(robot.Generation).
			WithLastTransitionTime(now).WithReason(reason).WithMessage(message)
	}
	status := robotac.RobotStatus().
		WithObservedGeneration(robot.Generation).WithDeploymentName(robot.Name).WithSelector("robot.dev/name="+robot.Name).
		WithReplicas(1).WithUpdatedReplicas(1).WithReadyReplicas(available).WithAvailableReplicas(available).
		WithConditions(
			condition("Ready", ready, reason, fmt.Sprintf("%d of 1 replicas are available", available)),
			condition("Available", ready, "MinimumReplicasAvailable", "Deployment has minimum availability."),
			condition("Progressing", metav1.ConditionTrue, "NewReplicaSetAvailable", fmt.Sprintf("ReplicaSet %q has successfully progressed.", robot.Name)))
	return c.Robots.RobotV1alpha1().Robots(robot.Namespace).ApplyStatus(ctx, robotac.Robot(robot.Name, robot.Namespace).WithStatus(status),
		metav1.ApplyOptions{FieldManager: "robot-operator", Force: true})
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

func renderRequestCosts(e *environment, n int, costs []requestCost) string {
	var b strings.Builder
	b.WriteString(`# What each request costs the API server

Written by ` + "`go run ./test/bench -request-costs -n N`" + `. On a fresh local cluster with the
controller-manager, scheduler and kwok paused, N requests of each kind the floor and the
operator make, at the benchmark's concurrency; the CPU the API server and etcd used (from
/proc), per request. A row that neither side makes (0 and 0) is there for comparison. The last
rows sum them per Robot, as each side makes them from creation to Ready.

`)
	fmt.Fprintf(&b, "Measured %s on %d cores; Kubernetes %s, operator %s; N = %d, concurrency %d.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), e.Tools["K8S_VERSION"], e.Commit, n, e.cfg.concurrency)
	b.WriteString("| request | kube-apiserver ms | etcd ms | floor, per Robot | operator, per Robot |\n|---|---|---|---|---|\n")
	var floorAPI, floorEtcd, opAPI, opEtcd float64
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, c := range costs {
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %g | %g |\n", c.kind, ms(c.apiserver), ms(c.etcd), c.floor, c.operator)
		floorAPI += c.floor * ms(c.apiserver)
		floorEtcd += c.floor * ms(c.etcd)
		opAPI += c.operator * ms(c.apiserver)
		opEtcd += c.operator * ms(c.etcd)
	}
	fmt.Fprintf(&b, "| **per Robot: floor** | **%.2f** | **%.2f** | | |\n", floorAPI, floorEtcd)
	fmt.Fprintf(&b, "| **per Robot: operator** | **%.2f** | **%.2f** | | |\n", opAPI, opEtcd)
	return b.String()
}
