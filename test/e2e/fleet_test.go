//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// nextReleaseAnnotation is the pod template annotation that the operator
// built by buildNextRelease puts on every Robot's pods, and this tree's
// release does not: a new default of the next release.
const nextReleaseAnnotationKey, nextReleaseAnnotationValue = "e2e.robot.dev/release", "next"

// inLine finds a waiting Robot's place in line in its Synced message.
var inLine = regexp.MustCompile(`(\d+) in line`)

// buildNextRelease returns this tree's operator built as a next release
// whose new default changes the pod template of every Robot: one more pod
// template annotation. It is the only way to set it: workload's
// releaseTemplateAnnotation, which no release sets, given by the linker.
func buildNextRelease(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "robot-operator-next")
	start := time.Now()
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "-ldflags",
		"-X github.com/robot-operator/robot-operator/internal/workload.releaseTemplateAnnotation="+nextReleaseAnnotationKey+"="+nextReleaseAnnotationValue, ".")
	build.Dir = env.root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the next release's operator: %v\n%s", err, out)
	}
	t.Logf("built the next release's operator in %v", time.Since(start).Round(time.Second))
	return bin
}

// hasNextTemplate reports whether d's pod template is the next release's.
func hasNextTemplate(d *appsv1.Deployment) bool {
	return d.Spec.Template.Annotations[nextReleaseAnnotationKey] == nextReleaseAnnotationValue
}

// rolledOut reports whether the Deployment controller is done with d's
// rollout: the operator's own test of a slot's end.
func rolledOut(d *appsv1.Deployment) bool {
	want, s := ptr.Deref(d.Spec.Replicas, 1), d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas >= want
}

// fleetWatch follows the Deployments of a namespace: how many at most
// rolled the change under watch (the next release's template, unless
// changed says another) at once, leaving out those named in exempt (their
// own spec changed, which the budget never holds).
type fleetWatch struct {
	mu          sync.Mutex
	deployments map[string]*appsv1.Deployment
	exempt      map[string]bool
	// changed reports whether a Deployment has the change under watch;
	// nil: the next release's template.
	changed    func(*appsv1.Deployment) bool
	maxRolling int
	maxAt      []string
}

// hasChange reports whether d has the change under watch.
func (w *fleetWatch) hasChange(d *appsv1.Deployment) bool {
	if w.changed != nil {
		return w.changed(d)
	}
	return hasNextTemplate(d)
}

// observe records d and returns how many roll now.
func (w *fleetWatch) observe(d *appsv1.Deployment) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deployments[d.Name] = d
	var rolling []string
	for name, d := range w.deployments {
		if !w.exempt[name] && w.hasChange(d) && !rolledOut(d) {
			rolling = append(rolling, name)
		}
	}
	if len(rolling) > w.maxRolling {
		w.maxRolling, w.maxAt = len(rolling), rolling
	}
}

// counts returns how many Deployments have the change under watch, and
// how many do not yet.
func (w *fleetWatch) counts() (next, old int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.deployments {
		if w.hasChange(d) {
			next++
		} else {
			old++
		}
	}
	return next, old
}

func (w *fleetWatch) exemptName(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.exempt[name] = true
}

