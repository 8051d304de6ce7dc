package main

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	"github.com/robot-operator/robot-operator/test/internal/task"
)

const (
	namespace = "chaos"
	imageV1   = "registry.example/robot:1.0"
	imageV2   = "registry.example/robot:2.0"
)

func robotName(i int) string { return fmt.Sprintf("robot-%04d", i) }

// workload creates the Robots and changes their specs while a fault
// happens, with a mix of one to three replicas.
type workload struct {
	c   *cluster
	n   int
	rng *rand.Rand
	mu  sync.Mutex // guards rng and changes
	// changes counts the spec changes made, each a new generation.
	changes int
	// created counts the Robots created so far; skip is how many of the
	// first Robots are left unchanged (scenario 7 fights over them).
	created atomic.Int64
	skip    int
}

func newWorkload(c *cluster, n int, seed int64) *workload {
	return &workload{c: c, n: n, rng: rand.New(rand.NewSource(seed))}
}

func (w *workload) intn(n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rng.Intn(n)
}

func (w *workload) createNamespace(ctx context.Context) error {
	_, err := w.c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	return err
}

// createSpread is how long the creates of the N Robots are spread over, so
// that the fault happens in the middle of the burst whatever N is.
const createSpread = 30 * time.Second

// create creates the N Robots, 8 at a time, spread over createSpread. It
// retries each until it exists: the API server may be down for a while.
func (w *workload) create(ctx context.Context) error {
	pace := time.NewTicker(createSpread / time.Duration(w.n))
	defer pace.Stop()
	return task.Parallel(ctx, w.n, 8, func(ctx context.Context, i int) error {
		select {
		case <-pace.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		robot := &robotv1beta1.Robot{
			ObjectMeta: metav1.ObjectMeta{Name: robotName(i), Namespace: namespace},
			Spec:       robotv1beta1.RobotSpec{Image: imageV1, Replicas: ptr.To(int32(1 + i%3))},
		}
		for {
			_, err := w.c.Robots.RobotV1beta1().Robots(namespace).Create(ctx, robot, metav1.CreateOptions{})
			// A create whose answer was lost may have happened.
			if err == nil || apierrors.IsAlreadyExists(err) {
				w.created.Add(1)
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
	})
}

// change changes the spec of a random Robot among those created: its
// replicas (1-3) or its image. A Robot not created yet (creates finish out
// of order) is left alone.
func (w *workload) change(ctx context.Context) error {
	among := int(w.created.Load()) - 8 - w.skip
	if among < 1 {
		return nil
	}
	i := w.skip + w.intn(among)
	var patch string
	if w.intn(2) == 0 {
		patch = fmt.Sprintf(`{"spec":{"replicas":%d}}`, 1+w.intn(3))
	} else {
		patch = fmt.Sprintf(`{"spec":{"image":%q}}`, []string{imageV1, imageV2}[w.intn(2)])
	}
	_, err := w.c.Robots.RobotV1beta1().Robots(namespace).Patch(ctx, robotName(i), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		w.mu.Lock()
		w.changes++
		w.mu.Unlock()
	}
	return err
}

// churn creates the Robots and, meanwhile and until stop is closed,
// changes the specs of those already created, one change every interval.
// It returns when the Robots are created and stop is closed.
func (w *workload) churn(ctx context.Context, interval time.Duration, stop <-chan struct{}) error {
	created := make(chan error, 1)
	go func() { created <- w.create(ctx) }()
	done := false
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case err := <-created:
			done = true
			created = nil
			if err != nil {
				return err
			}
		case <-stop:
			if !done {
				if err := <-created; err != nil {
					return err
				}
			}
			return nil
		case <-tick.C:
			// The API server may be down: a change that fails is not made,
			// and not counted.
			_ = w.change(ctx)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// uidWatch records the first UID each Deployment of the namespace had, and
// every later one: a Deployment whose name comes back with another UID was
// deleted and recreated.
type uidWatch struct {
	mu    sync.Mutex
	first map[string]types.UID
	// recreated lists, per name, the UIDs seen after the first.
	recreated map[string][]types.UID
	deleted   map[string]int
}

func watchUIDs(ctx context.Context, c *cluster) (*uidWatch, error) {
	u := &uidWatch{first: map[string]types.UID{}, recreated: map[string][]types.UID{}, deleted: map[string]int{}}
	factory := kubeinformers.NewSharedInformerFactoryWithOptions(c.Kube, 0, kubeinformers.WithNamespace(namespace))
	informer := factory.Apps().V1().Deployments().Informer()
	seen := func(obj any) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			return
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		first, ok := u.first[d.Name]
		if !ok {
			u.first[d.Name] = d.UID
			return
		}
		if first != d.UID {
			for _, uid := range u.recreated[d.Name] {
				if uid == d.UID {
					return
				}
			}
			u.recreated[d.Name] = append(u.recreated[d.Name], d.UID)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if d, ok := obj.(*appsv1.Deployment); ok {
				u.mu.Lock()
				u.deleted[d.Name]++
				u.mu.Unlock()
			}
		},
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return u, nil
}

// converged reports whether the Robot's status says, about its current
// generation, that every replica it asks for runs its current spec and is
// available, and whether its Deployment carries that spec.
func converged(robot *robotv1beta1.Robot, deployment *appsv1.Deployment) bool {
	c := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionReady)
	want := ptr.Deref(robot.Spec.Replicas, 1)
	s := robot.Status
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != robot.Generation || s.ObservedGeneration != robot.Generation ||
		s.Replicas != want || s.UpdatedReplicas != want || s.ReadyReplicas != want || s.AvailableReplicas != want {
		return false
	}
	// A fight over the Deployment ends a while after the other writer
	// stops (Synced=False, DeploymentContested, until then).
	synced := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced)
	if synced == nil || synced.Status != metav1.ConditionTrue {
		return false
	}
	// The Deployment controller reports the end of a rollout a little
	// after the pods are available; until the Robot mirrors that, the
	// operator has a status write left to make.
	available := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionAvailable)
	progressing := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionProgressing)
	if available == nil || available.Status != metav1.ConditionTrue || progressing == nil || progressing.Reason != "NewReplicaSetAvailable" {
		return false
	}
	if deployment == nil || ptr.Deref(deployment.Spec.Replicas, 1) != want {
		return false
	}
	for _, container := range deployment.Spec.Template.Spec.Containers {
		if container.Image == robot.Spec.Image {
			return true
		}
	}
	return false
}

