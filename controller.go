package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
	robotscheme "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/scheme"
	informers "github.com/robot-operator/robot-operator/pkg/generated/informers/externalversions/robot/v1alpha1"
	listers "github.com/robot-operator/robot-operator/pkg/generated/listers/robot/v1alpha1"
)

const (
	controllerAgentName = "robot-operator"
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

// Event reasons. Condition reasons, also used as event reasons, live with the
// API types.
const (
	// EventDeploymentCreated: the operator created a Robot's Deployment.
	EventDeploymentCreated = "DeploymentCreated"
	// EventDeploymentUpdated: the operator changed a Robot's Deployment to
	// match the Robot, after the Robot changed or someone changed the
	// Deployment.
	EventDeploymentUpdated = "DeploymentUpdated"
	// EventServiceCreated: the operator created a Robot's Service.
	EventServiceCreated = "ServiceCreated"
	// EventServiceUpdated: the operator changed a Robot's Service to match
	// the Robot.
	EventServiceUpdated = "ServiceUpdated"
	// EventServiceDeleted: the operator deleted a Robot's Service, which
	// the Robot no longer asks for.
	EventServiceDeleted = "ServiceDeleted"
)

// Controller keeps each Robot's Deployment as the Robot asks and reports the
// Deployment's state in the Robot's status.
type Controller struct {
	kubeclientset  kubernetes.Interface
	robotclientset clientset.Interface

	deploymentsLister appslisters.DeploymentLister
	deploymentsSynced cache.InformerSynced
	servicesLister    corelisters.ServiceLister
	servicesSynced    cache.InformerSynced
	robotsLister      listers.RobotLister
	robotsSynced      cache.InformerSynced
	// pods is nil unless watchPods was called; then the Ready condition
	// says why the pods do not run (diagnosis.go).
	pods       cache.Indexer
	podsSynced cache.InformerSynced

	// workqueue holds the Robots to sync. A Robot is in it at most once,
	// and never synced by two workers at the same time.
	workqueue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	recorder  record.EventRecorder
	events    *events
	clock     clock.PassiveClock

	metrics   *controllerMetrics
	readiness *readinessTracker
	// The Robots and Deployments this controller wrote, until the caches
	// catch up with them.
	writtenRobots      recentWrites[*robotv1alpha1.Robot]
	writtenDeployments recentWrites[*appsv1.Deployment]
	writtenServices    recentWrites[*corev1.Service]
	// specsChecked remembers, for each Deployment (by UID), the generation
	// and spec hash whose spec last showed no drift, so that the costly
	// comparison of specs runs once per change, not on every status update.
	specsChecked sync.Map
	// fights counts the reverts of each Deployment, to back off from
	// another writer that keeps changing it (fight.go).
	fights *fights
	// inflight maps each Robot being synced to when its sync started, for
	// the health check's watchdog.
	inflight sync.Map
	// shutdownTimeout bounds how long Run lets in-flight syncs finish once
	// its context is done.
	shutdownTimeout time.Duration
	// syncTimeout bounds one sync, all its API requests included: the
	// sync's context ends then, and so does whatever request is in flight.
	syncTimeout time.Duration
	// mayWrite, when set, is asked before every write; with leader election
	// it fails once this process may no longer be the leader.
	mayWrite func() error
}

// NewController returns a Controller that watches Robots and the Deployments
// and Services the deploymentInformer and serviceInformer see, which should
// be only those labelled as managed by the operator.
func NewController(
	ctx context.Context,
	kubeclientset kubernetes.Interface,
	robotclientset clientset.Interface,
	deploymentInformer appsinformers.DeploymentInformer,
	serviceInformer coreinformers.ServiceInformer,
	robotInformer informers.RobotInformer,
) (*Controller, error) {
	logger := klog.FromContext(ctx)

	// Events about Robots need the Robot kind in the scheme the recorder
	// uses.
	utilruntime.Must(robotscheme.AddToScheme(scheme.Scheme))
	var controller *Controller
	events := newEvents(ctx, kubeclientset.CoreV1(), func() error { return controller.checkMayWrite() })

	// Each Robot backs off on its own, from 5ms up to 5 minutes, and all
	// retries together are held to 10 per second (burst 100), so that a
	// broken Robot costs little and an outage does not become a storm.
	rateLimiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](5*time.Millisecond, 5*time.Minute),
		&workqueue.TypedBucketRateLimiter[cache.ObjectName]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)

	controller = &Controller{
		kubeclientset:     kubeclientset,
		robotclientset:    robotclientset,
		deploymentsLister: deploymentInformer.Lister(),
		deploymentsSynced: deploymentInformer.Informer().HasSynced,
		servicesLister:    serviceInformer.Lister(),
		servicesSynced:    serviceInformer.Informer().HasSynced,
		robotsLister:      robotInformer.Lister(),
		robotsSynced:      robotInformer.Informer().HasSynced,
		podsSynced:        func() bool { return true },
		workqueue: workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter,
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: queueName}),
		recorder:        events.recorder,
		events:          events,
		clock:           clock.RealClock{},
		fights:          newFights(),
		metrics:         newControllerMetrics(),
		readiness:       newReadinessTracker(),
		shutdownTimeout: 20 * time.Second,
		syncTimeout:     defaultSyncTimeout,
	}

	logger.V(4).Info("Setting up event handlers")
	if _, err := robotInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    controller.addRobot,
		UpdateFunc: controller.updateRobot,
		DeleteFunc: controller.deleteRobot,
	}); err != nil {
		return nil, fmt.Errorf("adding the Robot event handler: %w", err)
	}
	if _, err := deploymentInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    controller.addDeployment,
		UpdateFunc: controller.updateDeployment,
		DeleteFunc: controller.deleteDeployment,
	}); err != nil {
		return nil, fmt.Errorf("adding the Deployment event handler: %w", err)
	}
	if err := controller.addServiceEventHandler(serviceInformer); err != nil {
		return nil, fmt.Errorf("adding the Service event handler: %w", err)
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
	if ok := cache.WaitForCacheSync(ctx.Done(), c.deploymentsSynced, c.servicesSynced, c.robotsSynced, c.podsSynced); !ok {
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
	c.events.shutdown(ctx, eventsShutdownTimeout)
	return nil
}

func (c *Controller) checkMayWrite() error {
	if c.mayWrite == nil {
		return nil
	}
	return c.mayWrite()
}

// HasSynced reports whether the informer caches have synced.
func (c *Controller) HasSynced() bool {
	return c.robotsSynced() && c.deploymentsSynced() && c.servicesSynced() && c.podsSynced()
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
	syncCtx, cancel := context.WithTimeoutCause(ctx, c.syncTimeout, &syncTimeoutError{key: key, timeout: c.syncTimeout})
	requeueAfter, err := c.syncHandler(syncCtx, key)
	var timedOut *syncTimeoutError
	if err != nil && errors.As(context.Cause(syncCtx), &timedOut) {
		// Whichever request the deadline cut short, one error says why.
		err = timedOut
	}
	cancel()
	c.inflight.Delete(key)
	c.metrics.syncDuration.Observe(c.clock.Since(start).Seconds())

	switch {
	case err != nil:
		c.metrics.syncs.WithLabelValues("error").Inc()
		// Back off, and try again.
		c.workqueue.AddRateLimited(key)
		logger.Error(err, "Syncing Robot failed; retrying", "retries", c.workqueue.NumRequeues(key))
	default:
		c.metrics.syncs.WithLabelValues("success").Inc()
		c.workqueue.Forget(key)
		if requeueAfter > 0 {
			c.workqueue.AddAfter(key, requeueAfter)
		}
	}
	return true
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
	robot = c.writtenRobots.freshest(robot)

	deployment, syncErr := c.syncDeployment(ctx, robot)
	var service *corev1.Service
	if syncErr == nil {
		service, syncErr = c.syncService(ctx, robot)
	} else {
		service = c.ownService(robot)
	}
	if errors.Is(syncErr, errRobotGone) {
		// Its delete event is on its way, and the garbage collector
		// removes what it owned.
		logger.V(4).Info("Robot no longer exists; the cache has yet to catch up")
		return 0, nil
	}
	if errors.Is(syncErr, errNamespaceTerminating) {
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
	switch classify(syncErr).retry {
	case recheckAfterFight:
		var contested *contestedError
		errors.As(syncErr, &contested)
		return contested.recheck, nil
	case recheckLater:
		// Someone else must act, and no event may say when: look again
		// later, without backing off, so that the Robot converges soon
		// after.
		return nameTakenRecheck, nil
	case retryOnChange:
		// Retrying cannot help; the next change to the Robot will.
		return 0, nil
	}
	return 0, syncErr
}

// syncDeployment creates or updates robot's Deployment when it is missing or
// differs from what the Robot asks for, and returns the Deployment as it now
// is. It never touches a Deployment that the Robot does not control.
func (c *Controller) syncDeployment(ctx context.Context, robot *robotv1alpha1.Robot) (*appsv1.Deployment, error) {
	desired, err := newDeployment(robot)
	if err != nil {
		return nil, err
	}

	current, err := c.cachedDeployment(robot.Namespace, *desired.Name)
	if err != nil {
		return nil, err
	}
	if current == nil {
		if meta.IsStatusConditionTrue(robot.Status.Conditions, robotv1alpha1.ConditionSynced) {
			// The Robot had its Deployment, and it is gone: someone deleted
			// it, and it must come back; or the garbage collector did,
			// because the Robot is gone too and the cache has not caught up
			// with that yet. Only the API server can tell which: recreated
			// for a deleted Robot, the Deployment would be deleted again,
			// after a second DeploymentCreated.
			if err := c.checkRobotExists(ctx, robot); err != nil {
				return nil, err
			}
		}
		created, err := c.createDeployment(ctx, robot, desired)
		if !apierrors.IsAlreadyExists(err) {
			return created, err
		}
		// The cache holds only the Deployments labelled as managed by the
		// operator: this one is someone else's, or the Robot's own with
		// that label removed. Only the Deployment can tell which.
		if current, err = c.getDeployment(ctx, robot.Namespace, *desired.Name); err != nil {
			return nil, err
		}
	}
	if !metav1.IsControlledBy(current, robot) {
		if ref := metav1.GetControllerOf(current); isRobotRef(ref) && ref.Name == robot.Name {
			// A Robot of this name was deleted and created again: the
			// first one's Deployment goes once the garbage collector gets
			// to it, and its delete event queues this Robot.
			return nil, &earlierRobotError{name: current.Name}
		}
		return nil, notControlledError(current)
	}

	drift := c.deploymentDrift(desired, current)
	now := c.clock.Now()
	if drift == "" {
		if fight, endsIn := c.fights.held(current.UID, now); fight.inFight {
			return current, &contestedError{deployment: current.Name, drift: fight.drift, writer: fight.writer, recheck: endsIn}
		}
		return current, nil
	}
	if current.Annotations[annotationSpecHash] != desired.Annotations[annotationSpecHash] {
		// The Robot changed: this is no revert.
		return c.applyDeployment(ctx, robot, desired, current, drift)
	}
	// The Robot asks for what it asked for at the operator's last write:
	// another writer changed the Deployment.
	fight := c.fights.admit(current.UID, now)
	if fight.wait > 0 {
		return current, &contestedError{deployment: current.Name, drift: fight.drift, writer: fight.writer, recheck: fight.wait}
	}
	writer := fight.writer
	if fight.startsNow {
		// Once per fight: the cache keeps no managedFields to say who.
		if live, err := c.getDeployment(ctx, current.Namespace, current.Name); err == nil {
			writer = lastForeignWriter(live)
		}
	}
	applied, err := c.applyDeployment(ctx, robot, desired, current, drift)
	if err != nil {
		return applied, err
	}
	if fight := c.fights.reverted(applied.UID, now, drift, writer); fight.inFight {
		// The other writer's next change queues the Robot; if none comes,
		// the fight can end after fightCalm.
		return applied, &contestedError{deployment: applied.Name, drift: fight.drift, writer: fight.writer, recheck: min(fight.wait, fightCalm)}
	}
	return applied, nil
}

// errRobotGone is a Robot the cache holds but the API server no longer does.
var errRobotGone = errors.New("the Robot no longer exists")

// checkRobotExists asks the API server whether robot still exists, the
// same Robot (by UID): errRobotGone when not.
func (c *Controller) checkRobotExists(ctx context.Context, robot *robotv1alpha1.Robot) error {
	live, err := c.robotclientset.RobotV1alpha1().Robots(robot.Namespace).Get(ctx, robot.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || err == nil && live.UID != robot.UID {
		return errRobotGone
	}
	return err
}

// createDeployment creates robot's Deployment, desired, with a plain create
// rather than an apply: a create fails with AlreadyExists when a Deployment of
// that name exists, so one that someone else created after the cache was
// filled is never written, and no read is needed first to make sure.
func (c *Controller) createDeployment(ctx context.Context, robot *robotv1alpha1.Robot, desired *appsv1ac.DeploymentApplyConfiguration) (*appsv1.Deployment, error) {
	var deployment appsv1.Deployment
	if err := roundTrip(desired, &deployment); err != nil {
		return nil, &invalidSpecError{err}
	}
	if err := c.checkMayWrite(); err != nil {
		return nil, err
	}
	created, err := c.kubeclientset.AppsV1().Deployments(robot.Namespace).Create(ctx, &deployment,
		metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return nil, writeError("creating", robot.Namespace, deployment.Name, err)
	}

	c.writtenDeployments.remember(created)
	// What the operator just created holds its spec: nothing to compare
	// until the Deployment's spec or the Robot's changes.
	c.specsChecked.Store(created.UID, specCheck{created.Generation, desired.Annotations[annotationSpecHash]})
	klog.FromContext(ctx).V(2).Info("Created Deployment", "deployment", klog.KObj(created))
	c.recorder.Eventf(robot, corev1.EventTypeNormal, EventDeploymentCreated, "Created Deployment %q", created.Name)
	return created, nil
}

// applyDeployment applies desired, what robot asks for, to its Deployment,
// current, which differs from it as drift says, and returns the Deployment
// as it then is. The apply is forced: what the Robot sets is the Robot's,
// whoever changed it since.
func (c *Controller) applyDeployment(ctx context.Context, robot *robotv1alpha1.Robot, desired *appsv1ac.DeploymentApplyConfiguration,
	current *appsv1.Deployment, drift string) (*appsv1.Deployment, error) {
	current, err := c.claimCreatedFields(ctx, desired, current)
	if err != nil {
		return current, err
	}
	if err := c.checkMayWrite(); err != nil {
		return current, err
	}
	applied, err := c.kubeclientset.AppsV1().Deployments(robot.Namespace).Apply(ctx, desired,
		metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if apierrors.IsInvalid(err) && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		// Refused: either by what another writer set next to the
		// operator's fields, which may pass, or by what the spec asks for
		// (a Robot stored before a validation rule existed), which cannot.
		if conflict := c.foreignFieldConflict(ctx, robot.Namespace, *desired.Name, err); conflict != nil {
			return current, conflict
		}
	}
	if err != nil {
		return current, writeError("applying", robot.Namespace, *desired.Name, err)
	}

	c.writtenDeployments.remember(applied)
	// What the operator just applied holds its spec: nothing to compare
	// until the Deployment's spec or the Robot's changes.
	c.specsChecked.Store(applied.UID, specCheck{applied.Generation, desired.Annotations[annotationSpecHash]})
	klog.FromContext(ctx).V(2).Info("Updated Deployment", "deployment", klog.KObj(applied), "reason", drift)
	c.recorder.Eventf(robot, corev1.EventTypeNormal, EventDeploymentUpdated, "Updated Deployment %q: %s", applied.Name, drift)
	return applied, nil
}

// writeError says what the failure of a create or an apply of Deployment
// namespace/name means for the sync.
func writeError(verb, namespace, name string, err error) error {
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The namespace is going away, and the Robot with it.
		return errNamespaceTerminating
	case apierrors.IsInvalid(err):
		// The API server refused what the spec asks for: a Robot stored
		// before a validation rule existed, say. Retrying cannot help.
		return &invalidSpecError{err}
	}
	return fmt.Errorf("%s Deployment %s/%s: %w", verb, namespace, name, err)
}

// specCheck is a Deployment's generation and the spec hash of what the Robot
// asked for, when the two specs last matched.
type specCheck struct {
	generation int64
	specHash   string
}

// deploymentDrift is deploymentDrift, with the comparison of specs skipped
// when neither spec changed since they last matched: any change to a
// Deployment's spec raises its generation, and any change to the Robot's its
// spec hash. Most syncs come from Deployment status updates, which change
// neither.
func (c *Controller) deploymentDrift(desired *appsv1ac.DeploymentApplyConfiguration, current *appsv1.Deployment) string {
	checked := specCheck{current.Generation, desired.Annotations[annotationSpecHash]}
	last, ok := c.specsChecked.Load(current.UID)
	drift := driftSkippingSpecs(desired, current, ok && last.(specCheck) == checked)
	if drift == "" {
		c.specsChecked.Store(current.UID, checked)
	}
	return drift
}

// foreignFieldConflict returns a *fieldConflictError when the API server
// refused an apply (invalid) over a field of the Deployment that another
// writer owns, per its managedFields; nil when no other writer's field is
// involved, or the Deployment cannot be read.
func (c *Controller) foreignFieldConflict(ctx context.Context, namespace, name string, invalid error) error {
	var status apierrors.APIStatus
	if !errors.As(invalid, &status) || status.Status().Details == nil {
		return nil
	}
	live, err := c.kubeclientset.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == "" {
			continue
		}
		if field, manager := foreignOwner(live.ManagedFields, cause.Field); manager != "" {
			return &fieldConflictError{deployment: name, field: field, manager: manager, err: invalid}
		}
	}
	return nil
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
	return c.writtenDeployments.freshest(deployment), nil
}

// getDeployment reads the Deployment named name from the API server.
func (c *Controller) getDeployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	deployment, err := c.kubeclientset.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		// NotFound too: deleted since the create found it; the retry
		// creates it.
		return nil, fmt.Errorf("getting Deployment %s/%s: %w", namespace, name, err)
	}
	return deployment, nil
}

