//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// previousRelease is the commit of the last release that served v1alpha1
// alone and stored Robots in it: the upgrade test installs its CRD and runs
// its operator, built from the repository's history.
const previousRelease = "2d2a18b422b35ccd30cfc293bdec1392740f323a"

// upgradeTimeout bounds each step of the upgrade: the new operator's start,
// its webhook's certificates, the Robots' convergence and the migration.
const upgradeTimeout = 90 * time.Second

// buildPreviousRelease returns the previous release's CRD and its operator,
// built from git history into a temporary directory.
func buildPreviousRelease(t *testing.T) (crd string, bin string) {
	t.Helper()
	return buildRelease(t, previousRelease)
}

// buildRelease returns the CRD and the operator of the release at commit,
// built from git history into a temporary directory.
func buildRelease(t *testing.T, commit string) (crd string, bin string) {
	t.Helper()
	dir := t.TempDir()
	archive := exec.CommandContext(t.Context(), "sh", "-c", fmt.Sprintf("git -C %q archive %s | tar -x -C %q", env.root, commit, dir))
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("extracting the release %s from git history (a clone with its history is needed): %v\n%s", commit, err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "artifacts", "crd", "robot.dev_robots.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "robot-operator")
	start := time.Now()
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the previous release's operator: %v\n%s", err, out)
	}
	t.Logf("built the operator of %s in %v", commit[:min(12, len(commit))], time.Since(start).Round(time.Second))
	return string(data), bin
}