// notConverged lists the Robots of the namespace that have not converged,
// with why, up to a few.
func notConverged(ctx context.Context, c *cluster) (int, []string, error) {
	robots, err := c.Robots.RobotV1beta1().Robots(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, nil, err
	}
	deployments, err := c.Kube.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, nil, err
	}
	byName := map[string]*appsv1.Deployment{}
	for i := range deployments.Items {
		byName[deployments.Items[i].Name] = &deployments.Items[i]
	}
	count := 0
	var examples []string
	for i := range robots.Items {
		robot := &robots.Items[i]
		if converged(robot, byName[robot.Name]) {
			continue
		}
		count++
		if len(examples) < 3 {
			ready := "no Ready condition"
			if c := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionReady); c != nil {
				ready = fmt.Sprintf("Ready=%s %s (generation %d)", c.Status, c.Reason, c.ObservedGeneration)
			}
			examples = append(examples, fmt.Sprintf("%s: generation %d, observed %d, %s", robot.Name, robot.Generation, robot.Status.ObservedGeneration, ready))
		}
	}
	return count, examples, nil
}

// waitConverged waits until all N Robots exist and have converged, and
// returns when that was first seen.
func waitConverged(ctx context.Context, c *cluster, n int, timeout time.Duration) (time.Time, error) {
	var last []string
	var missing int
	err := task.WaitFor(ctx, timeout, time.Second, "every Robot to converge", func() (bool, error) {
		count, examples, err := notConverged(ctx, c)
		if err != nil {
			return false, nil // the API server may be coming back
		}
		robots, err := c.Robots.RobotV1beta1().Robots(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		missing = n - len(robots.Items)
		last = examples
		return count == 0 && missing == 0, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %d Robots missing; not converged, e.g. %v", err, missing, last)
	}
	return time.Now(), nil
}
