package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robot-operator/robot-operator/internal/drift"
	"github.com/robot-operator/robot-operator/internal/echo"
	"github.com/robot-operator/robot-operator/internal/events"
	"github.com/robot-operator/robot-operator/internal/metrics"
	"github.com/robot-operator/robot-operator/internal/outage"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/podsummary"
	"github.com/robot-operator/robot-operator/internal/status"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
	robotscheme "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/scheme"
	informers "github.com/robot-operator/robot-operator/pkg/generated/informers/externalversions/robot/v1beta1"
	listers "github.com/robot-operator/robot-operator/pkg/generated/listers/robot/v1beta1"
	"golang.org/x/time/rate"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// queueName names the workqueue, and so its metrics.
	queueName = "robot"

	// nameTakenRecheck is how often a Robot whose Deployment name is taken
	// looks again. The other Deployment is not in the operator's cache
	// (it lacks the managed-by label), so no event says when it is gone.
	nameTakenRecheck = 30 * time.Second

	// defaultSyncTimeout bounds one sync unless -sync-timeout says
	// otherwise.
	defaultSyncTimeout = 30 * time.Second

	// eventsShutdownTimeout bounds how long a shutdown waits for the Events
	// of the last syncs to be written once the workers have stopped.
	eventsShutdownTimeout = 5 * time.Second
)

// Options is everything a Controller needs, given to NewController.
type Options struct {
	// KubeClient and RobotClient are the clients the Controller reads and
	// writes through.
	KubeClient  kubernetes.Interface
	RobotClient clientset.Interface
	// The informers of the Deployments and Services, which should see only
	// those labelled as managed by the operator, and of the Robots.
	DeploymentInformer appsinformers.DeploymentInformer
	ServiceInformer    coreinformers.ServiceInformer
	RobotInformer      informers.RobotInformer
	// PodInformer and ReplicaSetInformer, when set (both or neither),
	// hold the summaries of the managed pods and ReplicaSets
	// (podsummary.Summarize), and the Ready condition says why the pods of
	// each Deployment's current ReplicaSet do not run. Without them the
	// status says only what the Deployment says.
	PodInformer        cache.SharedIndexInformer
	ReplicaSetInformer cache.SharedIndexInformer
	// SyncTimeout bounds one sync, all its API requests included: the
	// sync's context ends then, and so does whatever request is in flight.
	// Zero means defaultSyncTimeout.
	SyncTimeout time.Duration
	// ShutdownTimeout bounds how long Run lets in-flight syncs finish once
	// its context is done; zero cancels them at once.
	ShutdownTimeout time.Duration
	// MayWrite, when set, is asked before every write: the write fence.
	// With leader election it fails once this process may no longer be the
	// leader.
	MayWrite func() error
	// Recorder, when set, records the Controller's Events instead of its
	// own recorder, which writes them through KubeClient.
	Recorder record.EventRecorder
	// Clock, when set, replaces the real clock.
	Clock clock.PassiveClock
	// ServiceTypes, when set, are the only types of Service the Controller
	// creates; a Robot that asks for another reports ServiceTypeNotAllowed.
	// Empty: every type.
	ServiceTypes []robotv1beta1.ServiceType
	// Outage, when set, is the gate KubeClient's and RobotClient's requests
	// go through. A sync that fails while it says the API server is down is
	// not backed off: the Robot is queued again the moment the API server
	// answers.
	Outage *outage.Gate
}

// Controller keeps each Robot's Deployment as the Robot asks and reports the
// Deployment's state in the Robot's status.
type Controller struct {
	deploymentsLister appslisters.DeploymentLister
	deploymentsSynced cache.InformerSynced
	servicesLister    corelisters.ServiceLister
	servicesSynced    cache.InformerSynced
	robotsLister      listers.RobotLister
	robotsSynced      cache.InformerSynced
	// pods and replicaSets are nil without Options.PodInformer; then the
	// Ready condition does not say why the pods do not run.
	pods              cache.Indexer
	replicaSets       cache.Indexer
	podsSynced        cache.InformerSynced
	replicaSetsSynced cache.InformerSynced

	// workqueue holds the Robots to sync. A Robot is in it at most once,
	// and never synced by two workers at the same time.
	workqueue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// writer makes every write, behind the write fence.
	writer *writer.Writer
	events *events.Events
	clock  clock.PassiveClock

	metrics   *metrics.ControllerMetrics
	readiness *metrics.ReadinessTracker
	// The Robots, Deployments and Services this controller wrote, until the
	// caches catch up with them: the echo filter.
	writtenRobots      *echo.RecentWrites[*robotv1beta1.Robot]
	writtenDeployments *echo.RecentWrites[*appsv1.Deployment]
	writtenServices    *echo.RecentWrites[*corev1.Service]
	// specsChecked is the spec-check memo.
	specsChecked *drift.SpecChecks
	// fights counts the reverts of each Deployment, to back off from
	// another writer that keeps changing it.
	fights *drift.Fights
	// refused holds, per Robot UID, the generation whose Deployment write
	// the API server refused as invalid, and that refusal: no write is
	// sent again for that generation (a refusal), only for the next one.
	refused sync.Map
	// statusRefused holds, the same way, the generation whose status the
	// API server could not store because the Robot is too large: the
	// status is not written again for that generation.
	statusRefused sync.Map
	// inflight maps each Robot being synced to when its sync started, for
	// the health check's watchdog.
	inflight        sync.Map
	shutdownTimeout time.Duration
	syncTimeout     time.Duration
	serviceTypes    []robotv1beta1.ServiceType

	outage *outage.Gate
	// parked are the Robots whose syncs failed while the API server was
	// down, to queue again when it answers.
	parkedMu sync.Mutex
	parked   map[cache.ObjectName]struct{}
}

