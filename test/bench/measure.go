package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	informers "github.com/robot-operator/robot-operator/pkg/generated/informers/externalversions"
	"github.com/robot-operator/robot-operator/test/internal/task"
)

const (
	benchNamespace = "bench"
	benchImage     = "registry.example/robot:1.0"
)

// result is everything one floor/operator pair measured for one N. Only
// the first pair measures the operator at rest, restarted and among
// unrelated objects: idle, restart, baseRSS, baseHeap, unrelRSS and
// unrelHeap are empty in the others.
type result struct {
	n, pair               int
	floorSync, floorReady time.Duration
	tSync, tReady         time.Duration
	latencies             []time.Duration // create → Ready, per Robot
	points                []point         // (create offset, latency), for the plot
	creation              *apiCost        // first create → all Ready
	idle                  *apiCost
	restart               *apiCost
	peakRSS, heap         uint64 // after convergence
	emptyRSS, emptyHeap   uint64 // before the first create: the warm-up Robot only
	baseRSS, baseHeap     uint64 // restarted operator, converged Robots
	unrelRSS, unrelHeap   uint64 // the same, with the unrelated Deployments
	basePeakRSS           uint64 // the restarted operator's peak: its relist
	// anonOutsideLimit is the anonymous RSS after convergence less what
	// the Go memory limit counts; fileRSS the file-backed RSS then (the
	// binary's pages), which the limit does not count either.
	anonOutsideLimit      int64
	fileRSS               uint64
	floorCPU, operatorCPU cpuUse // first create → all Ready, by process
	floorStages, stages   string // where the time goes, per Robot
	// readyAfterAvailable is the p99, over the Robots, of the time from a
	// Robot's Deployment Available to the Robot Ready.
	readyAfterAvailable time.Duration
	// syncs is how many syncs the operator made from the first create
	// until every Robot was Ready.
	syncs float64
	// restartReady and restartChecked are the times from the restarted
	// operator's start to its caches synced (/readyz: the relist), and to
	// every Robot synced once; restartCPU is its CPU until then.
	restartReady, restartChecked, restartCPU time.Duration
	churn                                    *churnResult
	// conversions are the API server's calls to the conversion webhook
	// from the first create until all were Ready; idleConversions those
	// while the operator idled (first pair only).
	conversions     conversions
	idleConversions *conversions
	// floorConversions are those of the floor's phase, first create to
	// all Available.
	floorConversions conversions
}

type point struct{ at, latency time.Duration }

func robotName(i int) string { return fmt.Sprintf("robot-%05d", i) }

func newBenchRobot(i int) *robotv1beta1.Robot {
	return &robotv1beta1.Robot{
		ObjectMeta: metav1.ObjectMeta{Name: robotName(i), Namespace: benchNamespace},
		Spec:       robotv1beta1.RobotSpec{Image: benchImage, Replicas: ptr.To[int32](1)},
	}
}

// benchPort is the port of a Robot that has a Service.
var benchPort = robotv1beta1.RobotPort{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}

// benchRobot is the i-th Robot as the run's flags ask: in its namespace,
// with a port (and so a Service) under -service, and of 0 replicas with no
// Service under -controller-only.
func (e *environment) benchRobot(i int) *robotv1beta1.Robot {
	robot := newBenchRobot(i)
	robot.Namespace = e.namespaceOf(i)
	if e.cfg.service || e.cfg.controllerOnly {
		robot.Spec.Ports = []robotv1beta1.RobotPort{benchPort}
	}
	if e.cfg.controllerOnly {
		robot.Spec.Replicas = ptr.To[int32](0)
		robot.Spec.Service = &robotv1beta1.RobotService{Type: robotv1beta1.ServiceTypeNone}
	}
	return robot
}

// replicas is each Robot's number of replicas.
func (e *environment) replicas() int32 {
	if e.cfg.controllerOnly {
		return 0
	}
	return 1
}

// wantsService says whether each Robot has a Service.
func (e *environment) wantsService() bool { return e.cfg.service && !e.cfg.controllerOnly }

