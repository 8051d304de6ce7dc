//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// rollbackRelease is the release before this tree's: the one a rollback
// returns to. It serves and stores v1beta1, and knows sidecars, init
// containers, preStop hooks and the grace period.
const rollbackRelease = "236b3fe"

// rollbackQuiet is how long each operator is watched, once its workers
// run, for a write to a Deployment: a rollback that strips fields does so
// within seconds of the start (its first sync of every Robot).
const rollbackQuiet = 20 * time.Second

// rolledBackRobot is what a Robot and what it owns are before a switch of
// release, to compare with after it.
type rolledBackRobot struct {
	spec       robotv1beta1.RobotSpec
	deployment *appsv1.Deployment
	pods       []types.UID
}

// TestRollbackAndForward: this tree's operator, then the release before it
// (as a rollback runs it: the CRD stays, and so does the webhook's address),
// then this tree's again. Robots that use fields both releases know
// (sidecars, init containers, a preStop hook, a grace period) keep every
// field, and their Deployments keep their generation, template and pods
// through both switches: no operator writes a Deployment it has nothing
// to change on, and neither rolls a pod.
func TestRollbackAndForward(t *testing.T) {
	exclusive(t, "stops the shared operator and runs the previous release's in its place, on the shared webhook's address")
	ctx := t.Context()
	_, oldBin := buildRelease(t, rollbackRelease)

	ns := newNamespace(t)
	full := withContainers(newRobot(ns, "full", 2))
	full.Spec.Ports = httpPorts(8080)
	full.Spec.TerminationGracePeriodSeconds = ptr.To[int64](120)
	full.Spec.PreStop = &robotv1beta1.RobotPreStop{Sleep: &robotv1beta1.RobotSleep{Seconds: 30}}
	hook := newRobot(ns, "hook", 1)
	hook.Spec.PreStop = &robotv1beta1.RobotPreStop{Exec: &robotv1beta1.RobotExec{Command: []string{"/bin/drain", "--wait"}}}
	hook.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
	plain := newRobot(ns, "plain", 1)
	robots := []*robotv1beta1.Robot{full, hook, plain}
	for _, robot := range robots {
		createRobot(t, robot)
	}
	snapshot := func() map[string]rolledBackRobot {
		t.Helper()
		taken := map[string]rolledBackRobot{}
		for _, robot := range robots {
			stored := waitForRobotReady(t, ns, robot.Name)
			var pods []types.UID
			for _, pod := range waitForPods(t, ns, stored.Status.Selector, int(ptr.Deref(robot.Spec.Replicas, 1)), image1) {
				pods = append(pods, pod.UID)
			}
			slices.Sort(pods)
			taken[robot.Name] = rolledBackRobot{spec: stored.Spec, deployment: getDeployment(t, ns, robot.Name), pods: pods}
		}
		return taken
	}
	before := snapshot()
	if d := before["full"].deployment.Spec.Template.Spec; len(d.InitContainers) != 2 || ptr.Deref(d.TerminationGracePeriodSeconds, 0) != 120 {
		t.Fatalf("the Deployment of Robot full has init containers %s and a grace period of %v: want the sidecar and the init container, and 120",
			containerNames(d.InitContainers), d.TerminationGracePeriodSeconds)
	}

	// Nothing changes while op runs: no Deployment's generation moves, as
	// the first sync of every Robot is made.
	quiet := func(op string) {
		t.Helper()
		deadline := time.Now().Add(rollbackQuiet)
		for time.Now().Before(deadline) {
			for _, robot := range robots {
				d, err := env.kube.AppsV1().Deployments(ns).Get(ctx, robot.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("%s: getting Deployment %s: %v", op, robot.Name, err)
				}
				if was := before[robot.Name].deployment; d.Generation != was.Generation {
					t.Fatalf("%s wrote Deployment %s: generation %d, before %d; its pod template:\n%s", op, robot.Name, d.Generation, was.Generation,
						diff.Diff(was.Spec.Template, d.Spec.Template))
				}
			}
			time.Sleep(pollInterval)
		}
	}
	compare := func(op string) {
		t.Helper()
		after := snapshot()
		for _, robot := range robots {
			was, is := before[robot.Name], after[robot.Name]
			if !apiequality.Semantic.DeepEqual(was.spec, is.spec) {
				t.Errorf("after %s, Robot %s's spec changed:\n%s", op, robot.Name, diff.Diff(was.spec, is.spec))
			}
			if is.deployment.UID != was.deployment.UID || is.deployment.Generation != was.deployment.Generation {
				t.Errorf("after %s, Deployment %s is UID %s generation %d; before UID %s generation %d", op, robot.Name,
					is.deployment.UID, is.deployment.Generation, was.deployment.UID, was.deployment.Generation)
			}
			if !apiequality.Semantic.DeepEqual(was.deployment.Spec.Template, is.deployment.Spec.Template) {
				t.Errorf("after %s, Deployment %s's pod template changed:\n%s", op, robot.Name, diff.Diff(was.deployment.Spec.Template, is.deployment.Spec.Template))
			}
			if !slices.Equal(was.pods, is.pods) {
				t.Errorf("after %s, Robot %s's pods are %v, before %v: rolled", op, robot.Name, is.pods, was.pods)
			}
		}
	}

	// The rollback: this tree's operator stops, the previous release's
	// starts with the same webhook address, as a rollback of the
	// operator's Deployment would run it.
	pauseSharedOperator(t)
	args, err := operatorArgs(oldBin, env.operator.args[1])
	if err != nil {
		t.Fatal(err)
	}
	previous := extraOperator(t, "rollback-release", append(args, webhookFlags()...))
	previous.bin = oldBin
	if err := previous.start(); err != nil {
		t.Fatalf("starting the release %s: %v", rollbackRelease, err)
	}
	quiet("the release " + rollbackRelease)
	compare("the rollback to " + rollbackRelease)
	if err := previous.stop(); err != nil {
		t.Fatalf("stopping the release %s: %v", rollbackRelease, err)
	}

	// And forward again.
	if err := env.operator.start(); err != nil {
		t.Fatalf("starting this tree's operator again: %v", err)
	}
	quiet("this tree's operator")
	compare("the roll forward")

	// Both releases answered through the webhook all along: the Robots
	// still read as v1alpha1.
	eventually(t, upgradeTimeout, "the Robots are listed as v1alpha1", func(ctx context.Context) (bool, string, error) {
		list, err := env.robots.RobotV1alpha1().Robots(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return len(list.Items) == len(robots), fmt.Sprintf("%d Robots", len(list.Items)), nil
	})
}

// robotVersionIndex returns the index of version in the Robot CRD's
// spec.versions.
func robotVersionIndex(t *testing.T, version string) int {
	t.Helper()
	names := strings.Fields(mustKubectl(t, "get", "crd", "robots.robot.dev", "-o", "jsonpath={.spec.versions[*].name}"))
	i := slices.Index(names, version)
	if i < 0 {
		t.Fatalf("the Robot CRD serves %v, not %s", names, version)
	}
	return i
}

// applyRobotYAML applies a Robot, as YAML, with server-side apply under
// manager.
func applyRobotYAML(t *testing.T, manager, yaml string) {
	t.Helper()
	if _, stderr, err := kubectl(t.Context(), yaml, "apply", "--server-side", "--force-conflicts", "--field-manager="+manager, "-f", "-"); err != nil {
		t.Fatalf("applying Robot:\n%s\n%v\n%s", yaml, err, stderr)
	}
}

// TestNewerFieldsAreLeftAlone: a Robot holding a field that the CRD has
// and this release's types do not (as after a rollback, under the newer
// release's CRD) gets nothing written to its Deployment, not even a change
// this release could make, and says why: Synced=False, NewerAPI, naming the
// field, with one Warning Event. Once the field is gone, it syncs again.
func TestNewerFieldsAreLeftAlone(t *testing.T) {
	exclusive(t, "adds a field to the CRD's v1beta1 schema, as a newer release's CRD would")
	t.Cleanup(func() {
		if err := installCRD(context.Background()); err != nil {
			t.Errorf("installing this tree's CRD again: %v", err)
		}
	})
	ns := newNamespace(t)
	const manager = "newer-client"
	robotYAML := func(replicas int, extra string) string {
		return fmt.Sprintf("apiVersion: robot.dev/v1beta1\nkind: Robot\nmetadata:\n  name: newer\n  namespace: %s\nspec:\n  image: %s\n  replicas: %d\n%s",
			ns, image1, replicas, extra)
	}
	applyRobotYAML(t, manager, robotYAML(1, ""))
	robot := waitForRobotReady(t, ns, "newer")
	before := getDeployment(t, ns, "newer")

	// The newer release's CRD: one more field in v1beta1.
	path := fmt.Sprintf("/spec/versions/%d/schema/openAPIV3Schema/properties/spec/properties/debugPort", robotVersionIndex(t, "v1beta1"))
	mustKubectl(t, "patch", "crd", "robots.robot.dev", "--type=json", "-p", `[{"op":"add","path":"`+path+`","value":{"type":"integer"}}]`)
	// The API server takes up the new schema within a moment; until then
	// the field is pruned.
	eventually(t, convergeTimeout, "Robot newer holds spec.debugPort", func(ctx context.Context) (bool, string, error) {
		// Refused as an unknown field until then.
		_, stderr, _ := kubectl(ctx, robotYAML(1, "  debugPort: 5005\n"), "apply", "--server-side", "--field-manager="+manager, "-f", "-")
		port, _, err := kubectl(ctx, "", "get", "robots.v1beta1.robot.dev", "-n", ns, "newer", "-o", "jsonpath={.spec.debugPort}")
		return err == nil && port == "5005", port + " " + stderr, nil
	})
	// A change this release could make: it makes none.
	applyRobotYAML(t, manager, robotYAML(3, "  debugPort: 5005\n"))
	robot = waitForRobotReason(t, ns, "newer", metav1.ConditionFalse, robotv1beta1.ReasonNewerAPI, convergeTimeout)
	synced := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced)
	if synced == nil || synced.Reason != robotv1beta1.ReasonNewerAPI || !strings.Contains(synced.Message, "spec.debugPort") || !strings.Contains(synced.Message, manager) {
		t.Errorf("Synced is %+v, want NewerAPI naming spec.debugPort and %s", synced, manager)
	}
	waitForEvents(t, ns, robot.UID, robotv1beta1.ReasonNewerAPI, 1)
	time.Sleep(5 * time.Second)
	if d := getDeployment(t, ns, "newer"); d.Generation != before.Generation || ptr.Deref(d.Spec.Replicas, 1) != 1 {
		t.Errorf("Deployment newer was written: generation %d (before %d), %d replicas (want 1)", d.Generation, before.Generation, ptr.Deref(d.Spec.Replicas, 1))
	}
	if events, err := robotEvents(t.Context(), ns, robot.UID, robotv1beta1.ReasonNewerAPI); err != nil || eventCount(events) != 1 {
		t.Errorf("NewerAPI events: %s (%v), want 1", summarizeEvents(events), err)
	} else if !strings.Contains(events[0].Message, "spec.debugPort") {
		t.Errorf("the NewerAPI event says %q, want the field named", events[0].Message)
	}

	// The field goes (its writer stops setting it): the Robot is synced.
	applyRobotYAML(t, manager, robotYAML(3, ""))
	waitForDeployment(t, ns, "newer", "has 3 replicas", func(d *appsv1.Deployment) bool { return ptr.Deref(d.Spec.Replicas, 1) == 3 })
	waitForRobotReady(t, ns, "newer")
}

