package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robot-operator/robot-operator/internal/app"
	"github.com/robot-operator/robot-operator/internal/events"
	"github.com/robot-operator/robot-operator/internal/fleet"
	"github.com/robot-operator/robot-operator/internal/lanes"
	"github.com/robot-operator/robot-operator/internal/metrics"
	"github.com/robot-operator/robot-operator/internal/outage"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/owned"
	"github.com/robot-operator/robot-operator/internal/podcache"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/preflight"
	"github.com/robot-operator/robot-operator/internal/status"
	"github.com/robot-operator/robot-operator/internal/transform"
	"github.com/robot-operator/robot-operator/internal/worker"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	robotscheme "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/scheme"
	listers "github.com/robot-operator/robot-operator/pkg/generated/listers/robot/v1beta1"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	appslisters "k8s.io/client-go/listers/apps/v1"
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
	// Wiring is what app.Run built: the clients (KubeClient, RobotClient),
	// the Robot informer, the sources of the kinds a Robot owns (Owned;
	// its Policy and NewerFields are taken from those here), the pod and
	// ReplicaSet informers, when set (both or neither: without them the
	// Ready condition says only what the Deployment says), the write fence
	// (MayWrite, when set), the outage gate (Outage, when set: a sync that
	// fails while it says the API server is down is not backed off) and
	// NewerFields (when set: nothing is written to what Robots holding
	// fields this release does not know own; the Controller counts them
	// and forgets them with their Robots).
	app.Wiring
	// SyncTimeout bounds one sync, all its API requests included: the
	// sync's context ends then, and so does whatever request is in flight.
	// Zero means defaultSyncTimeout.
	SyncTimeout time.Duration
	// ShutdownTimeout bounds how long Run lets in-flight syncs finish once
	// its context is done; zero cancels them at once.
	ShutdownTimeout time.Duration
	// Recorder, when set, records the Controller's Events instead of its
	// own recorder, which writes them through KubeClient.
	Recorder record.EventRecorder
	// Clock, when set, replaces the real clock.
	Clock clock.PassiveClock
	// Policy is what the administrator allows Robots to ask for; the zero
	// Policy allows all the CRD admits.
	Policy policy.Policy
}