// NewController returns a Controller that watches the Robots, and the
// Deployments and Services of opts' informers.
func NewController(ctx context.Context, opts Options) (*Controller, error) {
	logger := klog.FromContext(ctx)

	// Events about Robots need the Robot kind in the scheme the recorder
	// uses.
	utilruntime.Must(robotscheme.AddToScheme(scheme.Scheme))
	mayWrite := opts.MayWrite
	if mayWrite == nil {
		mayWrite = func() error { return nil }
	}
	events := events.New(ctx, opts.KubeClient.CoreV1(), mayWrite)
	recorder := opts.Recorder
	if recorder == nil {
		recorder = events.Recorder
	}

	// Each Robot backs off on its own, from 5ms up to 5 minutes, and all
	// retries together are held to 10 per second (burst 100), so that a
	// broken Robot costs little and an outage does not become a storm.
	rateLimiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](5*time.Millisecond, 5*time.Minute),
		&workqueue.TypedBucketRateLimiter[cache.ObjectName]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)

	controller := &Controller{
		deploymentsLister: opts.DeploymentInformer.Lister(),
		deploymentsSynced: opts.DeploymentInformer.Informer().HasSynced,
		servicesLister:    opts.ServiceInformer.Lister(),
		servicesSynced:    opts.ServiceInformer.Informer().HasSynced,
		robotsLister:      opts.RobotInformer.Lister(),
		robotsSynced:      opts.RobotInformer.Informer().HasSynced,
		podsSynced:        func() bool { return true },
		replicaSetsSynced: func() bool { return true },
		workqueue: workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter,
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: queueName}),
		events:             events,
		clock:              cmp.Or[clock.PassiveClock](opts.Clock, clock.RealClock{}),
		fights:             drift.NewFights(),
		metrics:            metrics.NewControllerMetrics(),
		readiness:          metrics.NewReadinessTracker(),
		writtenRobots:      &echo.RecentWrites[*robotv1beta1.Robot]{},
		writtenDeployments: &echo.RecentWrites[*appsv1.Deployment]{},
		writtenServices:    &echo.RecentWrites[*corev1.Service]{},
		specsChecked:       &drift.SpecChecks{},
		shutdownTimeout:    opts.ShutdownTimeout,
		syncTimeout:        cmp.Or(opts.SyncTimeout, defaultSyncTimeout),
		serviceTypes:       opts.ServiceTypes,
		outage:             opts.Outage,
		parked:             map[cache.ObjectName]struct{}{},
	}
	if opts.Outage != nil {
		opts.Outage.OnUp(controller.resumeParked)
	}
	controller.writer = writer.New(opts.KubeClient, opts.RobotClient, recorder, mayWrite,
		controller.writtenDeployments, controller.writtenServices, controller.writtenRobots, controller.specsChecked)

	logger.V(4).Info("Setting up event handlers")
	if _, err := opts.RobotInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    controller.addRobot,
		UpdateFunc: controller.updateRobot,
		DeleteFunc: controller.deleteRobot,
	}); err != nil {
		return nil, fmt.Errorf("adding the Robot event handler: %w", err)
	}
	if _, err := opts.DeploymentInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    controller.addDeployment,
		UpdateFunc: controller.updateDeployment,
		DeleteFunc: controller.deleteDeployment,
	}); err != nil {
		return nil, fmt.Errorf("adding the Deployment event handler: %w", err)
	}
	if err := controller.addServiceEventHandler(opts.ServiceInformer); err != nil {
		return nil, fmt.Errorf("adding the Service event handler: %w", err)
	}
	switch {
	case (opts.PodInformer == nil) != (opts.ReplicaSetInformer == nil):
		// Pods without their ReplicaSets tell no current pod from an old
		// one; ReplicaSets without pods tell nothing.
		return nil, errors.New("the pod and ReplicaSet informers go together: set both or neither")
	case opts.PodInformer != nil:
		if err := controller.watchPods(opts.PodInformer, opts.ReplicaSetInformer); err != nil {
			return nil, err
		}
	}
	return controller, nil
}

// Run waits for the informer caches to sync, then runs workers goroutines
// that sync Robots until ctx is done. Then it takes no new work, lets the
// syncs in flight finish for up to the shutdown timeout (cancelling them
// after that), and returns once every worker has stopped, so that the
// caller knows no write is still under way.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.workqueue.ShutDown()
	logger := klog.FromContext(ctx)

	logger.Info("Starting Robot controller", "workers", workers)
	logger.V(2).Info("Waiting for informer caches to sync")
	if ok := cache.WaitForCacheSync(ctx.Done(), c.deploymentsSynced, c.servicesSynced, c.robotsSynced, c.podsSynced, c.replicaSetsSynced); !ok {
		if ctx.Err() != nil {
			// A signal before the caches synced: nothing was started, so
			// this is a clean stop, not a failure.
			return nil
		}
		return errors.New("failed to wait for caches to sync")
	}

	// Syncs run under a context of their own, so that a shutdown does not
	// cut a Robot's writes off halfway unless they take too long.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { c.runWorker(workCtx) })
	}
	logger.Info("Started workers", "count", workers)

	<-ctx.Done()
	logger.Info("Shutting down: finishing the syncs in flight", "timeout", c.shutdownTimeout)
	c.workqueue.ShutDown()
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(c.shutdownTimeout):
		logger.Info("Shutdown timeout reached: cancelling the syncs in flight")
		cancelWork()
		<-stopped
	}
	logger.Info("Workers stopped")
	// The Events of the last syncs are written now, while this process
	// still leads.
	c.events.Shutdown(ctx, eventsShutdownTimeout)
	return nil
}

