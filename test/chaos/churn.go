package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	"github.com/robot-operator/robot-operator/test/internal/task"
)

const (
	// trackedSlack is how many entries each of the operator's per-object
	// maps may hold beyond the Robots that exist: a write whose echo has
	// not arrived yet, a sync in flight.
	trackedSlack = 10
	// heapSlack is how much the operator's live heap may grow over the
	// churn, with as many Robots at its end as at its start, and after
	// most are deleted. client-go's
	// Event correlator keeps recent Events in three LRU caches (512
	// objects each, events.go), which fill over the churn however few
	// Robots exist; one Robot object
	// kept per Robot ever created would exceed it after a few thousand.
	heapSlack = 8 << 20
	// keepShare is the share of the Robots left once the churn ends.
	keepShare = 10
)

// churnRobots (scenario 8) creates the N Robots, then for -churn creates a
// new Robot, deletes one and changes one every 1/-churn-rate seconds, so
// that thousands pass through while about N exist; then it deletes all but
// a tenth. The operator's per-object maps must then hold about as many
// entries as there are Robots, and its live heap must not have grown with
// the Robots that came and went.
func churnRobots(ctx context.Context, s *scenarioRun) error {
	n := s.w.n
	if err := s.startOperator(ctx); err != nil {
		return err
	}
	if err := s.w.create(ctx); err != nil {
		return err
	}
	if _, err := waitConverged(ctx, s.c, n, 10*time.Minute); err != nil {
		return fmt.Errorf("before the churn: %w", err)
	}
	heapStart, err := s.op.liveHeap()
	if err != nil {
		return err
	}
	robots := s.c.Robots.RobotV1beta1().Robots(namespace)
	alive := make([]string, 0, n)
	for i := range n {
		alive = append(alive, robotName(i))
	}
	next := n
	remove := func(ctx context.Context, name string) error {
		robot, err := robots.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := robots.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &robot.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		s.w.mu.Lock()
		s.deleted[name] = true
		s.deletedGenerations += robot.Generation
		s.w.mu.Unlock()
		return nil
	}

	cfg := s.env.cfg
	logf("churning for %s: %.1f Robots created and as many deleted per second, with about %d existing", cfg.churn, cfg.churnRate, n)
	s.faultStart = time.Now()
	tick := time.NewTicker(time.Duration(float64(time.Second) / cfg.churnRate))
	defer tick.Stop()
	progress := time.NewTicker(time.Minute)
	defer progress.Stop()
	// Each tick's create, delete and change run on their own, up to 16
	// ticks at a time, so that the rate holds on a slow API server. A Robot
	// still being created is neither deleted nor changed.
	var mu sync.Mutex
	creating := map[string]bool{}
	pick := func() string {
		for {
			if name := alive[s.rng.Intn(len(alive))]; !creating[name] {
				return name
			}
		}
	}
	inFlight := make(chan struct{}, 16)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	var created, changes atomic.Int64
	churnCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	for time.Since(s.faultStart) < cfg.churn {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errc:
			cancel()
			wg.Wait()
			return err
		case <-progress.C:
			sizes, _ := s.op.tracked()
			heap, _ := s.op.liveHeap()
			s.w.mu.Lock()
			deleted := len(s.deleted)
			s.w.mu.Unlock()
			logf("churn: %d Robots created, %d deleted, %d exist; operator maps %s; live heap %.1f MiB",
				created.Load(), deleted, len(alive), formatSizes(sizes), float64(heap)/(1<<20))
			continue
		case <-tick.C:
		}
		select {
		case inFlight <- struct{}{}:
		default:
			continue // the API server is behind: skip this tick
		}
		name := robotName(next)
		next++
		mu.Lock()
		gone, changed := pick(), pick()
		for gone == changed && len(alive) > 1 {
			changed = pick()
		}
		for i := range alive {
			if alive[i] == gone {
				alive[i] = name
			}
		}
		creating[name] = true
		mu.Unlock()
		replicas := int32(1 + next%3)
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, 1+s.rng.Intn(3))
		if s.rng.Intn(2) == 0 {
			patch = fmt.Sprintf(`{"spec":{"image":%q}}`, []string{imageV1, imageV2}[s.rng.Intn(2)])
		}
		wg.Go(func() {
			defer func() { <-inFlight }()
			fail := func(err error) {
				select {
				case errc <- err:
				default:
				}
			}
			if _, err := robots.Create(churnCtx, &robotv1beta1.Robot{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
				Spec:       robotv1beta1.RobotSpec{Image: imageV1, Replicas: ptr.To(replicas)},
			}, metav1.CreateOptions{}); err != nil {
				fail(fmt.Errorf("creating %s: %w", name, err))
				return
			}
			created.Add(1)
			mu.Lock()
			delete(creating, name)
			mu.Unlock()
			if err := remove(churnCtx, gone); err != nil {
				fail(fmt.Errorf("deleting %s: %w", gone, err))
				return
			}
			// A Robot deleted by a later tick meanwhile is not changed.
			if _, err := robots.Patch(churnCtx, changed, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				fail(fmt.Errorf("changing %s: %w", changed, err))
				return
			}
			changes.Add(1)
		})
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	s.faultEnd = time.Now()
	minutes := s.faultEnd.Sub(s.faultStart).Minutes()
	logf("churn over: %d Robots created, %d deleted, %d changes in %.1f min", created.Load(), len(s.deleted), changes.Load(), minutes)
	// Let the last changes settle, so that the heap is measured with N
	// converged Robots, as at the start.
	if _, err := waitConverged(ctx, s.c, n, 10*time.Minute); err != nil {
		return fmt.Errorf("after the churn: %w", err)
	}
	heapChurned, err := s.op.liveHeap()
	if err != nil {
		return err
	}
	sizesChurned, err := s.op.tracked()
	if err != nil {
		return err
	}

	keep := max(n/keepShare, 1)
	sort.Strings(alive)
	doomed := alive[keep:]
	if err := task.Parallel(ctx, len(doomed), 8, func(ctx context.Context, i int) error {
		return remove(ctx, doomed[i])
	}); err != nil {
		return err
	}
	s.want = keep
	logf("deleted %d Robots, %d left; waiting for the garbage collector to delete their Deployments", len(doomed), keep)
	if err := task.WaitFor(ctx, 10*time.Minute, time.Second, "the deleted Robots' Deployments to go", func() (bool, error) {
		deployments, err := s.c.Kube.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		return err == nil && len(deployments.Items) == keep, nil
	}); err != nil {
		return err
	}
	everCreated := n + int(created.Load())
	s.notes = append(s.notes, fmt.Sprintf("%d Robots created in all, %d at once; %.1f created and deleted per second over %.1f min; %d left",
		everCreated, n, float64(created.Load())/(minutes*60), minutes, keep))

	s.finish = func(ctx context.Context, audit []auditEvent, convergedAt, idleEnd time.Time) error {
		sizes, err := s.op.tracked()
		if err != nil {
			return err
		}
		heapEnd, err := s.op.liveHeap()
		if err != nil {
			return err
		}
		var over []string
		for name, size := range sizes {
			if size > keep+trackedSlack {
				over = append(over, fmt.Sprintf("%s %d", name, size))
			}
		}
		sort.Strings(over)
		s.checks = append(s.checks, checkf("maps bounded", len(over) == 0,
			"with %d Robots left of %d ever created, the operator's maps hold %s (bound %d each)%s; with %d after the churn: %s",
			keep, everCreated, formatSizes(sizes), keep+trackedSlack, overList(over), n, formatSizes(sizesChurned)))
		mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
		s.checks = append(s.checks, checkf("heap bounded", heapChurned <= heapStart+heapSlack && heapEnd <= heapStart+heapSlack,
			"live heap after a forced GC: %.1f MiB with %d Robots before the churn; %.1f MiB with %d after it and %.1f MiB with %d left (bound %.1f MiB)",
			mib(heapStart), n, mib(heapChurned), n, mib(heapEnd), keep, mib(heapStart+heapSlack)))
		s.notes = append(s.notes, fmt.Sprintf("maps with %d left: %s", keep, formatSizes(sizes)),
			fmt.Sprintf("live heap %.1f → %.1f → %.1f MiB", mib(heapStart), mib(heapChurned), mib(heapEnd)))
		return nil
	}
	return nil
}

func overList(over []string) string {
	if len(over) == 0 {
		return ""
	}
	return "; over: " + strings.Join(over, ", ")
}