// namespaceOf is the namespace of the i-th Robot: bench, or with
// -namespaces K, bench-00 … bench-(K-1) in turn.
func (e *environment) namespaceOf(i int) string {
	if e.cfg.namespaces <= 1 {
		return benchNamespace
	}
	return fmt.Sprintf("%s-%02d", benchNamespace, i%e.cfg.namespaces)
}

// informerNamespace is the namespace the bench's own informers watch: all
// of them when the Robots are spread over several.
func (e *environment) informerNamespace() string {
	if e.cfg.namespaces <= 1 {
		return benchNamespace
	}
	return metav1.NamespaceAll
}

// isBenchNamespace says whether ns holds measured Robots (not the warm-up
// Robot, nor the unrelated objects).
func isBenchNamespace(ns string) bool {
	return ns == benchNamespace || strings.HasPrefix(ns, benchNamespace+"-")
}

// createNamespaces creates the namespaces of the measured Robots.
func (c *cluster) createNamespaces(ctx context.Context) error {
	for i := 0; i < max(c.env.cfg.namespaces, 1); i++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.env.namespaceOf(i)}}
		if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// podsFor is how many pods n Robots make.
func (e *environment) podsFor(n int) int { return n * int(e.replicas()) }

// milestones records, per object name, the first time a condition held.
type milestones struct {
	mu   sync.Mutex
	at   map[string]time.Time
	want int
	done chan struct{}
}

func newMilestones(want int) *milestones {
	return &milestones{at: map[string]time.Time{}, want: want, done: make(chan struct{})}
}

func (m *milestones) mark(name string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.at[name]; ok {
		return
	}
	m.at[name] = now
	if len(m.at) == m.want {
		close(m.done)
	}
}

func (m *milestones) last() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var last time.Time
	for _, t := range m.at {
		if t.After(last) {
			last = t
		}
	}
	return last
}

func (m *milestones) wait(ctx context.Context, timeout time.Duration, what string) error {
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(timeout):
		m.mu.Lock()
		defer m.mu.Unlock()
		return fmt.Errorf("timed out after %s: %d of %d %s", timeout, len(m.at), m.want, what)
	}
}

// warmUpNamespace holds one Robot that each phase converges before its clock
// starts, so that neither phase's figures include what a fresh cluster pays
// for its first requests: serving a new CRD, compiling its schema, the
// controllers' first syncs.
const warmUpNamespace = "warm-up"

// warmUp creates the warm-up Robot, shaped as the measured ones, with
// create and waits until converged says it has converged.
func (c *cluster) warmUp(ctx context.Context, create func(ctx context.Context, robot *robotv1beta1.Robot) error,
	converged func(ctx context.Context, name string) (bool, error)) error {
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: warmUpNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	robot := c.env.benchRobot(0)
	robot.Namespace = warmUpNamespace
	if err := create(ctx, robot); err != nil {
		return fmt.Errorf("warming up: %w", err)
	}
	return task.WaitFor(ctx, 2*time.Minute, 100*time.Millisecond, "the warm-up Robot to converge", func() (bool, error) {
		ok, err := converged(ctx, robot.Name)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return ok, err
	})
}

// measure runs one floor/operator pair for N (pair counts from 1), each
// phase on a fresh cluster of its own.
func measure(ctx context.Context, e *environment, n, pair int) (*result, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.timeout)
	defer cancel()
	r := &result{n: n, pair: pair}
	if e.cfg.floor {
		if err := measureFloor(ctx, e, n, r); err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
	}
	if err := measureOperator(ctx, e, n, r); err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	return r, nil
}