// Controller keeps each Robot's Deployment as the Robot asks and reports the
// Deployment's state in the Robot's status.
type Controller struct {
	deploymentsLister appslisters.DeploymentLister
	// ownedSynced is owned.HasSynced: the caches of every kind a Robot
	// owns.
	ownedSynced  cache.InformerSynced
	robotsLister listers.RobotLister
	robotsSynced cache.InformerSynced
	// pods is nil without Options.PodInformer; then the Ready condition
	// does not say why the pods do not run.
	pods              *podcache.Cache
	podsSynced        cache.InformerSynced
	replicaSetsSynced cache.InformerSynced

	// workqueue holds the Robots to sync. A Robot is in it at most once,
	// and never synced by two workers at the same time. It is lanes, whose
	// reports are taken ahead of the changes.
	workqueue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	lanes     *lanes.Queue[cache.ObjectName]
	// writer makes every write, behind the write fence; owned keeps the
	// objects each Robot owns, through it.
	writer *writer.Writer
	owned  *owned.Paths
	events *events.Events
	clock  clock.PassiveClock

	metrics   *metrics.ControllerMetrics
	readiness *metrics.GenerationTracker
	synced    *metrics.GenerationTracker
	// statusRefused holds, per Robot, the generation whose status the API
	// server could not store because the Robot is too large: the status is
	// not written again for that generation.
	statusRefused owned.Refusals
	// ignoredWarned holds, per Robot, the ignored annotation values it was
	// warned of, so that each is warned of once.
	ignoredWarned events.Once[workload.IgnoredAnnotation]
	// newerFields says which Robots hold fields this release does not
	// know, for the gauge; nil: none do. owned.Paths reads it too, and
	// writes nothing to what they own.
	newerFields *transform.NewerFields
	// fleet is the fleet budget: how many Robots at a time roll a change
	// of their pod template that does not come from their spec. Only the
	// leader's holds slots: it is rebuilt from the caches when it starts.
	fleet *fleet.Budget
	// workers take the Robots from the workqueue and run syncHandler on
	// them; they keep which Robots are being synced, for the health
	// check's watchdog, and set aside (Parked, nil without
	// Options.Outage) the Robots whose syncs failed while the API server
	// was down, to queue again when it answers.
	workers *worker.Pool
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

	queue := lanes.New(queueName, rateLimiter)
	write := writer.New(opts.RobotClient, recorder, mayWrite)
	if opts.Observe != nil {
		// Observe-only: what the syncs would write becomes the report.
		write = writer.NewObserving(opts.RobotClient, opts.Observe)
	}
	controller := &Controller{
		deploymentsLister: opts.Owned.KubeInformers.Apps().V1().Deployments().Lister(),
		robotsLister:      opts.RobotInformer.Lister(),
		robotsSynced:      opts.RobotInformer.Informer().HasSynced,
		podsSynced:        func() bool { return true },
		replicaSetsSynced: func() bool { return true },
		workqueue:         queue,
		lanes:             queue,
		events:            events,
		clock:             cmp.Or[clock.PassiveClock](opts.Clock, clock.RealClock{}),
		metrics:           metrics.NewControllerMetrics(),
		readiness:         metrics.NewReadinessTracker(),
		synced:            metrics.NewSyncedTracker(),
		writer:            write,
		newerFields:       opts.NewerFields,
	}
	controller.workers = worker.New(worker.Options{Queue: queue, Sync: controller.syncHandler,
		SyncTimeout: cmp.Or(opts.SyncTimeout, defaultSyncTimeout), ShutdownTimeout: opts.ShutdownTimeout,
		Clock: controller.clock, Observe: controller.observeSync})
	if opts.Outage != nil {
		// Queued with its back-off forgotten: the outage was not the
		// Robot's failure.
		controller.workers.Parked = outage.NewParked(opts.Outage, func(key cache.ObjectName) {
			controller.workqueue.Forget(key)
			controller.workqueue.Add(key)
		})
	}

	logger.V(4).Info("Setting up event handlers")
	if _, err := opts.RobotInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    controller.handleRobot,
		UpdateFunc: controller.updateRobot,
		DeleteFunc: controller.deleteRobot,
	}); err != nil {
		return nil, fmt.Errorf("adding the Robot event handler: %w", err)
	}
	deps := owned.Deps{Writer: controller.writer, Robots: controller.robotsLister, Clock: controller.clock,
		Enqueue: func(key cache.ObjectName) { controller.workqueue.Add(key) }, Report: controller.enqueueReport}
	sources := opts.Owned
	sources.Policy, sources.NewerFields = opts.Policy, opts.NewerFields
	sources.PreflightCount = func(outcome string) { controller.metrics.Preflight.WithLabelValues(outcome).Inc() }
	for _, outcome := range preflight.Outcomes {
		controller.metrics.Preflight.WithLabelValues(outcome)
	}
	// A Robot given a slot of the fleet budget is queued, to roll its
	// change.
	controller.fleet = fleet.New(opts.Policy.FleetRolloutBudget, func(robot fleet.Robot) {
		controller.workqueue.Add(cache.ObjectName{Namespace: robot.Namespace, Name: robot.Name})
	})
	sources.Fleet = controller.fleet
	var err error
	if controller.owned, err = owned.NewPaths(deps, sources); err != nil {
		return nil, err
	}
	controller.ownedSynced = controller.owned.HasSynced
	pods, err := podcache.Watch(opts.PodInformer, opts.ReplicaSetInformer, podcache.Handlers{
		Pod: podcache.QueueRobot(controller.robotsLister, controller.enqueueReport),
		ReplicaSet: podcache.QueueDeploymentRobot(controller.deploymentsLister,
			func(obj interface{}) { controller.owned.Deployments.EnqueueController(obj) })})
	if err != nil {
		return nil, err
	}
	if pods != nil {
		controller.pods, controller.podsSynced, controller.replicaSetsSynced = pods, opts.PodInformer.HasSynced, opts.ReplicaSetInformer.HasSynced
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
	if ok := cache.WaitForCacheSync(ctx.Done(), c.ownedSynced, c.robotsSynced, c.podsSynced, c.replicaSetsSynced); !ok {
		if ctx.Err() != nil {
			// A signal before the caches synced: nothing was started, so
			// this is a clean stop, not a failure.
			return nil
		}
		return errors.New("failed to wait for caches to sync")
	}

	// The Robots whose Deployments still roll a change the budget let
	// through, under a previous leader, hold their slots first.
	if err := c.owned.RebuildFleet(); err != nil {
		return err
	}
	c.workers.Run(ctx, workers)
	// The Events of the last syncs are written now, while this process
	// still leads.
	c.events.Shutdown(ctx, eventsShutdownTimeout)
	return nil
}

// HasSynced reports whether the informer caches have synced.
func (c *Controller) HasSynced() bool {
	return c.robotsSynced() && c.ownedSynced() && c.podsSynced() && c.replicaSetsSynced()
}

// LongestSync returns the Robot whose sync has been running the longest, and
// for how long; zero when none is running.
func (c *Controller) LongestSync() (cache.ObjectName, time.Duration) {
	return c.workers.LongestSync()
}