// updateStatus writes robot's status when what it should say differs from
// what it says, and records a Warning event when the Robot newly needs a
// person's attention.
func (c *Controller) updateStatus(ctx context.Context, robot *robotv1alpha1.Robot, deployment *appsv1.Deployment, service *corev1.Service, syncErr error) error {
	now := c.clock.Now()
	status, recheck := diagnosedStatus(robot, deployment, service, c.robotPods(ctx, robot), syncErr, metav1.NewTime(now))
	if recheck > 0 {
		// A pod not ready yet may become a cause with no event to say so.
		c.workqueue.AddAfter(cache.MetaObjectToName(robot), recheck)
	}
	if apiequality.Semantic.DeepEqual(status, robot.Status) {
		c.observeReadiness(robot, &status, now)
		return nil
	}
	if err := c.checkMayWrite(); err != nil {
		return err
	}
	written, err := c.robotclientset.RobotV1alpha1().Robots(robot.Namespace).ApplyStatus(ctx,
		statusApplyConfiguration(robot, &status), metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		// Deleted meanwhile: nothing left to report on.
		return nil
	}
	if err != nil {
		return fmt.Errorf("applying status of Robot %s/%s: %w", robot.Namespace, robot.Name, err)
	}
	c.writtenRobots.remember(written)

	c.observeReadiness(robot, &status, now)

	logger := klog.FromContext(ctx)
	before := meta.FindStatusCondition(robot.Status.Conditions, robotv1alpha1.ConditionReady)
	after := meta.FindStatusCondition(status.Conditions, robotv1alpha1.ConditionReady)
	logger.V(2).Info("Updated Robot status", "ready", after.Status, "reason", after.Reason)
	if before == nil || before.Status != after.Status || before.Reason != after.Reason {
		logger.Info("Robot readiness changed", "ready", after.Status, "reason", after.Reason, "message", after.Message)
	}
	if warning := newWarning(robot.Status, status); warning != nil {
		c.recorder.Event(robot, corev1.EventTypeWarning, warning.Reason, warning.Message)
	}
	return nil
}