// measureFloor makes, with a plain unthrottled client and the same
// concurrency, the writes no operator can avoid: each Robot, its Deployment
// (and its Service under -service), one status write. Then it waits for the
// Deployments to be Available.
func measureFloor(ctx context.Context, e *environment, n int, r *result) error {
	c, err := e.newCluster(ctx, e.podsFor(n))
	if err != nil {
		return err
	}
	defer c.Down(ctx)
	if _, err := c.Kubectl(ctx, "apply", "--server-side", "-f", "artifacts/crd/"); err != nil {
		return err
	}
	if e.cfg.webhook {
		stop, err := serveFloorWebhook(ctx, c)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := c.servedVersions(ctx); err != nil {
		return err
	}
	if err := c.createNamespaces(ctx); err != nil {
		return err
	}

	available, deploymentCreated := newMilestones(n), newMilestones(n)
	// The floor's own writes, for one Robot.
	writeFloor := func(ctx context.Context, robot *robotv1beta1.Robot) error {
		robot, err := c.Robots.RobotV1beta1().Robots(robot.Namespace).Create(ctx, robot, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		owner := []metav1.OwnerReference{*metav1.NewControllerRef(robot, robotv1beta1.SchemeGroupVersion.WithKind("Robot"))}
		deployment := plainDeployment(robot.Name, "robot.dev/name", e.replicas())
		deployment.OwnerReferences = owner
		if len(robot.Spec.Ports) > 0 {
			deployment.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: benchPort.Name, ContainerPort: benchPort.ContainerPort}}
		}
		if _, err := c.Kube.AppsV1().Deployments(robot.Namespace).Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
			return err
		}
		if e.wantsService() {
			service := plainService(robot.Name, deployment.Spec.Selector.MatchLabels)
			service.OwnerReferences = owner
			if _, err := c.Kube.CoreV1().Services(robot.Namespace).Create(ctx, service, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		if isBenchNamespace(robot.Namespace) {
			deploymentCreated.mark(robot.Name, time.Now())
		}
		robot.Status = robotv1beta1.RobotStatus{ObservedGeneration: robot.Generation, DeploymentName: robot.Name, Selector: "robot.dev/name=" + robot.Name,
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "RolloutInProgress", ObservedGeneration: robot.Generation, LastTransitionTime: metav1.Now()}}}
		_, err = c.Robots.RobotV1beta1().Robots(robot.Namespace).UpdateStatus(ctx, robot, metav1.UpdateOptions{})
		return err
	}
	err = c.warmUp(ctx, writeFloor, func(ctx context.Context, name string) (bool, error) {
		d, err := c.Kube.AppsV1().Deployments(warmUpNamespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil && isAvailable(d), err
	})
	if err != nil {
		return err
	}

	factory := kubeinformers.NewSharedInformerFactoryWithOptions(c.Kube, 0, kubeinformers.WithNamespace(e.informerNamespace()))
	onDeployment := func(obj any) {
		if d, ok := obj.(*appsv1.Deployment); ok && isBenchNamespace(d.Namespace) && isAvailable(d) {
			available.mark(d.Name, time.Now())
		}
	}
	if _, err := factory.Apps().V1().Deployments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onDeployment, UpdateFunc: func(_, obj any) { onDeployment(obj) },
	}); err != nil {
		return err
	}
	informersCtx, stopInformers := context.WithCancel(ctx)
	defer func() { stopInformers(); factory.Shutdown() }()
	factory.Start(informersCtx.Done())
	factory.WaitForCacheSync(ctx.Done())

	logf("floor: %d Robots, Deployments and status writes", n)
	self := map[string]int{"bench client": os.Getpid()}
	cpuStart := c.cpuNow(self)
	profiled := c.profileAPIServerPhase(ctx, fmt.Sprintf("%d-pair%d-floor-kube-apiserver.pprof", n, r.pair))
	defer profiled()
	conversionsStart, err := c.conversions(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	err = task.Parallel(ctx, n, e.cfg.concurrency, func(ctx context.Context, i int) error {
		return writeFloor(ctx, e.benchRobot(i))
	})
	if err != nil {
		return err
	}
	r.floorSync = time.Since(start)
	if err := available.wait(ctx, e.cfg.timeout, "Deployments Available"); err != nil {
		return err
	}
	r.floorReady = available.last().Sub(start)
	r.floorCPU = c.cpuNow(self).since(cpuStart)
	conversionsAvailable, err := c.conversions(ctx)
	if err != nil {
		return err
	}
	r.floorConversions = conversionsAvailable.minus(conversionsStart)
	if e.cfg.profileLength == 0 {
		profiled() // the phase's profile ends with it
	}
	r.floorStages = "Deployment created → Available " + stage(deploymentCreated, available)
	logf("floor: writes done in %s, all Available in %s; %s", secs(r.floorSync), secs(r.floorReady), r.floorStages)
	return nil
}