// runPreviousRelease puts in place of this tree's CRD what install applies
// (the previous release's), runs the previous release's operator oldBin
// as name, creates robots through v1alpha1 in a new namespace and waits
// for each to be Ready, then stops that operator. It returns the
// namespace and each Robot's Deployment as the previous release made it.
func runPreviousRelease(t *testing.T, name, oldBin string, install func(ctx context.Context), robots map[string]*robotv1alpha1.Robot) (string, map[string]*appsv1.Deployment) {
	t.Helper()
	ctx := t.Context()
	// A cluster of the previous release has never seen v1beta1: the CRD
	// this tree installed goes (its Robots with it, those of the tests
	// before this one), and the previous release's takes its place.
	if _, stderr, err := kubectl(ctx, "", "delete", "crd", "robots.robot.dev", "--wait=true", "--timeout=120s"); err != nil {
		t.Fatalf("deleting the CRD: %v\n%s", err, stderr)
	}
	install(ctx)
	waitForCRD(t, func(crd string) bool { return strings.Contains(crd, `"storedVersions":["v1alpha1"]`) }, "serves and stores v1alpha1")
	waitForDiscovery(t, "robot.dev/v1alpha1")

	args, err := operatorArgs(oldBin, env.operator.args[1])
	if err != nil {
		t.Fatal(err)
	}
	previous := extraOperator(t, name, args)
	previous.bin = oldBin
	if err := previous.start(); err != nil {
		t.Fatalf("starting the previous release's operator: %v", err)
	}

	ns := newNamespace(t)
	for name, robot := range robots {
		robot.Name, robot.Namespace = name, ns
		if _, err := env.robots.RobotV1alpha1().Robots(ns).Create(ctx, robot, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Robot %s as v1alpha1: %v", name, err)
		}
	}
	before := map[string]*appsv1.Deployment{}
	for name := range robots {
		eventually(t, upgradeTimeout, "the previous release has Robot "+name+" Ready", func(ctx context.Context) (bool, string, error) {
			robot, err := env.robots.RobotV1alpha1().Robots(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			ready := meta.FindStatusCondition(robot.Status.Conditions, robotv1alpha1.ConditionReady)
			return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == robot.Generation, fmt.Sprint(ready), nil
		})
		before[name] = getDeployment(t, ns, name)
	}
	if err := previous.stop(); err != nil {
		t.Fatalf("stopping the previous release's operator: %v", err)
	}

	return ns, before
}

// TestUpgradeFromThePreviousRelease: Robots that the previous release
// stored as v1alpha1 and runs, upgraded to this tree (its CRD, then its
// operator), converge with no Robot lost and no Deployment recreated or
// rolled (same UID, revision and pod template), and are moved to v1beta1: storedVersions ends as [v1beta1], and
// their Deployments' owner references name robot.dev/v1beta1.
func TestUpgradeFromThePreviousRelease(t *testing.T) {
	exclusive(t, "replaces the CRD with the previous release's, and runs that release's operator")
	ctx := t.Context()
	oldCRD, oldBin := buildPreviousRelease(t)

	pauseSharedOperator(t)
	// Runs before the shared operator starts again: this tree's CRD, with
	// the conversion at the shared operator's webhook.
	t.Cleanup(func() {
		ctx := context.Background()
		if err := installCRD(ctx); err != nil {
			t.Errorf("installing this tree's CRD again: %v", err)
		}
	})
	robots := map[string]*robotv1alpha1.Robot{
		"web":      {Spec: robotv1alpha1.RobotSpec{Image: image1, Args: []string{"netexec", "--http-port=8080"}, Replicas: ptr.To[int32](2), Port: ptr.To[int32](8080)}},
		"worker":   {Spec: robotv1alpha1.RobotSpec{Image: image1, Args: []string{"pause"}}},
		"internal": {Spec: robotv1alpha1.RobotSpec{Image: image1, Args: []string{"netexec", "--http-port=8080"}, Port: ptr.To[int32](8080), Service: &robotv1alpha1.RobotService{Type: robotv1alpha1.ServiceTypeNone}}},
	}
	ns, before := runPreviousRelease(t, "previous-release", oldBin, func(ctx context.Context) {
		if _, stderr, err := kubectl(ctx, oldCRD, "apply", "-f", "-"); err != nil {
			t.Fatalf("installing the previous release's CRD: %v\n%s", err, stderr)
		}
	}, robots)

	// The upgrade: this tree's CRD, then its operator.
	if err := installCRD(ctx); err != nil {
		t.Fatal(err)
	}
	if err := env.operator.start(); err != nil {
		t.Fatalf("starting this tree's operator: %v", err)
	}

	// Until they are migrated, the Robots are stored as v1alpha1 and read
	// through the webhook, which answers once the new operator has put its
	// CA back on the CRD.
	uids := map[types.UID]bool{}
	eventually(t, upgradeTimeout, "every Robot is there, read as v1beta1", func(ctx context.Context) (bool, string, error) {
		list, err := env.robots.RobotV1beta1().Robots(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, robot := range list.Items {
			uids[robot.UID] = true
		}
		return len(list.Items) == len(robots), fmt.Sprintf("%d Robots", len(list.Items)), nil
	})
	for name := range robots {
		waitForRobotReady(t, ns, name)
		eventually(t, upgradeTimeout, "Deployment "+name+"'s owner reference names robot.dev/v1beta1", func(ctx context.Context) (bool, string, error) {
			d, err := env.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			owner := metav1.GetControllerOf(d)
			return owner != nil && owner.APIVersion == "robot.dev/v1beta1", fmt.Sprint(owner), nil
		})
		after := getDeployment(t, ns, name)
		was := before[name]
		if after.UID != was.UID {
			t.Errorf("Deployment %s was recreated: UID %s, before %s", name, after.UID, was.UID)
		}
		if revision := "deployment.kubernetes.io/revision"; after.Annotations[revision] != was.Annotations[revision] {
			t.Errorf("Deployment %s rolled: revision %s, before %s", name, after.Annotations[revision], was.Annotations[revision])
		}
		// The generation moves: the Deployment's annotations change (the
		// spec hash), which the API server counts as a change of its
		// ReplicaSets' too. Its pods' template must not.
		if !apiequality.Semantic.DeepEqual(after.Spec.Template, was.Spec.Template) {
			t.Errorf("Deployment %s's pod template changed:\n%s", name, diff.Diff(was.Spec.Template, after.Spec.Template))
		}
		if owner := metav1.GetControllerOf(after); owner == nil || !uids[owner.UID] {
			t.Errorf("Deployment %s's owner %v is none of the Robots", name, owner)
		}
	}
	waitForCRD(t, func(crd string) bool { return strings.Contains(crd, `"storedVersions":["v1beta1"]`) }, "lists v1beta1 alone in storedVersions")
}

// waitForCRD waits until the Robot CRD, as JSON, is Established and passes
// done.
func waitForCRD(t *testing.T, done func(crd string) bool, what string) {
	t.Helper()
	eventually(t, upgradeTimeout, "the Robot CRD "+what, func(ctx context.Context) (bool, string, error) {
		crd, _, err := kubectl(ctx, "", "get", "crd", "robots.robot.dev", "-o", "jsonpath={.status}")
		if err != nil {
			return false, "", nil
		}
		established := strings.Contains(crd, `"type":"Established"`) && strings.Contains(crd, `"status":"True"`)
		return established && done(crd), crd, nil
	})
}

// waitForDiscovery waits until the API server's discovery lists Robots in
// groupVersion: a CRD made again is Established a moment before, and an
// operator that starts in between finds no Robots served and exits.
func waitForDiscovery(t *testing.T, groupVersion string) {
	t.Helper()
	eventually(t, upgradeTimeout, "discovery lists robots in "+groupVersion, func(ctx context.Context) (bool, string, error) {
		out, _, err := kubectl(ctx, "", "get", "--raw", "/apis/"+groupVersion)
		if err != nil {
			return false, "", nil
		}
		return strings.Contains(out, `"name":"robots"`), out, nil
	})
}

// TestUpgradeSideBySide is the rolling upgrade as a Deployment makes it: the
// previous release leads on the Lease, and this tree's operator starts
// beside it, as a follower, on the same Lease, with the webhook's Secret
// as the manifests ship it (empty). Without waiting for the Lease, the new
// replica fills the Secret and puts its CA on the CRD, so that both
// versions answer, both operators' writes go through, and it becomes
// ready; once the old leader stops, it takes the Lease and reconciles.
func TestUpgradeSideBySide(t *testing.T) {
	exclusive(t, "replaces the CRD with the previous release's, empties the webhook's Secret, and runs two releases on one Lease")
	ctx := t.Context()
	oldCRD, oldBin := buildPreviousRelease(t)

	pauseSharedOperator(t)
	t.Cleanup(func() {
		if err := installCRD(context.Background()); err != nil {
			t.Errorf("installing this tree's CRD again: %v", err)
		}
	})
	if _, stderr, err := kubectl(ctx, "", "delete", "crd", "robots.robot.dev", "--wait=true", "--timeout=120s"); err != nil {
		t.Fatalf("deleting the CRD: %v\n%s", err, stderr)
	}
	if _, stderr, err := kubectl(ctx, oldCRD, "apply", "-f", "-"); err != nil {
		t.Fatalf("installing the previous release's CRD: %v\n%s", err, stderr)
	}
	waitForCRD(t, func(crd string) bool { return strings.Contains(crd, `"storedVersions":["v1alpha1"]`) }, "serves and stores v1alpha1")
	waitForDiscovery(t, "robot.dev/v1alpha1")

	leaseID := newLease(t)
	args, err := operatorArgs(oldBin, env.operator.args[1])
	if err != nil {
		t.Fatal(err)
	}
	previous := extraOperator(t, "previous-leader", append(args, leaderElectArgs(leaseID)...))
	previous.bin = oldBin
	if err := previous.start(); err != nil {
		t.Fatalf("starting the previous release's operator: %v", err)
	}
	oldHolder, err := leaseHolder(ctx, leaseID)
	if err != nil || oldHolder == "" {
		t.Fatalf("the previous release leads, but the Lease names %q (%v)", oldHolder, err)
	}

	ns := newNamespace(t)
	for _, name := range []string{"web", "worker"} {
		robot := &robotv1alpha1.Robot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: robotv1alpha1.RobotSpec{Image: image1, Args: []string{"netexec", "--http-port=8080"}, Port: ptr.To[int32](8080)}}
		if _, err := env.robots.RobotV1alpha1().Robots(ns).Create(ctx, robot, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Robot %s as v1alpha1: %v", name, err)
		}
		waitForAlphaReady(t, ns, name)
	}

	// The webhook's Secret as a first install of this release ships it.
	emptyWebhookSecret(t)

	// The upgrade: this tree's CRD, then its operator beside the old one.
	if err := installCRD(ctx); err != nil {
		t.Fatal(err)
	}
	upgraded := extraOperator(t, "new-follower", append(slices.Clone(env.operator.args), leaderElectArgs(leaseID)...))
	off := launch(t, upgraded)

	// Both versions answer, through the new replica's webhook.
	eventually(t, upgradeTimeout, "Robots are listed as v1beta1 and as v1alpha1", func(ctx context.Context) (bool, string, error) {
		beta, err := env.robots.RobotV1beta1().Robots(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "v1beta1: " + err.Error(), nil
		}
		alpha, err := env.robots.RobotV1alpha1().Robots(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "v1alpha1: " + err.Error(), nil
		}
		return len(beta.Items) == 2 && len(alpha.Items) == 2, fmt.Sprintf("%d v1beta1, %d v1alpha1", len(beta.Items), len(alpha.Items)), nil
	})
	if holder, err := leaseHolder(ctx, leaseID); err != nil || holder != oldHolder {
		t.Fatalf("the Lease is held by %q (%v), want still the previous release's %q", holder, err, oldHolder)
	}
	// The new replica is ready while it follows.
	waitForStatus(t, "http://"+mustServingAddress(t, upgraded, off, "health probes")+"/readyz", 200)

	// Writes through both versions; the old leader reconciles them and
	// writes its status through v1alpha1.
	if _, err := env.robots.RobotV1alpha1().Robots(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("scaling Robot web through v1alpha1: %v", err)
	}
	if _, err := env.robots.RobotV1beta1().Robots(ns).Patch(ctx, "worker", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("scaling Robot worker through v1beta1: %v", err)
	}
	waitForDeployment(t, ns, "web", "has 3 replicas", func(d *appsv1.Deployment) bool { return ptr.Deref(d.Spec.Replicas, 1) == 3 })
	waitForDeployment(t, ns, "worker", "has 2 replicas", func(d *appsv1.Deployment) bool { return ptr.Deref(d.Spec.Replicas, 1) == 2 })
	waitForAlphaReady(t, ns, "web")
	waitForAlphaReady(t, ns, "worker")
	if strings.Contains(logSince(upgraded, off), `"Started workers"`) {
		t.Error("the new replica started its workers while the previous release led")
	}

	// The old leader goes, as the rollout removes it: the new replica
	// takes the Lease and reconciles a Robot created through v1beta1.
	if err := previous.stop(); err != nil {
		t.Fatalf("stopping the previous release's operator: %v", err)
	}
	mustLog(t, upgraded, off, `"Started workers"`, upgradeTimeout)
	createRobot(t, newRobot(ns, "after", 1))
	waitForRobotReady(t, ns, "after")
	waitForRobotReady(t, ns, "web")
}

// waitForAlphaReady waits until Robot ns/name, read as v1alpha1, is Ready
// for its current generation.
func waitForAlphaReady(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, upgradeTimeout, "Robot "+name+" is Ready, read as v1alpha1", func(ctx context.Context) (bool, string, error) {
		robot, err := env.robots.RobotV1alpha1().Robots(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		ready := meta.FindStatusCondition(robot.Status.Conditions, robotv1alpha1.ConditionReady)
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == robot.Generation, fmt.Sprint(ready), nil
	})
}

// emptyWebhookSecret empties the webhook's Secret, as the manifests ship it.
func emptyWebhookSecret(t *testing.T) {
	t.Helper()
	secrets := env.kube.CoreV1().Secrets(operatorNamespace)
	secret, err := secrets.Get(t.Context(), webhookSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret.Data = nil
	if _, err := secrets.Update(t.Context(), secret, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("emptying the webhook's Secret: %v", err)
	}
}