// observeReadiness records how long robot's generation took to become
// Ready, when status, now stored, says it is.
func (c *Controller) observeReadiness(robot *robotv1alpha1.Robot, status *robotv1alpha1.RobotStatus, now time.Time) {
	if !readyFor(*status, robot.Generation) {
		return
	}
	if took, ok := c.readiness.ready(robot.UID, robot.Generation, now); ok {
		c.metrics.timeToReady.Observe(took.Seconds())
	}
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
	// it carries a spec change that landed before the write: then its
	// generation is not the one the written status reports.
	if robot, ok := new.(*robotv1alpha1.Robot); ok && robot.Generation == robot.Status.ObservedGeneration && c.writtenRobots.isOwnWrite(robot) {
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
	if robot, ok := obj.(*robotv1alpha1.Robot); ok {
		c.readiness.forget(robot.UID)
		c.writtenRobots.forget(robot.UID)
	}
}

// addDeployment queues the Robot of a Deployment the informer has just seen.
func (c *Controller) addDeployment(obj interface{}) {
	if deployment, ok := obj.(*appsv1.Deployment); ok && c.writtenDeployments.isOwnWrite(deployment) {
		// The Deployment this process just created: the sync that created
		// it has already reported it.
		return
	}
	c.handleObject(obj)
}

// updateDeployment queues the Robot of a changed Deployment.
func (c *Controller) updateDeployment(old, new interface{}) {
	deployment := new.(*appsv1.Deployment)
	if old.(*appsv1.Deployment).ResourceVersion == deployment.ResourceVersion || c.writtenDeployments.isOwnWrite(deployment) {
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
		c.writtenDeployments.forget(deployment.UID)
		c.specsChecked.Delete(deployment.UID)
		c.fights.forget(deployment.UID)
	}
	// By name, whatever the owner's UID: the deletion of an earlier Robot's
	// Deployment frees the name for the Robot that has it now.
	if robot, _ := c.owningRobot(obj); robot != nil {
		c.enqueueRobot(robot)
	}
}

// handleRobot notes when a Robot's generation was first seen, and queues it.
func (c *Controller) handleRobot(obj interface{}) {
	if robot, ok := obj.(*robotv1alpha1.Robot); ok {
		c.readiness.seen(robot, c.clock.Now())
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
func (c *Controller) owningRobot(obj interface{}) (*robotv1alpha1.Robot, *metav1.OwnerReference) {
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
	return err == nil && gv.Group == robotv1alpha1.SchemeGroupVersion.Group
}