// measureOperator creates N Robots for the operator and watches them
// converge, then measures what it costs at rest, after a restart, and with
// unrelated Deployments and pods in the cluster.
func measureOperator(ctx context.Context, e *environment, n int, r *result) error {
	c, err := e.newCluster(ctx, e.podsFor(n))
	if err != nil {
		return err
	}
	defer c.Down(ctx)
	kubeconfig, err := c.InstallOperatorRBAC(ctx)
	if err != nil {
		return err
	}
	// No pod backs the manifests' webhook Service here, and its ClusterIP,
	// on a machine with no cluster network, reaches whatever answers
	// there: the handshakes were charged to the operator. Without
	// -webhook the operator serves no webhook, so the CRD's conversions
	// fail, as in the floor's phase; with it, the CRD points at the
	// operator's own listener.
	if _, err := c.Kubectl(ctx, "delete", "service", "-n", "robot-operator", "robot-operator-webhook"); err != nil {
		return err
	}
	var webhook *localWebhook
	if e.cfg.webhook {
		if webhook, err = newLocalWebhook(); err != nil {
			return err
		}
		if err := webhook.pointCRD(ctx, c); err != nil {
			return err
		}
	}
	if err := c.servedVersions(ctx); err != nil {
		return err
	}
	if err := c.createNamespaces(ctx); err != nil {
		return err
	}
	op, err := startOperator(ctx, e, kubeconfig, fmt.Sprintf("operator-%d-pair%d.log", n, r.pair), webhook)
	if err != nil {
		return err
	}
	defer func() {
		if op != nil {
			op.cmd.Process.Kill()
		}
	}()

	err = c.warmUp(ctx, func(ctx context.Context, robot *robotv1beta1.Robot) error {
		_, err := c.Robots.RobotV1beta1().Robots(robot.Namespace).Create(ctx, robot, metav1.CreateOptions{})
		return err
	}, func(ctx context.Context, name string) (bool, error) {
		robot, err := c.Robots.RobotV1beta1().Robots(warmUpNamespace).Get(ctx, name, metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(robot.Status.Conditions, "Ready"), err
	})
	if err != nil {
		return err
	}
	// What the operator holds with no measured Robot: what the Robots add
	// is reckoned above it.
	if r.emptyRSS, _, r.emptyHeap, err = op.memory(); err != nil {
		return err
	}

	// Watch what the operator does, from the outside.
	created := sync.Map{}
	synced, ready := newMilestones(n), newMilestones(n)
	robotCreated, deploymentSeen, available := newMilestones(n), newMilestones(n), newMilestones(n)
	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(c.Kube, 0, kubeinformers.WithNamespace(e.informerNamespace()))
	robotFactory := informers.NewSharedInformerFactoryWithOptions(c.Robots, 0, informers.WithNamespace(e.informerNamespace()))
	deployments := kubeFactory.Apps().V1().Deployments()
	services := kubeFactory.Core().V1().Services()
	robots := robotFactory.Robot().V1beta1().Robots()
	replicas := e.replicas()
	check := func(obj metav1.Object) {
		now := time.Now()
		namespace, name := obj.GetNamespace(), obj.GetName()
		if !isBenchNamespace(namespace) {
			return
		}
		robot, err := robots.Lister().Robots(namespace).Get(name)
		if err != nil {
			return
		}
		deployment, err := deployments.Lister().Deployments(namespace).Get(name)
		if err == nil {
			deploymentSeen.mark(name, now)
			if isAvailable(deployment) {
				available.mark(name, now)
			}
		}
		if err != nil || !metav1.IsControlledBy(deployment, robot) || ptr.Deref(deployment.Spec.Replicas, 0) != replicas ||
			deployment.Spec.Template.Spec.Containers[0].Image != robot.Spec.Image || robot.Status.ObservedGeneration != robot.Generation {
			return
		}
		if e.wantsService() {
			service, err := services.Lister().Services(namespace).Get(name)
			if err != nil || !metav1.IsControlledBy(service, robot) {
				return
			}
		}
		synced.mark(name, now)
		if c := meta.FindStatusCondition(robot.Status.Conditions, "Ready"); c != nil && c.Status == metav1.ConditionTrue &&
			c.ObservedGeneration == robot.Generation && robot.Status.AvailableReplicas == replicas {
			ready.mark(name, now)
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { check(obj.(metav1.Object)) },
		UpdateFunc: func(_, obj any) { check(obj.(metav1.Object)) },
	}
	if _, err := deployments.Informer().AddEventHandler(handler); err != nil {
		return err
	}
	if _, err := robots.Informer().AddEventHandler(handler); err != nil {
		return err
	}
	if e.wantsService() {
		if _, err := services.Informer().AddEventHandler(handler); err != nil {
			return err
		}
	}
	informersCtx, stopInformers := context.WithCancel(ctx)
	defer func() { stopInformers(); kubeFactory.Shutdown(); robotFactory.Shutdown() }()
	kubeFactory.Start(informersCtx.Done())
	robotFactory.Start(informersCtx.Done())
	kubeFactory.WaitForCacheSync(ctx.Done())
	robotFactory.WaitForCacheSync(ctx.Done())

	logf("operator: creating %d Robots", n)
	procs := map[string]int{"bench client": os.Getpid(), "robot-operator": op.cmd.Process.Pid}
	cpuStart := c.cpuNow(procs)
	conversionsStart, err := c.conversions(ctx)
	if err != nil {
		return err
	}
	profiled := c.profileAPIServerPhase(ctx, fmt.Sprintf("%d-pair%d-operator-kube-apiserver.pprof", n, r.pair))
	defer profiled()
	operatorProfiled := op.profile(ctx, e, fmt.Sprintf("%d-pair%d-robot-operator.pprof", n, r.pair))
	defer operatorProfiled()
	syncsStart, err := op.syncs(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	err = task.Parallel(ctx, n, e.cfg.concurrency, func(ctx context.Context, i int) error {
		created.Store(robotName(i), time.Now())
		robot := e.benchRobot(i)
		_, err := c.Robots.RobotV1beta1().Robots(robot.Namespace).Create(ctx, robot, metav1.CreateOptions{})
		robotCreated.mark(robotName(i), time.Now())
		return err
	})
	if err != nil {
		return err
	}
	if err := synced.wait(ctx, e.cfg.timeout, "Robots synced"); err != nil {
		return err
	}
	r.tSync = synced.last().Sub(start)
	if err := ready.wait(ctx, e.cfg.timeout, "Robots Ready"); err != nil {
		return err
	}
	r.tReady = ready.last().Sub(start)
	syncsReady, err := op.syncs(ctx)
	if err != nil {
		return err
	}
	r.syncs = syncsReady - syncsStart
	r.operatorCPU = c.cpuNow(procs).since(cpuStart)
	conversionsReady, err := c.conversions(ctx)
	if err != nil {
		return err
	}
	r.conversions = conversionsReady.minus(conversionsStart)
	if e.cfg.profileLength == 0 {
		// The phase's profiles end with it, together.
		var stopped sync.WaitGroup
		stopped.Go(profiled)
		stopped.Go(operatorProfiled)
		stopped.Wait()
	}
	r.readyAfterAvailable = percentile(stageDurations(available, ready), .99)
	r.stages = "Robot created → Deployment seen " + stage(robotCreated, deploymentSeen) +
		"<br>Deployment seen → Available " + stage(deploymentSeen, available) + "<br>Available → Robot Ready " + stage(available, ready)
	logf("operator: %s", strings.ReplaceAll(r.stages, "<br>", "; "))
	if err := writeTimeline(filepath.Join(e.Out, fmt.Sprintf("timeline-%d-pair%d.csv", n, r.pair)), start,
		[]string{"robot created", "Deployment seen", "Available", "Ready"}, robotCreated, deploymentSeen, available, ready); err != nil {
		return err
	}
	converged := time.Now()
	logf("operator: synced in %s, Ready in %s", secs(r.tSync), secs(r.tReady))

	ready.mu.Lock()
	for name, at := range ready.at {
		t0, _ := created.Load(name)
		r.latencies = append(r.latencies, at.Sub(t0.(time.Time)))
		r.points = append(r.points, point{at: t0.(time.Time).Sub(start), latency: at.Sub(t0.(time.Time))})
	}
	ready.mu.Unlock()
	sort.Slice(r.latencies, func(i, j int) bool { return r.latencies[i] < r.latencies[j] })

	if _, r.peakRSS, r.heap, err = op.memory(); err != nil {
		return err
	}
	if r.anonOutsideLimit, r.fileRSS, err = op.outsideMemoryLimit(ctx); err != nil {
		return err
	}
	op.heapProfile(ctx, e, fmt.Sprintf("%d-pair%d-robot-operator-heap.pprof", n, r.pair))

	if r.pair > 1 {
		// The writes while converging are counted in every pair; the rest
		// only in the first.
		time.Sleep(2 * time.Second) // for the audit log to catch up
		if r.creation, err = readAudit(c.AuditLog, start, converged); err != nil {
			return err
		}
		operatorProfiled()
		err = op.stop()
		op = nil
		return err
	}

	logf("operator: counting writes while idle for %s", e.cfg.idle)
	select {
	case <-time.After(e.cfg.idle):
	case <-ctx.Done():
		return ctx.Err()
	}
	idleEnd := time.Now()
	conversionsIdle, err := c.conversions(ctx)
	if err != nil {
		return err
	}
	idleConversions := conversionsIdle.minus(conversionsReady)
	r.idleConversions = &idleConversions
	// Let the audit log catch up with requests received before idleEnd.
	time.Sleep(2 * time.Second)
	if r.creation, err = readAudit(c.AuditLog, start, converged); err != nil {
		return err
	}
	if r.idle, err = readAudit(c.AuditLog, converged, idleEnd); err != nil {
		return err
	}

	logf("operator: restarting it")
	operatorProfiled() // the profile needs the operator running
	if err := op.stop(); err != nil {
		return err
	}
	restarted := time.Now()
	if op, err = startOperator(ctx, e, kubeconfig, fmt.Sprintf("operator-%d-pair%d-restarted.log", n, r.pair), webhook); err != nil {
		return err
	}
	r.restartReady = time.Since(restarted)
	// Every Robot, and the warm-up one, synced once: all checked.
	checked, err := op.waitAllChecked(ctx, n+1, e.cfg.timeout)
	if err != nil {
		return err
	}
	r.restartChecked = checked.Sub(restarted)
	r.restartCPU, _ = processCPU(op.cmd.Process.Pid)
	logf("operator: restarted, caches synced in %s, every Robot checked in %s, %.1f s of CPU", secs(r.restartReady), secs(r.restartChecked), r.restartCPU.Seconds())
	time.Sleep(e.cfg.settle)
	if r.restart, err = readAudit(c.AuditLog, restarted, time.Now()); err != nil {
		return err
	}
	// Only what a restart must cost: the initial lists and watches are
	// reads; the Lease, if any, is not in the way here.
	if r.baseRSS, r.basePeakRSS, r.baseHeap, err = op.memory(); err != nil {
		return err
	}

	if e.cfg.churn > 0 {
		if r.churn, err = measureChurn(ctx, e, c, op, robots.Informer(), n); err != nil {
			return fmt.Errorf("churn: %w", err)
		}
	}

	if e.cfg.unrelated > 0 {
		logf("operator: adding %d unrelated Deployments", e.cfg.unrelated)
		if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		err = task.Parallel(ctx, e.cfg.unrelated, e.cfg.concurrency, func(ctx context.Context, i int) error {
			_, err := c.Kube.AppsV1().Deployments("unrelated").Create(ctx, plainDeployment(fmt.Sprintf("unrelated-%05d", i), "app", 0), metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return err
		}
		// As many pods, which the operator's pod informer must never see:
		// its label selector is applied by the API server. No scheduler
		// takes them, so they cost the cluster their storage only.
		logf("operator: adding %d unrelated pods", e.cfg.unrelated)
		err = task.Parallel(ctx, e.cfg.unrelated, e.cfg.concurrency, func(ctx context.Context, i int) error {
			_, err := c.Kube.CoreV1().Pods("unrelated").Create(ctx, unrelatedPod(fmt.Sprintf("unrelated-%05d", i)), metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return err
		}
		time.Sleep(10 * time.Second)
		if r.unrelRSS, _, r.unrelHeap, err = op.memory(); err != nil {
			return err
		}
	}
	err = op.stop()
	op = nil
	return err
}

// plainDeployment is a Deployment of replicas pods of the bench image,
// selected by the label key=name.
func plainDeployment(name, key string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{key: name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: benchImage}}},
			},
		},
	}
}

// plainService is a ClusterIP Service of the bench port, selecting selector.
func plainService(name string, selector map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: selector},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selector,
			Ports:    []corev1.ServicePort{{Name: benchPort.Name, Port: benchPort.ContainerPort, TargetPort: intstr.FromString(benchPort.Name)}},
		},
	}
}

