//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// releaseInstall returns the path of the install.yaml that hack/release.sh
// renders from the tree at commit ("" for this tree), built in a scratch
// directory: the image is built too, and install.yaml pins it by digest.
func releaseInstall(t *testing.T, commit, version string) string {
	t.Helper()
	source, revision, epoch := env.root, "", ""
	if commit != "" {
		source = t.TempDir()
		archive := exec.CommandContext(t.Context(), "sh", "-c", fmt.Sprintf("git -C %q archive %s | tar -x -C %q", env.root, commit, source))
		if out, err := archive.CombinedOutput(); err != nil {
			t.Fatalf("extracting %s from git history (a clone with its history is needed): %v\n%s", commit, err, out)
		}
		out, err := exec.Command("git", "-C", env.root, "log", "-1", "--format=%ct", commit).Output()
		if err != nil {
			t.Fatalf("the time of %s: %v", commit, err)
		}
		revision, epoch = commit, strings.TrimSpace(string(out))
	}
	dir := t.TempDir()
	start := time.Now()
	release := exec.CommandContext(t.Context(), filepath.Join(env.root, "hack", "release.sh"), "manifests")
	release.Env = append(os.Environ(), "VERSION="+version, "RELEASE_SOURCE="+source, "RELEASE_DIR="+dir)
	if revision != "" {
		release.Env = append(release.Env, "REVISION="+revision, "SOURCE_DATE_EPOCH="+epoch)
	}
	if out, err := release.CombinedOutput(); err != nil {
		t.Fatalf("hack/release.sh manifests of %s: %v\n%s", cmp.Or(commit, "this tree"), err, out)
	}
	t.Logf("rendered the install.yaml of %s %s in %v", version, cmp.Or(commit, "(this tree)"), time.Since(start).Round(time.Second))
	return filepath.Join(dir, "install.yaml")
}