// runWorker processes work items until the queue shuts down.
func (c *Controller) runWorker(ctx context.Context) {
	c.workers.RunWorker(ctx)
}

// processNextWorkItem syncs one Robot from the queue, with syncHandler. It
// returns false when the queue has shut down.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	return c.workers.ProcessNextWorkItem(ctx)
}

// observeSync counts a sync by its result, and records how long it took.
func (c *Controller) observeSync(result string, took time.Duration) {
	c.metrics.SyncDuration.Observe(took.Seconds())
	c.metrics.Syncs.WithLabelValues(result).Inc()
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
	robot = c.writer.FreshestRobot(robot)

	// All the sync creates is named in one Event, not one per object. What
	// the Robot owns is written only when owned says it may be: a paused
	// Robot's, or one holding fields this release does not know, is
	// returned as the caches hold it, with the error that says why.
	syncCtx, created := writer.CollectCreated(ctx)
	objects, syncErr := c.owned.Sync(syncCtx, robot)
	c.writer.RecordCreated(robot, created)
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
	if outcome.Classify(syncErr).Retry == outcome.RecheckWhenDue {
		// Waiting for its turn (the check of a new template) is no news:
		// the status is written once the change is, so that a burst of
		// changes adds no status write and holds no worker.
		after := outcome.DueIn(syncErr)
		logger.V(4).Info("Robot waits for its turn; syncing it again then", "after", after)
		return after, nil
	}
	// A value the operator ignores must not go unsaid: the admission
	// policy refuses them, but a Robot may hold one set before it.
	for _, ignored := range c.ignoredWarned.Fresh(robot.UID, workload.IgnoredAnnotations(robot, objects.DisruptionBudget())) {
		logger.Info("Ignoring an annotation's value", "object", ignored.Object, "annotation", ignored.Key, "value", ignored.Value)
		c.writer.Recorder.Event(robot, corev1.EventTypeWarning, robotv1beta1.ReasonAnnotationIgnored, ignored.Message())
	}
	if err := c.updateStatus(ctx, robot, objects, syncErr); err != nil {
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

// updateStatus writes robot's status when what it should say differs from
// what it says, and records a Warning event when the Robot newly needs a
// person's attention.
func (c *Controller) updateStatus(ctx context.Context, robot *robotv1beta1.Robot, objects owned.Objects, syncErr error) error {
	now := c.clock.Now()
	pods := c.pods.RobotPods(ctx, robot.Namespace, robot.Name)
	robotStatus, recheck := status.Diagnosed(robot, objects.Deployment, objects.Service, c.pods.ReplicaSets(ctx, pods), pods, syncErr, metav1.NewTime(now))
	status.WithRoute(robot, &robotStatus, objects.Route(), c.owned.GatewayExists, syncErr, metav1.NewTime(now))
	status.WithDisruptionBudget(robot, &robotStatus, objects.DisruptionBudget(), metav1.NewTime(now))
	status.WithReadyRevision(robot, &robotStatus, objects.Revision(), metav1.NewTime(now))
	c.explainChanges(ctx, robot, &robotStatus, objects, now)
	if recheck > 0 {
		// A pod not ready yet may become a cause with no event to say so.
		c.workqueue.AddAfter(cache.MetaObjectToName(robot), recheck)
	}
	if apiequality.Semantic.DeepEqual(robotStatus, robot.Status) {
		c.observeReadiness(robot, &robotStatus, now)
		return nil
	}
	if wait := status.FirstReportWait(robot, robotStatus, objects.Deployment, now); wait > 0 {
		// A new Robot whose rollout is under way, with nothing wrong: its
		// first status waits a few seconds for Ready, so that one write
		// says both. The Deployment's progress syncs it again before.
		c.workqueue.AddAfter(cache.MetaObjectToName(robot), wait)
		return nil
	}
	if key := cache.MetaObjectToName(robot); c.lanes.Reporting(key) && status.ProgressOnly(robot.Status, robotStatus) {
		// Taken ahead of the changes, this report has only a rollout's
		// progress to say: it waits its turn among the changes, as in one
		// queue, unless a report with more to say (Ready) takes it out.
		c.lanes.Postpone(key)
		return nil
	}
	if err := c.statusRefused.At(robot); err != nil {
		// The Robot is as large as when the API server could not store
		// it: the write would fail again.
		klog.FromContext(ctx).V(4).Info("Not writing the status, which the API server cannot store at this generation", "err", err)
		return nil
	}
	written, err := c.writer.ApplyStatus(ctx, robot, &robotStatus)
	if reason, message, refused := outcome.StatusRefused(err); refused {
		// Retrying cannot help: only a smaller spec, a new generation,
		// can. A person must know, and no condition can tell them.
		c.statusRefused.Record(robot, err)
		klog.FromContext(ctx).Error(err, "Writing the Robot's status failed; not retrying until its spec changes", "reason", reason)
		c.writer.Recorder.Event(robot, corev1.EventTypeWarning, reason, message)
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

// explainChanges makes Ready's message in robotStatus say what changed
// since the Robot's last Ready revision, when it is not Ready after a
// change (status.ChangeToExplain). The last Ready spec is read from the
// API server once per generation; a failed read leaves the message as it
// is, and the next sync reads again.
func (c *Controller) explainChanges(ctx context.Context, robot *robotv1beta1.Robot, robotStatus *robotv1beta1.RobotStatus,
	objects owned.Objects, now time.Time) {
	last := status.ChangeToExplain(robot, robotStatus, objects.Revision())
	if last == nil {
		// A spec read for an earlier generation is not needed again.
		c.owned.ForgetRevisionSpec(robot.UID)
		return
	}
	spec, err := c.owned.RevisionSpec(ctx, robot, last.Name)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Reading the last Ready revision failed; Ready's message does not say what changed since", "revision", last.Name, "err", err)
		return
	}
	if spec != nil {
		status.WithChanges(robot, robotStatus, last, spec, metav1.NewTime(now))
	}
}

// observeReadiness records how long robot's generation took to be Synced
// and to become Ready, when robotStatus, now stored, says it is.
func (c *Controller) observeReadiness(robot *robotv1beta1.Robot, robotStatus *robotv1beta1.RobotStatus, now time.Time) {
	if took, ok := c.synced.Reached(robot, *robotStatus, now); ok {
		c.metrics.TimeToSynced.Observe(took.Seconds())
	}
	if took, ok := c.readiness.Reached(robot, *robotStatus, now); ok {
		c.metrics.TimeToReady.Observe(took.Seconds())
	}
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
		workload.Paused(robot) == status.ReportsPaused(robot.Status) && c.writer.IsOwnStatusWrite(robot) {
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
		c.synced.Forget(robot.UID)
		c.writer.ForgetRobot(robot.UID)
		c.owned.ForgetRobot(robot.UID)
		c.statusRefused.Forget(robot.UID)
		c.ignoredWarned.Forget(robot.UID)
		c.newerFields.Forget(robot.UID)
	}
}

// handleRobot notes when a Robot's generation was first seen, and queues it.
func (c *Controller) handleRobot(obj interface{}) {
	if robot, ok := obj.(*robotv1beta1.Robot); ok {
		now := c.clock.Now()
		c.readiness.Seen(robot, now)
		c.synced.Seen(robot, now)
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

// enqueueReport queues robot, whose Deployment, ReplicaSet or pod changed.
// Once its spec is in place (its status says Synced for its generation, or
// a new Robot's first report waits for its rollout), the sync has only to
// report what the cluster did: it is taken ahead of the changes. So is an event during the Robot's sync, which most often
// comes of what that sync wrote before its status (if the sync fails, the
// report syncs the Robot once more, as any event did). Otherwise the change
// is the sync's work, and waits its turn.
func (c *Controller) enqueueReport(robot *robotv1beta1.Robot) {
	key := cache.MetaObjectToName(robot)
	if robot = c.writer.FreshestRobot(robot); c.workers.Syncing(key) || status.SyncedFor(robot.Status, robot.Generation) || status.NeverReported(robot.Status) {
		c.lanes.AddReport(key)
		return
	}
	c.workqueue.Add(key)
}

// RegisterMetrics registers the controller's metrics, and a gauge of the
// Robots by their Ready condition computed from the cache at each scrape.
func (c *Controller) RegisterMetrics(registry prometheus.Registerer) error {
	for _, collector := range []prometheus.Collector{
		c.metrics.Syncs, c.metrics.SyncDuration, c.metrics.TimeToSynced, c.metrics.TimeToReady, c.metrics.Leader, c.metrics.Preflight,
		&metrics.RobotsCollector{Lister: c.robotsLister},
		&metrics.TrackedCollector{Sizes: c.trackedObjects},
		metrics.NewNewerFieldsGauge(c.newerFields.Len),
		metrics.NewFleetCollector(c.fleet.Counts),
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
	sizes := map[string]int{
		"readiness":      c.readiness.Len(),
		"synced":         c.synced.Len(),
		"written_robots": c.writer.RememberedStatuses(),
		"inflight":       c.workers.InFlight(),
		"parked":         c.workers.Parked.Len(),
	}
	c.owned.Tracked(sizes)
	return sizes
}