// isAvailable says whether a Deployment's controller has observed its spec
// and has as many available replicas as it asks for.
func isAvailable(d *appsv1.Deployment) bool {
	return d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == ptr.Deref(d.Spec.Replicas, 1) &&
		d.Status.UpdatedReplicas == ptr.Deref(d.Spec.Replicas, 1)
}

// unrelatedPod is a pod of the bench image that no scheduler binds, so it
// stays Pending: an object in the cluster that is not the operator's.
func unrelatedPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			SchedulerName: "none",
			Containers:    []corev1.Container{{Name: "app", Image: benchImage}},
		},
	}
}

// percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

// stage is the p50 / p90 / p99 / max time from one milestone to the next,
// over the names that reached both.
func stage(from, to *milestones) string {
	d := stageDurations(from, to)
	if len(d) == 0 {
		return "(none)"
	}
	return fmt.Sprintf("%s / %s / %s / %s", secs(percentile(d, .5)), secs(percentile(d, .9)), secs(percentile(d, .99)), secs(d[len(d)-1]))
}

// stageDurations are the times from one milestone to the next, sorted, over
// the names that reached both.
func stageDurations(from, to *milestones) []time.Duration {
	from.mu.Lock()
	defer from.mu.Unlock()
	to.mu.Lock()
	defer to.mu.Unlock()
	var d []time.Duration
	for name, t0 := range from.at {
		if t1, ok := to.at[name]; ok {
			d = append(d, max(t1.Sub(t0), 0))
		}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d
}

// writeTimeline writes, per Robot, when it reached each milestone (seconds
// from start), as CSV for a closer look.
func writeTimeline(path string, start time.Time, names []string, ms ...*milestones) error {
	var b strings.Builder
	b.WriteString("robot," + strings.Join(names, ",") + "\n")
	for _, m := range ms {
		m.mu.Lock()
		defer m.mu.Unlock()
	}
	for name := range ms[0].at {
		b.WriteString(name)
		for _, m := range ms {
			if t, ok := m.at[name]; ok {
				fmt.Fprintf(&b, ",%.3f", t.Sub(start).Seconds())
			} else {
				b.WriteString(",")
			}
		}
		b.WriteString("\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