// HasSynced reports whether the informer caches have synced.
func (c *Controller) HasSynced() bool {
	return c.robotsSynced() && c.deploymentsSynced() && c.servicesSynced() && c.podsSynced() && c.replicaSetsSynced()
}

// LongestSync returns the Robot whose sync has been running the longest, and
// for how long; zero when none is running.
func (c *Controller) LongestSync() (cache.ObjectName, time.Duration) {
	var longest cache.ObjectName
	var started time.Time
	c.inflight.Range(func(key, value any) bool {
		if t := value.(time.Time); started.IsZero() || t.Before(started) {
			longest, started = key.(cache.ObjectName), t
		}
		return true
	})
	if started.IsZero() {
		return longest, 0
	}
	return longest, c.clock.Since(started)
}

// runWorker processes work items until the queue shuts down.
func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem syncs one Robot from the queue. It returns false when
// the queue has shut down.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := c.workqueue.Get()
	if shutdown {
		return false
	}
	defer c.workqueue.Done(key)
	if c.workqueue.ShuttingDown() {
		// The queue still hands out what it holds after ShutDown: on the
		// way out, only the syncs already in flight finish.
		return false
	}
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "robot", klog.KRef(key.Namespace, key.Name))
	ctx = klog.NewContext(ctx, logger)

	start := c.clock.Now()
	c.inflight.Store(key, start)
	// Each sync has a deadline, so that a request that never gets an
	// answer (a dead connection, a stuck API server) costs a retry with
	// backoff, not a worker. The clients have no timeout of their own: an
	// http.Client timeout would cut the informers' watches as well.
	syncCtx, cancel := context.WithTimeoutCause(ctx, c.syncTimeout, &outcome.SyncTimeoutError{Key: types.NamespacedName(key), Timeout: c.syncTimeout})
	requeueAfter, err := c.syncHandler(syncCtx, key)
	var timedOut *outcome.SyncTimeoutError
	if err != nil && errors.As(context.Cause(syncCtx), &timedOut) {
		// Whichever request the deadline cut short, one error says why.
		err = timedOut
	}
	cancel()
	c.inflight.Delete(key)
	c.metrics.SyncDuration.Observe(c.clock.Since(start).Seconds())

	switch {
	case err != nil && c.duringOutage(err):
		// The Robot is not at fault, and backing it off would delay it
		// well after the API server is back: it waits for the API server
		// instead.
		c.metrics.Syncs.WithLabelValues("error").Inc()
		c.park(key)
		logger.V(2).Info("Syncing Robot failed while the API server was down; retrying when it answers", "err", err)
	case err != nil:
		c.metrics.Syncs.WithLabelValues("error").Inc()
		// Back off, and try again.
		c.workqueue.AddRateLimited(key)
		logger.Error(err, "Syncing Robot failed; retrying", "retries", c.workqueue.NumRequeues(key))
	default:
		c.metrics.Syncs.WithLabelValues("success").Inc()
		c.workqueue.Forget(key)
		if requeueAfter > 0 {
			c.workqueue.AddAfter(key, requeueAfter)
		}
	}
	return true
}

// duringOutage reports whether a sync's failure came from an outage of the
// API server: a write the gate did not send, or any failure while the gate
// says the API server is down (a request's failure that looks like an
// outage is confirmed by the gate before the request returns).
func (c *Controller) duringOutage(err error) bool {
	return c.outage != nil && (errors.Is(err, outage.ErrDown) || c.outage.Down())
}

// park sets key aside until the API server answers again. If it already
// does, the key is queued at once: the gate's call to resumeParked may have
// come before the key was set aside.
func (c *Controller) park(key cache.ObjectName) {
	c.parkedMu.Lock()
	c.parked[key] = struct{}{}
	c.parkedMu.Unlock()
	if !c.outage.Down() {
		c.resumeParked()
	}
}

// resumeParked queues every Robot set aside during an outage, with its
// back-off forgotten: the outage was not the Robot's failure.
func (c *Controller) resumeParked() {
	c.parkedMu.Lock()
	parked := c.parked
	c.parked = map[cache.ObjectName]struct{}{}
	c.parkedMu.Unlock()
	for key := range parked {
		c.workqueue.Forget(key)
		c.workqueue.Add(key)
	}
}

