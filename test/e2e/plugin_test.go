//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestKubectlRobot: the kubectl robot plugin, found by kubectl on the PATH,
// against a Robot applied with kubectl and changed twice, the second time
// to an image that cannot be pulled: history lists the 3 revisions with
// their image changes, diff shows the image an undo would bring back, and
// undo writes the first spec back as the user who applied it; the Robot
// is Ready again, and the operator keeps the undone spec, rolls nothing
// else, and renumbers the first revision as the current one.
func TestKubectlRobot(t *testing.T) {
	parallel(t)
	if env.audit.err != nil {
		t.Fatalf("this test reads the operator's writes in the API server's audit log: %v", env.audit.err)
	}
	ns := newNamespace(t)
	apply := func(image string) {
		t.Helper()
		manifest := fmt.Sprintf("apiVersion: robot.dev/v1beta1\nkind: Robot\nmetadata:\n  name: web\n  namespace: %s\nspec:\n  image: %s\n  replicas: 2\n", ns, image)
		if _, stderr, err := kubectl(t.Context(), manifest, "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply of Robot %s/web with %s: %v\n%s", ns, image, err, stderr)
		}
	}
	apply(image1)
	waitForRobot(t, ns, "web", convergeTimeout, "is Ready, its rollout reported complete", robotSettled)
	waitForHistory(t, ns, "web", 1)
	apply(image2)
	waitForHistory(t, ns, "web", 2)
	waitForRobot(t, ns, "web", convergeTimeout, "is Ready with "+image2, func(r *robotv1beta1.Robot) bool { return robotSettled(r) && r.Spec.Image == image2 })
	apply(pullFailsImage)
	waitForHistory(t, ns, "web", 3)
	broken := waitForRobot(t, ns, "web", convergeTimeout, "is not Ready with "+pullFailsImage, func(r *robotv1beta1.Robot) bool {
		c := readyCondition(r)
		return c != nil && c.ObservedGeneration == r.Generation && c.Status == metav1.ConditionFalse
	})
	t.Logf("with %s: Ready=False, %s: %s", pullFailsImage, readyCondition(broken).Reason, readyCondition(broken).Message)

	history := kubectlRobot(t, "-n", ns, "history", "web")
	t.Logf("kubectl robot history web:\n%s", history)
	rows := historyRows(t, history)
	want := [][2]string{
		{"1", "first recorded spec"},
		{"2", "image " + image1 + " → 2.54"}, // the same repository: the new tag alone
		{"3 *", "image " + image2 + " → " + pullFailsImage},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("kubectl robot history listed %v, want %v:\n%s", rows, want, history)
	}

	diff := kubectlRobot(t, "diff", "web", "1", "--namespace", ns)
	for _, line := range []string{"--- current spec", "+++ revision 1", "-image: " + pullFailsImage, "+image: " + image1} {
		if !strings.Contains("\n"+diff, "\n"+line+"\n") {
			t.Errorf("kubectl robot diff web 1 has no line %q:\n%s", line, diff)
		}
	}

	undone := time.Now()
	out := kubectlRobot(t, "undo", "web", "-n", ns, "--to-revision", "1")
	if want := "robot.robot.dev/web rolled back to revision 1 (field manager kubectl-client-side-apply)\n"; out != want {
		t.Errorf("kubectl robot undo printed %q, want %q", out, want)
	}
	robot := waitForRobot(t, ns, "web", convergeTimeout, "is Ready with "+image1+" again", func(r *robotv1beta1.Robot) bool {
		return robotSettled(r) && r.Spec.Image == image1
	})
	expectSpecOwnedBy(t, robot, "kubectl-client-side-apply")
	deployment, err := env.kube.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := deployment.Spec.Template.Spec.Containers[0].Image; got != image1 {
		t.Errorf("the Deployment runs %s after the undo, want %s", got, image1)
	}

	// The operator keeps the undone spec: it never writes the Robot but
	// its status, and the spec stays as the undo left it.
	time.Sleep(3 * time.Second)
	writes, err := env.audit.find(auditQuery{UserAgentPrefix: operatorUserAgentPrefix, Namespace: ns, Resource: "robots", After: undone})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		if w.Verb != "get" && w.Verb != "list" && w.Verb != "watch" && (w.ObjectRef == nil || w.ObjectRef.Subresource != "status") {
			t.Errorf("the operator wrote the Robot after the undo: %s", w.String())
		}
	}
	now, err := env.robots.RobotV1beta1().Robots(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now.Generation != robot.Generation || now.Spec.Image != image1 {
		t.Errorf("after the undo, the Robot went from generation %d to %d, image %s", robot.Generation, now.Generation, now.Spec.Image)
	}

	// The first spec came back: its revision is renumbered the newest.
	history = kubectlRobot(t, "history", "web", "-n", ns)
	rows = historyRows(t, history)
	if last := rows[len(rows)-1]; len(rows) != 3 || last != [2]string{"4 *", "image " + pullFailsImage + " → " + image1} {
		t.Errorf("after the undo, kubectl robot history listed %v, want revisions 2, 3 and 4, the current one, back to %s:\n%s", rows, image1, history)
	}

	// Errors name what is missing, and fail.
	stdout, stderr, err := runKubectlRobot(t, "undo", "nothing", "-n", ns)
	if err == nil || stdout != "" || stderr != fmt.Sprintf("error: Robot %s/nothing not found\n", ns) {
		t.Errorf("kubectl robot undo of a Robot that does not exist: %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	stdout, stderr, err = runKubectlRobot(t, "diff", "web", "1", "-n", ns)
	if err == nil || stdout != "" || !strings.Contains(stderr, "has no revision 1 (its revisions: 2, 3, 4)") {
		t.Errorf("kubectl robot diff of a revision renumbered: %v, stdout %q, stderr %q", err, stdout, stderr)
	}
}

// historyRows returns each revision kubectl robot history lists: its
// number (with " *" when current) and its change.
func historyRows(t *testing.T, history string) [][2]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(history), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "REVISION") {
		t.Fatalf("kubectl robot history printed no table:\n%s", history)
	}
	change := strings.Index(lines[0], "CHANGE")
	current := strings.Index(lines[0], "CURRENT")
	var rows [][2]string
	for _, line := range lines[1:] {
		if len(line) < change {
			t.Fatalf("kubectl robot history printed a short row %q:\n%s", line, history)
		}
		number := strings.Fields(line)[0]
		if strings.TrimSpace(line[current:change]) == "*" {
			number += " *"
		}
		rows = append(rows, [2]string{number, line[change:]})
	}
	return rows
}