// TestUpgradeFromThePreviousReleaseFiles is the upgrade a user makes from
// the release files: the previous release installed from its own
// install.yaml (rendered by hack/release.sh from its commit) and running
// under that file's RBAC, its Robots made through v1alpha1, then
// `kubectl apply -f install.yaml` of this tree and this tree's operator.
// No Robot's pods roll (the same pods, Deployments of the same UID,
// revision and pod template), Robots made through either version after
// the upgrade become Ready, both versions list every Robot, and
// storedVersions ends as [v1beta1]. kwok's nodes run no containers: each
// operator runs beside the cluster, as the install's ServiceAccount, and
// the CRD's conversion goes to it rather than to the install's Service.
func TestUpgradeFromThePreviousReleaseFiles(t *testing.T) {
	exclusive(t, "installs the previous release's install.yaml over the shared operator's objects, and runs that release's operator")
	ctx := t.Context()
	_, oldBin := buildPreviousRelease(t)
	oldInstall := releaseInstall(t, previousRelease, "v0.1.0")
	newInstall := releaseInstall(t, "", "v0.2.0")
	newImage := regexp.MustCompile(`(?m)^\s+image: (\S+@sha256:[0-9a-f]{64})$`).FindStringSubmatch(readFile(t, newInstall))
	if newImage == nil {
		t.Fatalf("%s pins no image by digest", newInstall)
	}

	pauseSharedOperator(t)
	// Runs before the shared operator starts again: this tree's objects as
	// TestMain installed them, and its CRD with the conversion at the
	// shared operator's webhook.
	t.Cleanup(func() {
		ctx := context.Background()
		if err := installDeployManifests(ctx); err != nil {
			t.Errorf("installing this tree's manifests again: %v", err)
		}
		if err := installCRD(ctx); err != nil {
			t.Errorf("installing this tree's CRD again: %v", err)
		}
	})
	robots := map[string]*robotv1alpha1.Robot{
		"web":    {Spec: robotv1alpha1.RobotSpec{Image: image1, Args: []string{"netexec", "--http-port=8080"}, Replicas: ptr.To[int32](2), Port: ptr.To[int32](8080)}},
		"worker": {Spec: robotv1alpha1.RobotSpec{Image: image1, Args: []string{"pause"}}},
	}
	// A cluster of the previous release has never seen v1beta1: its
	// install.yaml puts its CRD, RBAC and Deployment in place of this tree's.
	ns, before := runPreviousRelease(t, "previous-release-files", oldBin, func(ctx context.Context) {
		if _, stderr, err := kubectl(ctx, "", "apply", "-f", oldInstall); err != nil {
			t.Fatalf("kubectl apply -f the previous release's install.yaml: %v\n%s", err, stderr)
		}
	}, robots)
	podsBefore := podsIn(t, ns)
	if len(podsBefore) != 3 {
		t.Fatalf("the previous release's Robots have pods %v, want 3 (web's 2, worker's 1)", podsBefore)
	}

	// The upgrade: this tree's install.yaml, then its operator.
	if _, stderr, err := kubectl(ctx, "", "apply", "-f", newInstall); err != nil {
		t.Fatalf("kubectl apply -f this tree's install.yaml: %v\n%s", err, stderr)
	}
	if err := installCRD(ctx); err != nil { // the conversion at the operator beside the cluster
		t.Fatal(err)
	}
	if got := mustKubectl(t, "-n", operatorNamespace, "get", "deployment/robot-operator", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); got != newImage[1] {
		t.Errorf("after the upgrade the operator's Deployment runs %s, want this tree's install.yaml's %s", got, newImage[1])
	}
	if err := env.operator.start(); err != nil {
		t.Fatalf("starting this tree's operator: %v", err)
	}

	// Robots made through either version after the upgrade.
	created := []string{"made-as-v1alpha1", "made-as-v1beta1"}
	eventually(t, upgradeTimeout, "a Robot is created through v1alpha1 after the upgrade", func(ctx context.Context) (bool, string, error) {
		robot := &robotv1alpha1.Robot{ObjectMeta: metav1.ObjectMeta{Name: created[0], Namespace: ns}, Spec: robotv1alpha1.RobotSpec{Image: image1}}
		if _, err := env.robots.RobotV1alpha1().Robots(ns).Create(ctx, robot, metav1.CreateOptions{}); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
	createRobot(t, newRobot(ns, created[1], 1))

	every := append(slices.Sorted(maps.Keys(robots)), created...)
	for _, name := range every {
		waitForRobotReady(t, ns, name)
	}
	eventually(t, upgradeTimeout, "both versions list every Robot", func(ctx context.Context) (bool, string, error) {
		alpha, err := env.robots.RobotV1alpha1().Robots(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "v1alpha1: " + err.Error(), nil
		}
		beta, err := env.robots.RobotV1beta1().Robots(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "v1beta1: " + err.Error(), nil
		}
		return len(alpha.Items) == len(every) && len(beta.Items) == len(every), fmt.Sprintf("v1alpha1 lists %d, v1beta1 %d", len(alpha.Items), len(beta.Items)), nil
	})

	for name, was := range before {
		eventually(t, upgradeTimeout, "Deployment "+name+"'s owner reference names robot.dev/v1beta1", func(ctx context.Context) (bool, string, error) {
			d, err := env.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			owner := metav1.GetControllerOf(d)
			return owner != nil && owner.APIVersion == "robot.dev/v1beta1", fmt.Sprint(owner), nil
		})
		after := getDeployment(t, ns, name)
		if after.UID != was.UID {
			t.Errorf("Deployment %s was recreated: UID %s, before %s", name, after.UID, was.UID)
		}
		if revision := "deployment.kubernetes.io/revision"; after.Annotations[revision] != was.Annotations[revision] {
			t.Errorf("Deployment %s rolled: revision %s, before %s", name, after.Annotations[revision], was.Annotations[revision])
		}
		if !apiequality.Semantic.DeepEqual(after.Spec.Template, was.Spec.Template) {
			t.Errorf("Deployment %s's pod template changed:\n%s", name, diff.Diff(was.Spec.Template, after.Spec.Template))
		}
	}
	podsAfter := podsIn(t, ns)
	for _, pod := range podsBefore {
		if !slices.Contains(podsAfter, pod) {
			t.Errorf("pod %s of the previous release's Robots is gone after the upgrade: the pods were %v, now %v", pod, podsBefore, podsAfter)
		}
	}
	waitForCRD(t, func(crd string) bool { return strings.Contains(crd, `"storedVersions":["v1beta1"]`) }, "lists v1beta1 alone in storedVersions")
	t.Logf("upgraded from install.yaml of %s to this tree's: %d pods kept, %d Robots listed through both versions", previousRelease[:12], len(podsBefore), len(every))
}

// podsIn returns the names of the pods in ns.
func podsIn(t *testing.T, ns string) []string {
	t.Helper()
	pods, err := env.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return podNames(pods.Items)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