// syncHandler brings the Robot named key's Deployment to what the Robot asks
// and writes what it saw into the Robot's status. It writes nothing when both
// already match. A positive duration asks for another look after that long
// even if nothing changes.
func (c *Controller) syncHandler(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	start := c.clock.Now()
	defer func() { logger.V(4).Info("Synced Robot", "duration", c.clock.Since(start)) }()

	robot, err := c.robotsLister.Robots(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		// Deleted: the garbage collector removes its Deployment.
		logger.V(4).Info("Robot no longer exists")
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if robot.DeletionTimestamp != nil {
		return 0, nil
	}
	robot = c.writtenRobots.Freshest(robot)

	var (
		deployment *appsv1.Deployment
		service    *corev1.Service
		syncErr    error
	)
	if workload.Paused(robot) {
		// A person holds the Deployment and the Service as they are:
		// nothing is written to them, whatever drifted or went missing.
		// The status still reports them as the caches hold them, and is
		// written only when that changes, so a paused Robot costs no
		// request per sync.
		deployment, service = c.ownDeployment(robot), c.ownService(robot)
		syncErr = &outcome.PausedError{Deployment: workload.DeploymentName(robot)}
	} else {
		if value, ignored := workload.PauseIgnored(robot); ignored {
			logger.V(2).Info("Ignoring the pause annotation: only \"true\" pauses", "annotation", workload.AnnotationPaused, "value", value)
		}
		deployment, syncErr = c.syncDeployment(ctx, robot)
		if syncErr == nil {
			service, syncErr = c.syncService(ctx, robot)
		} else {
			service = c.ownService(robot)
		}
	}
	if errors.Is(syncErr, outcome.ErrRobotGone) {
		// Its delete event is on its way, and the garbage collector
		// removes what it owned.
		logger.V(4).Info("Robot no longer exists; the cache has yet to catch up")
		return 0, nil
	}
	if errors.Is(syncErr, outcome.ErrNamespaceTerminating) {
		// Nothing to report, and nobody to report it to.
		logger.V(4).Info("Namespace is terminating")
		return 0, nil
	}
	if ctx.Err() != nil {
		// Out of time (or shutting down): a status write would fail too,
		// and its error hide why. The retry writes the status.
		return 0, cmp.Or(syncErr, context.Cause(ctx))
	}
	if err := c.updateStatus(ctx, robot, deployment, service, syncErr); err != nil {
		return 0, errors.Join(syncErr, err)
	}

	if syncErr == nil {
		return 0, nil
	}
	switch outcome.Classify(syncErr).Retry {
	case outcome.RecheckAfterFight:
		var contested *outcome.ContestedError
		errors.As(syncErr, &contested)
		return contested.Recheck, nil
	case outcome.RecheckLater:
		// Someone else must act, and no event may say when: look again
		// later, without backing off, so that the Robot converges soon
		// after.
		return nameTakenRecheck, nil
	case outcome.RetryOnChange:
		// Retrying cannot help; the next change to the Robot will.
		return 0, nil
	}
	return 0, syncErr
}

// syncDeployment creates or updates robot's Deployment when it is missing or
// differs from what the Robot asks for, and returns the Deployment as it now
// is. It never touches a Deployment that the Robot does not control.
func (c *Controller) syncDeployment(ctx context.Context, robot *robotv1beta1.Robot) (*appsv1.Deployment, error) {
	desired, err := workload.NewDeployment(robot)
	if err != nil {
		return nil, err
	}

	current, err := c.cachedDeployment(robot.Namespace, *desired.Name)
	if err != nil {
		return nil, err
	}
	if current == nil {
		if err := c.refusedBefore(robot); err != nil {
			return nil, err
		}
		if meta.IsStatusConditionTrue(robot.Status.Conditions, robotv1beta1.ConditionSynced) {
			// The Robot had its Deployment, and it is gone: someone deleted
			// it, and it must come back; or the garbage collector did,
			// because the Robot is gone too and the cache has not caught up
			// with that yet. Only the API server can tell which: recreated
			// for a deleted Robot, the Deployment would be deleted again,
			// after a second DeploymentCreated.
			if err := c.writer.CheckRobotExists(ctx, robot); err != nil {
				return nil, err
			}
		}
		created, err := c.writer.CreateDeployment(ctx, robot, desired)
		if !apierrors.IsAlreadyExists(err) {
			return created, c.noteRefusal(robot, err)
		}
		// The cache holds only the Deployments labelled as managed by the
		// operator: this one is someone else's, or the Robot's own with
		// that label removed. Only the Deployment can tell which.
		if current, err = c.writer.GetDeployment(ctx, robot.Namespace, *desired.Name); err != nil {
			return nil, err
		}
	}
	if !metav1.IsControlledBy(current, robot) {
		if ref := metav1.GetControllerOf(current); isRobotRef(ref) && ref.Name == robot.Name {
			// A Robot of this name was deleted and created again: the
			// first one's Deployment goes once the garbage collector gets
			// to it, and its delete event queues this Robot.
			return nil, &outcome.EarlierRobotError{Name: current.Name}
		}
		return nil, outcome.NotControlledError(current)
	}

	difference := c.specsChecked.Drift(desired, current)
	now := c.clock.Now()
	if difference == "" {
		if fight, endsIn := c.fights.Held(current.UID, now); fight.InFight {
			return current, &outcome.ContestedError{Deployment: current.Name, Drift: fight.Drift, Writer: fight.Writer, Recheck: endsIn, MaxWait: drift.FightMaxWait}
		}
		return current, nil
	}
	if err := c.refusedBefore(robot); err != nil {
		return current, err
	}
	if c.robotChanged(desired, current) {
		// The Robot changed: this is no revert.
		applied, err := c.writer.ApplyDeployment(ctx, robot, desired, current, difference)
		return applied, c.noteRefusal(robot, err)
	}
	// The Robot asks for what it asked for at the operator's last write:
	// another writer changed the Deployment.
	fight := c.fights.Admit(current.UID, now)
	if fight.Wait > 0 {
		return current, &outcome.ContestedError{Deployment: current.Name, Drift: fight.Drift, Writer: fight.Writer, Recheck: fight.Wait, MaxWait: drift.FightMaxWait}
	}
	writer := fight.Writer
	if fight.StartsNow {
		// Once per fight: the cache keeps no managedFields to say who.
		if live, err := c.writer.GetDeployment(ctx, current.Namespace, current.Name); err == nil {
			writer = drift.LastForeignWriter(live)
		}
	}
	applied, err := c.writer.ApplyDeployment(ctx, robot, desired, current, difference)
	if err != nil {
		return applied, c.noteRefusal(robot, err)
	}
	if fight := c.fights.Reverted(applied.UID, now, difference, writer); fight.InFight {
		// The other writer's next change queues the Robot; if none comes,
		// the fight can end after drift.FightCalm.
		return applied, &outcome.ContestedError{Deployment: applied.Name, Drift: fight.Drift, Writer: fight.Writer, Recheck: min(fight.Wait, drift.FightCalm), MaxWait: drift.FightMaxWait}
	}
	return applied, nil
}

// refusal is a Deployment write the API server refused as invalid for a
// generation of a Robot.
type refusal struct {
	generation int64
	err        error
}

// noteRefusal remembers err when it is the API server's refusal of robot's
// Deployment write as invalid, so that the same write is not sent again
// until the Robot's next generation; it returns err.
func (c *Controller) noteRefusal(robot *robotv1beta1.Robot, err error) error {
	var invalid *outcome.InvalidSpecError
	if errors.As(err, &invalid) {
		c.refused.Store(robot.UID, refusal{generation: robot.Generation, err: err})
	}
	return err
}

// refusedBefore returns the refusal of robot's Deployment write at its
// current generation, if there was one: the write would be refused again,
// and only a new generation may change that. An unrelated event (a
// Deployment status update, a resync) then costs no request, and the
// Robot keeps its InvalidSpec status.
func (c *Controller) refusedBefore(robot *robotv1beta1.Robot) error {
	return refusedAt(&c.refused, robot)
}

// refusedAt returns the refusal that refusals holds for robot's current
// generation, if any, and forgets one of an earlier generation.
func refusedAt(refusals *sync.Map, robot *robotv1beta1.Robot) error {
	last, ok := refusals.Load(robot.UID)
	if !ok {
		return nil
	}
	if r := last.(refusal); r.generation == robot.Generation {
		return r.err
	}
	refusals.Delete(robot.UID)
	return nil
}

// robotChanged reports whether the Robot asks for something else than when
// the operator last saw its Deployment, current, hold what it asked for. It
// is told from the spec-check memo, which only the operator writes, not from
// the Deployment's spec-hash annotation, which anyone can: another writer's
// edit of the annotation is drift like any other, and meets the fight
// back-off. Only when the memo knows nothing of the Deployment (this process
// has not applied or checked it yet) is the annotation all there is to go by.
func (c *Controller) robotChanged(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) bool {
	want := desired.Annotations[workload.AnnotationSpecHash]
	if last, ok := c.specsChecked.LastSpecHash(current.UID); ok {
		return last != want
	}
	return current.Annotations[workload.AnnotationSpecHash] != want
}

// cachedDeployment returns the Deployment named name from the cache, or the
// one this process wrote last if the cache has not caught up with it yet;
// nil when the cache has none. The cache holds only Deployments labelled as
// managed by the operator: a Deployment of that name may exist all the same.
func (c *Controller) cachedDeployment(namespace, name string) (*appsv1.Deployment, error) {
	deployment, err := c.deploymentsLister.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c.writtenDeployments.Freshest(deployment), nil
}

// syncService creates, updates or deletes robot's Service so that it is what
// the Robot asks for, and returns the Service as it now is (nil when there
// is none the Robot controls). Like syncDeployment, it never touches a
// Service that the Robot does not control. Whether there is anything to do
// is decided from the cache: a Robot without a Service, or whose Service is
// as asked, costs no request.
func (c *Controller) syncService(ctx context.Context, robot *robotv1beta1.Robot) (*corev1.Service, error) {
	if err := workload.ValidateServiceName(robot); err != nil {
		return nil, err
	}
	if want := workload.ServiceType(robot); workload.WantsService(robot) && len(c.serviceTypes) > 0 && !slices.Contains(c.serviceTypes, want) {
		// Nothing is written, and a Service the Robot has keeps its type:
		// deleting it would cut off whoever uses it.
		return c.ownService(robot), &outcome.ServiceTypeNotAllowedError{Type: want, Allowed: c.serviceTypes}
	}
	desired := workload.NewService(robot)
	current, err := c.cachedService(robot.Namespace, workload.ServiceName(robot))
	if err != nil {
		return nil, err
	}
	if desired == nil {
		if current != nil && metav1.IsControlledBy(current, robot) {
			return nil, c.writer.DeleteOwnService(ctx, robot, current)
		}
		return nil, nil
	}

	if current == nil {
		created, err := c.writer.CreateService(ctx, robot, desired)
		if !apierrors.IsAlreadyExists(err) {
			return created, err
		}
		// Not in the cache, which holds only the Services labelled as
		// managed by the operator: someone else's, or the Robot's own with
		// that label removed.
		if current, err = c.writer.GetService(ctx, robot.Namespace, *desired.Name); err != nil {
			return nil, err
		}
	}
	if !metav1.IsControlledBy(current, robot) {
		ref := metav1.GetControllerOf(current)
		if isRobotRef(ref) && ref.Name == robot.Name {
			// A Robot of this name was deleted and created again: the
			// first one's Service goes with the garbage collector, and its
			// delete event queues this Robot.
			return nil, &outcome.EarlierRobotError{Name: current.Name, Kind: "Service"}
		}
		err := &outcome.ServiceNameTakenError{Name: current.Name}
		if ref != nil {
			err.Owner = ref.Kind + "/" + ref.Name
		}
		return nil, err
	}

	refusedBefore := status.ReportsLoadBalancerClassImmutable(robot.Status, robot.Generation)
	if err := drift.LoadBalancerClassChange(desired, current, refusedBefore); err != nil {
		// The API server would refuse the apply: the Service stays as it
		// is, and the Robot says how to proceed.
		return current, err
	}
	difference := drift.ServiceDrift(desired, current)
	if difference == "" {
		return current, nil
	}
	applied, err := c.writer.ApplyService(ctx, robot, desired, current, difference)
	if refused := drift.LoadBalancerClassRefused(desired, current, err); refused != nil {
		// A class the operator set and the Robot no longer asks for: not
		// retried until the Robot or the Service changes.
		return current, refused
	}
	return applied, err
}

// cachedService returns the Service named name from the cache, or the one
// this process wrote last if the cache has not caught up with it yet; nil
// when the cache has none.
func (c *Controller) cachedService(namespace, name string) (*corev1.Service, error) {
	service, err := c.servicesLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c.writtenServices.Freshest(service), nil
}

// ownDeployment returns robot's Deployment from the cache when the Robot
// controls it, or nil: what the status reports when the Deployment was not
// synced.
func (c *Controller) ownDeployment(robot *robotv1beta1.Robot) *appsv1.Deployment {
	deployment, err := c.cachedDeployment(robot.Namespace, workload.DeploymentName(robot))
	if err != nil || deployment == nil || !metav1.IsControlledBy(deployment, robot) {
		return nil
	}
	return deployment
}

// ownService returns robot's Service from the cache when the Robot controls
// it, or nil: what the status reports when the Service was not synced.
func (c *Controller) ownService(robot *robotv1beta1.Robot) *corev1.Service {
	if !workload.WantsService(robot) {
		return nil
	}
	service, err := c.cachedService(robot.Namespace, workload.ServiceName(robot))
	if err != nil || service == nil || !metav1.IsControlledBy(service, robot) {
		return nil
	}
	return service
}

// updateStatus writes robot's status when what it should say differs from
// what it says, and records a Warning event when the Robot newly needs a
// person's attention.
func (c *Controller) updateStatus(ctx context.Context, robot *robotv1beta1.Robot, deployment *appsv1.Deployment, service *corev1.Service, syncErr error) error {
	now := c.clock.Now()
	pods := c.robotPods(ctx, robot)
	robotStatus, recheck := status.Diagnosed(robot, deployment, service, c.podReplicaSets(ctx, pods), pods, syncErr, metav1.NewTime(now))
	if recheck > 0 {
		// A pod not ready yet may become a cause with no event to say so.
		c.workqueue.AddAfter(cache.MetaObjectToName(robot), recheck)
	}
	if apiequality.Semantic.DeepEqual(robotStatus, robot.Status) {
		c.observeReadiness(robot, &robotStatus, now)
		return nil
	}
	if err := refusedAt(&c.statusRefused, robot); err != nil {
		// The Robot is as large as when the API server could not store
		// it: the write would fail again.
		klog.FromContext(ctx).V(4).Info("Not writing the status, which the API server cannot store at this generation", "err", err)
		return nil
	}
	written, err := c.writer.ApplyStatus(ctx, robot, &robotStatus)
	var tooLarge *outcome.StatusTooLargeError
	if errors.As(err, &tooLarge) && outcome.Classify(err).Retry == outcome.RetryOnChange {
		// Retrying cannot help: only a smaller spec, a new generation,
		// can. A person must know, and no condition can tell them.
		c.statusRefused.Store(robot.UID, refusal{generation: robot.Generation, err: err})
		klog.FromContext(ctx).Error(err, "Writing the Robot's status failed; not retrying until its spec changes")
		c.writer.Recorder.Event(robot, corev1.EventTypeWarning, outcome.ReasonStatusTooLarge, tooLarge.Error())
		return nil
	}
	if err != nil || written == nil {
		return err
	}

	c.observeReadiness(robot, &robotStatus, now)

	logger := klog.FromContext(ctx)
	before := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionReady)
	after := meta.FindStatusCondition(robotStatus.Conditions, robotv1beta1.ConditionReady)
	logger.V(2).Info("Updated Robot status", "ready", after.Status, "reason", after.Reason)
	if before == nil || before.Status != after.Status || before.Reason != after.Reason {
		logger.Info("Robot readiness changed", "ready", after.Status, "reason", after.Reason, "message", after.Message)
	}
	if warning := status.NewWarning(robot.Status, robotStatus); warning != nil {
		c.writer.Recorder.Event(robot, corev1.EventTypeWarning, warning.Reason, warning.Message)
	}
	return nil
}