// expectSpecOwnedBy checks that manager, by an update, owns the Robot's
// image, and that no other manager owns any of its spec.
func expectSpecOwnedBy(t *testing.T, robot *robotv1beta1.Robot, manager string) {
	t.Helper()
	var owners []string
	for _, entry := range robot.ManagedFields {
		if entry.FieldsV1 != nil && entry.Subresource == "" && strings.Contains(string(entry.FieldsV1.Raw), `"f:spec"`) {
			owners = append(owners, fmt.Sprintf("%s (%s)", entry.Manager, entry.Operation))
			if entry.Manager == manager && !strings.Contains(string(entry.FieldsV1.Raw), `"f:image"`) {
				t.Errorf("%s does not own the Robot's image: %s", manager, entry.FieldsV1.Raw)
			}
		}
	}
	if want := manager + " (Update)"; fmt.Sprint(owners) != "["+want+"]" {
		t.Errorf("the Robot's spec is owned by %v, want %s alone", owners, want)
	}
}

// kubectlRobot runs kubectl robot with args, as a user would, and returns
// its standard output; it fails the test unless it succeeds.
func kubectlRobot(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := runKubectlRobot(t, args...)
	if err != nil {
		t.Fatalf("kubectl robot %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}

// runKubectlRobot runs kubectl robot with args through kubectl, the plugin
// built from the tree first on the PATH.
func runKubectlRobot(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := pluginBinary(t)
	// kubectl passes a plugin its flags as they are, and takes none before
	// the plugin's name.
	cmd := exec.CommandContext(t.Context(), env.kubectlBin, append(append([]string{"robot"}, args...), "--kubeconfig", env.kubeconfig)...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var outBuf, errBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &errBuf
	err = cmd.Run()
	return outBuf.String(), errBuf.String(), err
}

var plugin struct {
	once sync.Once
	bin  string
	err  error
}

// pluginBinary returns $E2E_PLUGIN_BIN, the plugin that `make e2e` builds,
// or else builds it from the tree, once, into a directory of its own: the
// directory is put on kubectl's PATH, where it finds kubectl-robot.
func pluginBinary(t *testing.T) string {
	t.Helper()
	plugin.once.Do(func() {
		if bin := os.Getenv("E2E_PLUGIN_BIN"); bin != "" {
			if plugin.bin, plugin.err = filepath.Abs(bin); plugin.err == nil && filepath.Base(bin) != "kubectl-robot" {
				plugin.err = fmt.Errorf("E2E_PLUGIN_BIN=%s: kubectl finds a plugin named kubectl-robot only", bin)
			}
			return
		}
		dir := filepath.Join(env.tempDir, "plugin")
		plugin.bin = filepath.Join(dir, "kubectl-robot")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		build := exec.CommandContext(ctx, "go", "build", "-o", plugin.bin, "./internal/robotctl/kubectl-robot")
		build.Dir = env.root
		if out, err := build.CombinedOutput(); err != nil {
			plugin.err = fmt.Errorf("building the plugin: %v\n%s", err, out)
		}
	})
	if plugin.err != nil {
		t.Fatal(plugin.err)
	}
	return plugin.bin
}
