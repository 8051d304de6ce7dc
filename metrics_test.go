package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

func TestReadinessTracker(t *testing.T) {
	tracker := newReadinessTracker()
	robot := newRobot("test", 1)
	robot.Generation = 2
	tracker.seen(robot, fixtureNow)
	tracker.seen(robot, fixtureNow.Add(time.Second)) // same generation: keeps the first time

	// The watch event of the status write that made the Robot Ready may
	// come before the write returns: it must not clear the record.
	ready := robot.DeepCopy()
	ready.Status = robotv1alpha1.RobotStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{
		{Type: robotv1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 2},
	}}
	tracker.seen(ready, fixtureNow.Add(2*time.Second))

	if took, ok := tracker.ready(robot.UID, 2, fixtureNow.Add(5*time.Second)); !ok || took != 5*time.Second {
		t.Errorf("ready() = %v, %v; want 5s, true", took, ok)
	}
	if _, ok := tracker.ready(robot.UID, 2, fixtureNow.Add(6*time.Second)); ok {
		t.Error("the same generation was observed twice")
	}

	// A Robot already Ready when first seen (an operator restart) is not
	// waited for.
	tracker.seen(ready, fixtureNow)
	if _, ok := tracker.ready(robot.UID, 2, fixtureNow); ok {
		t.Error("a Robot that was already Ready was timed")
	}

	tracker.seen(robot, fixtureNow)
	tracker.forget(robot.UID)
	if _, ok := tracker.ready(robot.UID, 2, fixtureNow); ok {
		t.Error("a deleted Robot was still waited for")
	}
}

func TestHealthHandler(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	c := f.newController(ctx)
	clock := clocktesting.NewFakeClock(fixtureNow)
	c.clock = clock
	synced := false
	c.robotsSynced = func() bool { return synced }
	handler := healthHandler(c)
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}

	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the caches synced: %d, want 503", code)
	}
	synced = true
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after the caches synced: %d, want 200", code)
	}

	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with no sync running: %d, want 200", code)
	}
	key := cache.ObjectName{Namespace: "default", Name: "slow"}
	c.inflight.Store(key, clock.Now())
	clock.Step(time.Minute)
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with a sync running for a minute: %d, want 200", code)
	}
	clock.Step(stuckSyncThreshold(c.syncTimeout))
	if code, body := get("/healthz"); code != http.StatusInternalServerError || !strings.Contains(body, "default/slow") {
		t.Errorf("/healthz with a stuck sync: %d %q, want 500 naming the Robot", code, body)
	}
}