// observeReadiness records how long robot's generation took to become
// Ready, when robotStatus, now stored, says it is.
func (c *Controller) observeReadiness(robot *robotv1beta1.Robot, robotStatus *robotv1beta1.RobotStatus, now time.Time) {
	if !status.ReadyFor(*robotStatus, robot.Generation) {
		return
	}
	if took, ok := c.readiness.Ready(robot.UID, robot.Generation, now); ok {
		c.metrics.TimeToReady.Observe(took.Seconds())
	}
}

// robotPods returns the cached pods of robot; none when the controller does
// not watch pods.
func (c *Controller) robotPods(ctx context.Context, robot *robotv1beta1.Robot) []*podsummary.Pod {
	if c.pods == nil {
		return nil
	}
	objs, err := c.pods.ByIndex(podsummary.PodsByRobot, robot.Namespace+"/"+robot.Name)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Listing the Robot's pods failed", "err", err)
		return nil
	}
	pods := make([]*podsummary.Pod, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*podsummary.Pod); ok {
			pods = append(pods, pod)
		}
	}
	return pods
}

// podReplicaSets returns the cached ReplicaSets that control pods, looked
// up by the names the pods give: the ReplicaSet cache needs no index, and
// the current ReplicaSet, when it has no pod yet, has nothing to diagnose.
func (c *Controller) podReplicaSets(ctx context.Context, pods []*podsummary.Pod) []*podsummary.ReplicaSet {
	if c.replicaSets == nil {
		return nil
	}
	var replicaSets []*podsummary.ReplicaSet
	seen := make(map[string]bool, 2)
	for _, pod := range pods {
		key := pod.ReplicaSetKey()
		if key == "" || seen[key] {
			continue
		}
		seen[key] = true
		obj, exists, err := c.replicaSets.GetByKey(key)
		if err != nil {
			klog.FromContext(ctx).V(4).Info("Reading a ReplicaSet from the cache failed", "replicaSet", key, "err", err)
			continue
		}
		if rs, ok := obj.(*podsummary.ReplicaSet); exists && ok {
			replicaSets = append(replicaSets, rs)
		}
	}
	return replicaSets
}

