package observe

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// The actions of a Change.
const (
	Create = "create"
	Update = "update"
	Delete = "delete"
)

// Change is one write a sync would have made of an object a Robot owns.
type Change struct {
	// Kind and Name name the object: "Deployment", "web".
	Kind, Name string
	// Action is Create, Update or Delete.
	Action string
	// Diff says, for an update, the first field that differs, as the
	// operator's drift check tells it; empty otherwise.
	Diff string
	// PodTemplate says, for an update of a Deployment, the first field of
	// the pod template that differs: the update rolls the pods. Empty when
	// the pods stay.
	PodTemplate string
}

// String is the change as the log and the page print it.
func (c Change) String() string {
	s := c.Action + " " + c.Kind + " " + c.Name
	if c.Diff != "" {
		s += ": " + c.Diff
	}
	switch c.PodTemplate {
	case "":
	case c.Diff:
		s += " (rolls the pods)"
	default:
		s += " (rolls the pods: " + c.PodTemplate + ")"
	}
	return s
}

// RollsPods reports whether any of changes rolls the pods.
func RollsPods(changes []Change) bool {
	return slices.ContainsFunc(changes, func(c Change) bool { return c.PodTemplate != "" })
}

// robotReport is what Report keeps of one Robot.
type robotReport struct {
	key     cache.ObjectName
	changes []Change
}

// Report holds, per Robot, the writes its last sync would have made. A
// Robot with none is checked and unchanged.
type Report struct {
	logger klog.Logger
	mu     sync.Mutex
	robots map[types.UID]robotReport
}

// NewReport returns an empty Report that logs with logger.
func NewReport(logger klog.Logger) *Report {
	return &Report{logger: logger, robots: map[types.UID]robotReport{}}
}

// Record replaces what is known of the Robot uid, named key, with the
// changes its sync would have made (none: it is as this release would keep
// it). A Robot whose changes differ from those recorded before is logged.
func (r *Report) Record(uid types.UID, key cache.ObjectName, changes []Change) {
	r.mu.Lock()
	before, seen := r.robots[uid]
	r.robots[uid] = robotReport{key: key, changes: slices.Clone(changes)}
	r.mu.Unlock()
	if seen && slices.Equal(before.changes, changes) {
		return
	}
	if len(changes) == 0 {
		if seen {
			r.logger.Info("Robot would no longer change", "robot", klog.KRef(key.Namespace, key.Name))
		}
		return
	}
	described := make([]string, len(changes))
	for i, c := range changes {
		described[i] = c.String()
	}
	r.logger.Info("Robot would change", "robot", klog.KRef(key.Namespace, key.Name), "rollsPods", RollsPods(changes), "changes", described)
}

// Forget drops the Robot uid, deleted. A nil Report holds nothing.
func (r *Report) Forget(uid types.UID) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.robots, uid)
}

// RobotChanges are the changes of one Robot, in a Summary.
type RobotChanges struct {
	Robot     cache.ObjectName
	RollsPods bool
	Changes   []Change
}

// Summary is the Report in total.
type Summary struct {
	// Checked counts the Robots synced; Changing those that would change,
	// Rolling those whose pods would roll.
	Checked, Changing, Rolling int
	// Objects counts the changes by kind and action ("Deployment update").
	Objects map[[2]string]int
	// Robots are the Robots that would change, by namespace and name.
	Robots []RobotChanges
}

// Summary returns the Report as it is now.
func (r *Report) Summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Summary{Checked: len(r.robots), Objects: map[[2]string]int{}}
	for _, robot := range r.robots {
		if len(robot.changes) == 0 {
			continue
		}
		rolls := RollsPods(robot.changes)
		s.Changing++
		if rolls {
			s.Rolling++
		}
		for _, c := range robot.changes {
			s.Objects[[2]string{c.Kind, c.Action}]++
		}
		s.Robots = append(s.Robots, RobotChanges{Robot: robot.key, RollsPods: rolls, Changes: slices.Clone(robot.changes)})
	}
	slices.SortFunc(s.Robots, func(a, b RobotChanges) int {
		return cmp.Or(cmp.Compare(a.Robot.Namespace, b.Robot.Namespace), cmp.Compare(a.Robot.Name, b.Robot.Name))
	})
	return s
}

// Write prints the summary for a person: the totals, then one block per
// Robot that would change.
func (s Summary) Write(w io.Writer) {
	fmt.Fprintf(w, "observe-only: %d Robots checked, %d would change, %d would roll their pods\n", s.Checked, s.Changing, s.Rolling)
	keys := make([][2]string, 0, len(s.Objects))
	for key := range s.Objects {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	for _, key := range keys {
		fmt.Fprintf(w, "  %s %s: %d\n", key[0], key[1], s.Objects[key])
	}
	for _, robot := range s.Robots {
		rolls := "pods stay"
		if robot.RollsPods {
			rolls = "ROLLS PODS"
		}
		fmt.Fprintf(w, "\n%s (%s)\n", robot.Robot, rolls)
		for _, c := range robot.Changes {
			fmt.Fprintf(w, "  %s\n", c)
		}
	}
}

// ServeHTTP serves the summary as text.
func (r *Report) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	r.Summary().Write(w)
}

var (
	robotsDesc = prometheus.NewDesc("robot_operator_observe_robots",
		"Observe-only: the Robots synced (state=checked), those that this release would change (would_change), and those whose pods it would roll (would_roll_pods).",
		[]string{"state"}, nil)
	objectsDesc = prometheus.NewDesc("robot_operator_observe_object_changes",
		"Observe-only: the writes this release would make of the objects Robots own, by kind and action (create, update, delete).",
		[]string{"kind", "action"}, nil)
)

// Describe implements prometheus.Collector.
func (r *Report) Describe(ch chan<- *prometheus.Desc) {
	ch <- robotsDesc
	ch <- objectsDesc
}

// Collect implements prometheus.Collector: the summary's figures, at each
// scrape.
func (r *Report) Collect(ch chan<- prometheus.Metric) {
	s := r.Summary()
	for state, n := range map[string]int{"checked": s.Checked, "would_change": s.Changing, "would_roll_pods": s.Rolling} {
		ch <- prometheus.MustNewConstMetric(robotsDesc, prometheus.GaugeValue, float64(n), state)
	}
	for key, n := range s.Objects {
		ch <- prometheus.MustNewConstMetric(objectsDesc, prometheus.GaugeValue, float64(n), key[0], key[1])
	}
}
