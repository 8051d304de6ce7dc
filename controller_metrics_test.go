package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/metrics"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/serving"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestHealthHandler(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	c := f.newController(ctx)
	clock := clocktesting.NewFakeClock(robottest.FixtureNow)
	c.clock = clock
	synced := false
	c.robotsSynced = func() bool { return synced }
	handler := serving.HealthHandler(c, c.syncTimeout)
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
	clock.Step(serving.StuckSyncThreshold(c.syncTimeout))
	if code, body := get("/healthz"); code != http.StatusInternalServerError || !strings.Contains(body, "default/slow") {
		t.Errorf("/healthz with a stuck sync: %d %q, want 500 naming the Robot", code, body)
	}
}

// TestTrackedObjects: the gauge reports each per-object map's size, and a
// deleted Robot, with its Deployment and Service, leaves nothing in any.
func TestTrackedObjects(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	c := f.newController(ctx)
	registry := prometheus.NewRegistry()
	if err := c.RegisterMetrics(registry); err != nil {
		t.Fatal(err)
	}
	want := func(sizes map[string]int) {
		t.Helper()
		var b strings.Builder
		b.WriteString("# HELP robot_operator_tracked_objects " + metrics.TrackedHelp + "\n# TYPE robot_operator_tracked_objects gauge\n")
		for _, name := range []string{"fights", "inflight", "readiness", "specs_checked", "written_deployments", "written_robots", "written_services"} {
			fmt.Fprintf(&b, "robot_operator_tracked_objects{map=%q} %d\n", name, sizes[name])
		}
		if err := testutil.GatherAndCompare(registry, strings.NewReader(b.String()), "robot_operator_tracked_objects"); err != nil {
			t.Error(err)
		}
	}
	want(nil)

	robot := robottest.NewRobot("tracked", 1)
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "tracked", Namespace: robot.Namespace, UID: "tracked-deployment", ResourceVersion: "11"}}
	service := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "tracked", Namespace: robot.Namespace, UID: "tracked-service", ResourceVersion: "12"}}
	c.readiness.Seen(robot, robottest.FixtureNow)
	c.writtenRobots.Remember(robot)
	c.writtenDeployments.Remember(deployment)
	c.writtenServices.Remember(service)
	c.specsChecked.Record(deployment.UID, 1, "hash")
	c.fights.Reverted(deployment.UID, robottest.FixtureNow, "replicas", "other")
	c.inflight.Store(cache.ObjectName{Namespace: robot.Namespace, Name: robot.Name}, robottest.FixtureNow)
	want(map[string]int{"fights": 1, "inflight": 1, "readiness": 1, "specs_checked": 1, "written_deployments": 1, "written_robots": 1, "written_services": 1})

	c.inflight.Delete(cache.ObjectName{Namespace: robot.Namespace, Name: robot.Name})
	c.deleteRobot(robot)
	c.deleteDeployment(cache.DeletedFinalStateUnknown{Key: "default/tracked", Obj: deployment})
	c.deleteService(service)
	want(nil)
}