// addRobot queues a Robot the informer has just seen.
func (c *Controller) addRobot(obj interface{}) {
	c.handleRobot(obj)
}

// updateRobot queues a changed Robot. Periodic resyncs come through here
// too: they recheck every Robot from the cache, which costs no API request
// for a converged one.
func (c *Controller) updateRobot(_, new interface{}) {
	// The status this process just wrote tells a sync nothing new, unless
	// it carries a change that landed before the write: a spec change (its
	// generation is not the one the written status reports), or the pause
	// annotation set or removed (the written status says the other). Any
	// other change of the Robot comes with a resourceVersion of its own,
	// and is never taken for the echo.
	if robot, ok := new.(*robotv1beta1.Robot); ok && robot.Generation == robot.Status.ObservedGeneration &&
		workload.Paused(robot) == status.ReportsPaused(robot.Status) && c.writtenRobots.IsOwnWrite(robot) {
		return
	}
	c.handleRobot(new)
}

// deleteRobot forgets what the controller kept about a deleted Robot. The
// garbage collector removes its Deployment.
func (c *Controller) deleteRobot(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if robot, ok := obj.(*robotv1beta1.Robot); ok {
		c.readiness.Forget(robot.UID)
		c.writtenRobots.Forget(robot.UID)
		c.refused.Delete(robot.UID)
		c.statusRefused.Delete(robot.UID)
	}
}