// TestRefusesACRDStoringANewerVersion: against a Robot CRD that stores a
// version this release does not serve (a newer release's), the operator
// exits at once, with one line that names the version and what to do.
func TestRefusesACRDStoringANewerVersion(t *testing.T) {
	exclusive(t, "makes the CRD store a version this release does not serve")
	pauseSharedOperator(t)
	var crd map[string]any
	if err := json.Unmarshal([]byte(mustKubectl(t, "get", "crd", "robots.robot.dev", "-o", "json")), &crd); err != nil {
		t.Fatal(err)
	}
	spec := crd["spec"].(map[string]any)
	versions := spec["versions"].([]any)
	var newer map[string]any
	for _, v := range versions {
		version := v.(map[string]any)
		if version["name"] == "v1beta1" {
			copied, _ := json.Marshal(version)
			_ = json.Unmarshal(copied, &newer)
		}
		version["storage"] = false
	}
	// A schema of its own, small: the CRD's last-applied annotation must
	// stay under its limit.
	newer["name"], newer["storage"] = "v1", true
	newer["schema"] = map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
	spec["versions"] = append(versions, newer)
	// Replaced whatever it is now; and kubectl keeps the object it sends
	// as its last-applied annotation, which the CRD's next apply compares
	// with.
	delete(crd["metadata"].(map[string]any), "resourceVersion")
	replaced, _ := json.Marshal(crd)
	t.Cleanup(func() {
		// No Robot was written meanwhile, so none is stored as v1. The CRD
		// must store v1beta1 again before storedVersions may drop v1, and
		// storedVersions must drop it before v1 may go.
		ctx := context.Background()
		for _, v := range versions {
			v.(map[string]any)["storage"] = v.(map[string]any)["name"] == "v1beta1"
		}
		newer["storage"] = false
		back, _ := json.Marshal(crd)
		if _, stderr, err := kubectl(ctx, string(back), "replace", "-f", "-"); err != nil {
			t.Errorf("making the CRD store v1beta1 again: %v\n%s", err, stderr)
		}
		if _, stderr, err := kubectl(ctx, "", "patch", "crd", "robots.robot.dev", "--subresource=status", "--type=merge",
			"-p", `{"status":{"storedVersions":["v1beta1"]}}`); err != nil {
			t.Errorf("dropping v1 from the CRD's storedVersions: %v\n%s", err, stderr)
		}
		if err := installCRD(ctx); err != nil {
			t.Errorf("installing this tree's CRD again: %v", err)
		}
	})
	if _, stderr, err := kubectl(t.Context(), string(replaced), "replace", "-f", "-"); err != nil {
		t.Fatalf("making the CRD store v1: %v\n%s", err, stderr)
	}

	o := extraOperator(t, "newer-crd", sharedArgs())
	launch(t, o)
	select {
	case <-o.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("the operator still runs 60 s after its start against a CRD that stores v1")
	}
	if o.waitErr == nil {
		t.Error("the operator exited with status 0")
	}
	log := logSince(o, 0)
	for _, want := range []string{"stores robot.dev/v1,", "does not serve (it serves v1alpha1, v1beta1)", "Rolling back"} {
		if !strings.Contains(log, want) {
			t.Errorf("the operator's log lacks %q:\n%s", want, lastLines(o.logPath, 10))
		}
	}
	if strings.Contains(log, `"Started workers"`) {
		t.Error("the operator started its workers")
	}
}
