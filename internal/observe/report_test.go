package observe

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// TestReport: the last sync of each Robot decides what it would change;
// a Robot forgotten, or whose sync would change nothing, is out of the
// totals of those that change, and the gauges and the page agree.
func TestReport(t *testing.T) {
	r := NewReport(klog.Background())
	roll := Change{Kind: "Deployment", Name: "web", Action: Update, Diff: "image differs", PodTemplate: "image differs"}
	scale := Change{Kind: "Deployment", Name: "api", Action: Update, Diff: "spec.replicas is 1; the Robot asks for 2"}
	service := Change{Kind: "Service", Name: "api", Action: Create}
	r.Record("web", cache.ObjectName{Namespace: "a", Name: "web"}, []Change{roll})
	r.Record("api", cache.ObjectName{Namespace: "a", Name: "api"}, []Change{scale, service})
	r.Record("same", cache.ObjectName{Namespace: "a", Name: "same"}, nil)
	r.Record("gone", cache.ObjectName{Namespace: "b", Name: "gone"}, []Change{roll})
	r.Forget(types.UID("gone"))
	r.Record("fixed", cache.ObjectName{Namespace: "b", Name: "fixed"}, []Change{roll})
	r.Record("fixed", cache.ObjectName{Namespace: "b", Name: "fixed"}, nil)

	s := r.Summary()
	if s.Checked != 4 || s.Changing != 2 || s.Rolling != 1 {
		t.Errorf("summary: %d checked, %d changing, %d rolling; want 4, 2, 1", s.Checked, s.Changing, s.Rolling)
	}
	if len(s.Robots) != 2 || s.Robots[0].Robot.Name != "api" || s.Robots[1].Robot.Name != "web" || !s.Robots[1].RollsPods || s.Robots[0].RollsPods {
		t.Errorf("Robots that would change: %+v; want a/api (pods stay), a/web (rolls)", s.Robots)
	}

	want := `
# HELP robot_operator_observe_robots Observe-only: the Robots synced (state=checked), those that this release would change (would_change), and those whose pods it would roll (would_roll_pods).
# TYPE robot_operator_observe_robots gauge
robot_operator_observe_robots{state="checked"} 4
robot_operator_observe_robots{state="would_change"} 2
robot_operator_observe_robots{state="would_roll_pods"} 1
# HELP robot_operator_observe_object_changes Observe-only: the writes this release would make of the objects Robots own, by kind and action (create, update, delete).
# TYPE robot_operator_observe_object_changes gauge
robot_operator_observe_object_changes{action="create",kind="Service"} 1
robot_operator_observe_object_changes{action="update",kind="Deployment"} 2
`
	if err := testutil.CollectAndCompare(r, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	registry := prometheus.NewRegistry()
	if err := registry.Register(r); err != nil {
		t.Fatal(err)
	}

	recorder := httptest.NewRecorder()
	r.ServeHTTP(recorder, httptest.NewRequest(http.MethodGet, "/observe", nil))
	page := recorder.Body.String()
	for _, line := range []string{
		"observe-only: 4 Robots checked, 2 would change, 1 would roll their pods",
		"  Deployment update: 2",
		"a/api (pods stay)\n  update Deployment api: spec.replicas is 1; the Robot asks for 2\n  create Service api\n",
		"a/web (ROLLS PODS)\n  update Deployment web: image differs (rolls the pods)\n",
	} {
		if !strings.Contains(page, line) {
			t.Errorf("the page lacks %q:\n%s", line, page)
		}
	}
	recorder = httptest.NewRecorder()
	r.ServeHTTP(recorder, httptest.NewRequest(http.MethodPost, "/observe", nil))
	if recorder.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want %d", recorder.Code, http.StatusMethodNotAllowed)
	}
}