// addDeployment queues the Robot of a Deployment the informer has just seen.
func (c *Controller) addDeployment(obj interface{}) {
	if deployment, ok := obj.(*appsv1.Deployment); ok && c.writtenDeployments.IsOwnWrite(deployment) {
		// The Deployment this process just created: the sync that created
		// it has already reported it.
		return
	}
	c.handleObject(obj)
}

// updateDeployment queues the Robot of a changed Deployment.
func (c *Controller) updateDeployment(old, new interface{}) {
	deployment := new.(*appsv1.Deployment)
	if old.(*appsv1.Deployment).ResourceVersion == deployment.ResourceVersion || c.writtenDeployments.IsOwnWrite(deployment) {
		// A periodic resync, or this process's own write: nothing the sync
		// that wrote it has not seen.
		return
	}
	c.handleObject(new)
}

// deleteDeployment forgets what the controller kept about a deleted
// Deployment, and queues its Robot.
func (c *Controller) deleteDeployment(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if deployment, ok := obj.(*appsv1.Deployment); ok {
		c.writtenDeployments.Forget(deployment.UID)
		c.specsChecked.Forget(deployment.UID)
		c.fights.Forget(deployment.UID)
	}
	// By name, whatever the owner's UID: the deletion of an earlier Robot's
	// Deployment frees the name for the Robot that has it now.
	if robot, _ := c.owningRobot(obj); robot != nil {
		c.enqueueRobot(robot)
	}
}

// handleRobot notes when a Robot's generation was first seen, and queues it.
func (c *Controller) handleRobot(obj interface{}) {
	if robot, ok := obj.(*robotv1beta1.Robot); ok {
		c.readiness.Seen(robot, c.clock.Now())
	}
	c.enqueueRobot(obj)
}

// enqueueRobot puts a Robot in the queue.
func (c *Controller) enqueueRobot(obj interface{}) {
	key, err := cache.ObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.workqueue.Add(key)
}

// handleObject enqueues the Robot that controls a Deployment, if any. The
// owner must match by API group, kind and UID: a Robot deleted and recreated
// under the same name is another Robot.
func (c *Controller) handleObject(obj interface{}) {
	if robot, ref := c.owningRobot(obj); robot != nil && robot.UID == ref.UID {
		c.enqueueRobot(robot)
	}
}

// owningRobot returns the Robot named by a Deployment's controller
// reference, and that reference; nil when there is no such Robot. The
// Robot's UID may differ from the reference's.
func (c *Controller) owningRobot(obj interface{}) (*robotv1beta1.Robot, *metav1.OwnerReference) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	object, ok := obj.(metav1.Object)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("unexpected object of type %T in the Deployment informer", obj))
		return nil, nil
	}
	ref := metav1.GetControllerOf(object)
	if !isRobotRef(ref) {
		return nil, nil
	}
	robot, err := c.robotsLister.Robots(object.GetNamespace()).Get(ref.Name)
	if err != nil {
		return nil, nil
	}
	return robot, ref
}

// isRobotRef reports whether an owner reference names a Robot.
func isRobotRef(ref *metav1.OwnerReference) bool {
	if ref == nil || ref.Kind != "Robot" {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == robotv1beta1.SchemeGroupVersion.Group
}

// addServiceEventHandler queues the Robot of each Service the informer sees
// change, so that a Service edited or deleted by hand is put back.
func (c *Controller) addServiceEventHandler(serviceInformer coreinformers.ServiceInformer) error {
	_, err := serviceInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addService,
		UpdateFunc: c.updateService,
		DeleteFunc: c.deleteService,
	})
	return err
}

// addService queues the Robot of a Service the informer has just seen.
func (c *Controller) addService(obj interface{}) {
	if service, ok := obj.(*corev1.Service); ok && c.writtenServices.IsOwnWrite(service) {
		return
	}
	c.handleObject(obj)
}