// TestFleetBudget: a next release of the operator whose new default changes
// the pod template of 50 Robots, none of whose specs changed, started with
// -fleet-rollout-budget=5, never has more than 5 Deployments rolling that
// change at once (watched from the Deployments' template changes and their
// rollouts); the Robots waiting say WaitingForFleetBudget; a spec change of
// one waiting Robot goes through at once, ahead of those waiting; and all 50
// end Ready with the new template.
func TestFleetBudget(t *testing.T) {
	exclusive(t, "pauses the shared operator and runs a next release's build of it, which changes every Robot's pod template")
	const n, budget = 50, 5
	ctx := t.Context()
	ns := newNamespace(t)
	for i := range n {
		createRobot(t, newRobot(ns, fmt.Sprintf("fleet-%02d", i), 1))
	}
	eventually(t, 3*time.Minute, fmt.Sprintf("the %d Robots are Ready", n), func(ctx context.Context) (bool, string, error) {
		robots, err := env.robots.RobotV1beta1().Robots(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		ready := 0
		for i := range robots.Items {
			if robotSettled(&robots.Items[i]) {
				ready++
			}
		}
		return ready == n, fmt.Sprintf("%d of %d settled", ready, len(robots.Items)), nil
	})
	next := buildNextRelease(t)

	pauseSharedOperator(t)
	list, err := env.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := &fleetWatch{deployments: map[string]*appsv1.Deployment{}, exempt: map[string]bool{}}
	for i := range list.Items {
		if hasNextTemplate(&list.Items[i]) {
			t.Fatalf("Deployment %s has the next release's template before that release runs", list.Items[i].Name)
		}
		w.observe(&list.Items[i])
	}
	deployments, err := env.kube.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer deployments.Stop()
	go func() {
		for event := range deployments.ResultChan() {
			if d, ok := event.Object.(*appsv1.Deployment); ok && event.Type != watch.Deleted {
				w.observe(d)
			}
		}
	}()
	// Which Robots said they wait, from their own watch.
	var said sync.Map
	robots, err := env.robots.RobotV1beta1().Robots(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer robots.Stop()
	go func() {
		for event := range robots.ResultChan() {
			if robot, ok := event.Object.(*robotv1beta1.Robot); ok {
				if synced := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced); synced != nil && synced.Reason == robotv1beta1.ReasonWaitingForFleetBudget {
					said.Store(robot.Name, synced.Message)
				}
			}
		}
	}()

	args := sharedArgs(fmt.Sprintf("-fleet-rollout-budget=%d", budget))
	o := extraOperator(t, "fleet", args)
	o.bin = next
	if err := o.start(); err != nil {
		t.Fatalf("starting the next release's operator: %v", err)
	}

	// A Robot that says it waits has its own spec changed: it goes through
	// at once, ahead of the Robots still waiting.
	// The one furthest back in line, once most say they wait: it would wait
	// longest.
	var waiting string
	eventually(t, time.Minute, "Robots say they wait for the fleet budget", func(context.Context) (bool, string, error) {
		count, furthest := 0, 0
		said.Range(func(name, message any) bool {
			count++
			if m := inLine.FindStringSubmatch(message.(string)); m != nil {
				if position, _ := strconv.Atoi(m[1]); position > furthest {
					waiting, furthest = name.(string), position
				}
			}
			return true
		})
		return count >= n-2*budget && waiting != "", fmt.Sprintf("%d say so", count), nil
	})
	w.exemptName(waiting)
	if d := getDeployment(t, ns, waiting); hasNextTemplate(d) {
		t.Fatalf("Robot %s said it waits, and its Deployment already has the next template", waiting)
	}
	patchRobot(t, ns, waiting, `{"spec":{"env":[{"name":"CHANGED","value":"by its spec"}]}}`)
	changed := waitForDeployment(t, ns, waiting, "takes the Robot's spec change, with the next template", func(d *appsv1.Deployment) bool {
		container := d.Spec.Template.Spec.Containers[0]
		return len(container.Env) == 1 && container.Env[0].Value == "by its spec" && hasNextTemplate(d)
	})
	// It was far back in line: had it waited its turn, no Deployment, or
	// hardly any, would still lack the next template.
	if _, old := w.counts(); old == 0 {
		t.Errorf("every Deployment had the next template by the time %s's spec change was applied: it waited its turn in line", waiting)
	} else {
		t.Logf("%s's spec change went through while %d Deployments still waited for the next template", waiting, old)
	}
	if changed.Annotations["robot.dev/budgeted-rollout"] == "true" {
		t.Errorf("Robot %s's spec change was applied as a budgeted rollout", waiting)
	}

	eventually(t, 5*time.Minute, fmt.Sprintf("the %d Robots are Ready with the next template", n), func(ctx context.Context) (bool, string, error) {
		robots, err := env.robots.RobotV1beta1().Robots(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		settled, next, last := 0, 0, ""
		for i := range robots.Items {
			robot := &robots.Items[i]
			if robotSettled(robot) && meta.IsStatusConditionTrue(robot.Status.Conditions, robotv1beta1.ConditionSynced) {
				settled++
			} else {
				last = summarizeRobot(robot)
			}
		}
		list, err := env.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for i := range list.Items {
			if hasNextTemplate(&list.Items[i]) && deploymentSettled(&list.Items[i]) {
				next++
			}
		}
		return settled == n && next == n, fmt.Sprintf("%d settled and Synced, %d Deployments rolled out with the next template; not yet: %s", settled, next, last), nil
	})

	w.mu.Lock()
	maxRolling, maxAt := w.maxRolling, w.maxAt
	w.mu.Unlock()
	t.Logf("at most %d Deployments rolled the next template at once: %v", maxRolling, maxAt)
	if maxRolling > budget {
		t.Errorf("%d Deployments rolled the next template at once, %v; the budget is %d", maxRolling, maxAt, budget)
	}
	if maxRolling == 0 {
		t.Error("no Deployment was seen rolling the next template: the watch saw nothing")
	}
	count := 0
	var message any
	said.Range(func(_, m any) bool {
		count++
		message = m
		return true
	})
	t.Logf("%d Robots said they waited; one said: %s", count, message)
	if count < n-2*budget {
		t.Errorf("%d Robots said they waited for the fleet budget; want at least %d of the %d beyond the budget", count, n-2*budget, n-budget)
	}
}