// updateService queues the Robot of a changed Service.
func (c *Controller) updateService(old, new interface{}) {
	service := new.(*corev1.Service)
	if old.(*corev1.Service).ResourceVersion == service.ResourceVersion || c.writtenServices.IsOwnWrite(service) {
		return
	}
	c.handleObject(new)
}

// deleteService forgets what the controller kept about a deleted Service,
// and queues its Robot: by name, so that the deletion of an earlier Robot's
// Service frees the name for the Robot that has it now.
func (c *Controller) deleteService(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if service, ok := obj.(*corev1.Service); ok {
		c.writtenServices.Forget(service.UID)
	}
	if robot, _ := c.owningRobot(obj); robot != nil {
		c.enqueueRobot(robot)
	}
}

// watchPods makes the controller read the pods and ReplicaSets that
// podInformer and replicaSetInformer cache, which should be only those of
// the Deployments the operator manages, with podsummary.Summarize as their
// transform; and queue a Robot when one of its pods or ReplicaSets changes
// in a way the diagnosis may read.
func (c *Controller) watchPods(podInformer, replicaSetInformer cache.SharedIndexInformer) error {
	if err := podInformer.AddIndexers(cache.Indexers{podsummary.PodsByRobot: podsummary.RobotIndex}); err != nil {
		return fmt.Errorf("adding the Pod index: %w", err)
	}
	c.pods = podInformer.GetIndexer()
	c.podsSynced = podInformer.HasSynced
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.handlePod,
		UpdateFunc: func(old, new interface{}) {
			// A resync, or a change to what the cache does not keep: the
			// diagnosis would read the same.
			if oldPod, ok := old.(*podsummary.Pod); ok && oldPod.SameAs(new) {
				return
			}
			c.handlePod(new)
		},
		DeleteFunc: c.handlePod,
	}); err != nil {
		return fmt.Errorf("adding the Pod event handler: %w", err)
	}

	c.replicaSets = replicaSetInformer.GetIndexer()
	c.replicaSetsSynced = replicaSetInformer.HasSynced
	if _, err := replicaSetInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		// A new ReplicaSet may be the current one of a Deployment whose
		// revision the sync saw first; a deleted one may have been.
		AddFunc: c.handleReplicaSet,
		UpdateFunc: func(old, new interface{}) {
			// A ReplicaSet's status changes with each of its pods, whose
			// own events say more; only a new revision (a rollback makes
			// an old ReplicaSet current again) or owner changes which
			// pods are current.
			if oldRS, ok := old.(*podsummary.ReplicaSet); ok && oldRS.SameAs(new) {
				return
			}
			c.handleReplicaSet(new)
		},
		DeleteFunc: c.handleReplicaSet,
	}); err != nil {
		return fmt.Errorf("adding the ReplicaSet event handler: %w", err)
	}
	return nil
}

// handlePod queues the Robot whose selector label the pod carries, if that
// Robot exists.
func (c *Controller) handlePod(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*podsummary.Pod)
	if !ok || pod.Robot == "" {
		return
	}
	if _, err := c.robotsLister.Robots(pod.Namespace).Get(pod.Robot); err != nil {
		return
	}
	c.workqueue.Add(cache.ObjectName{Namespace: pod.Namespace, Name: pod.Robot})
}

// handleReplicaSet queues the Robot of the Deployment that controls the
// ReplicaSet, if that Deployment is the one in the cache (by UID: an
// earlier Deployment of the same name is another Robot's) and its Robot
// exists.
func (c *Controller) handleReplicaSet(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	rs, ok := obj.(*podsummary.ReplicaSet)
	if !ok || rs.Deployment == "" {
		return
	}
	deployment, err := c.deploymentsLister.Deployments(rs.Namespace).Get(rs.Deployment)
	if err != nil || !rs.OwnedBy(deployment.UID) {
		return
	}
	c.handleObject(deployment)
}

// RegisterMetrics registers the controller's metrics, and a gauge of the
// Robots by their Ready condition computed from the cache at each scrape.
func (c *Controller) RegisterMetrics(registry prometheus.Registerer) error {
	for _, collector := range []prometheus.Collector{
		c.metrics.Syncs, c.metrics.SyncDuration, c.metrics.TimeToReady, c.metrics.Leader,
		&metrics.RobotsCollector{Lister: c.robotsLister},
		&metrics.TrackedCollector{Sizes: c.trackedObjects},
	} {
		if err := registry.Register(collector); err != nil {
			return err
		}
	}
	return nil
}

// trackedObjects returns the size of each map the controller keeps per
// object, by the name the robot_operator_tracked_objects gauge gives it.
func (c *Controller) trackedObjects() map[string]int {
	inflight := 0
	c.inflight.Range(func(any, any) bool { inflight++; return true })
	return map[string]int{
		"readiness":           c.readiness.Len(),
		"written_robots":      c.writtenRobots.Len(),
		"written_deployments": c.writtenDeployments.Len(),
		"written_services":    c.writtenServices.Len(),
		"specs_checked":       c.specsChecked.Len(),
		"fights":              c.fights.Len(),
		"inflight":            inflight,
		"parked":              c.parkedLen(),
	}
}

// parkedLen returns how many Robots wait for the API server's return.
func (c *Controller) parkedLen() int {
	c.parkedMu.Lock()
	defer c.parkedMu.Unlock()
	return len(c.parked)
}

// runLeading runs run, the controller's workers, with the leader gauge at
// 1 for as long as they run.
func (c *Controller) runLeading(run func() error) error {
	c.metrics.Leader.Set(1)
	defer c.metrics.Leader.Set(0)
	return run()
}
