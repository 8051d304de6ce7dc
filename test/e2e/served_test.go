//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// idleWindow is how long TestServingV1beta1Alone counts conversions with
// nothing written.
const idleWindow = 60 * time.Second

// TestServingV1beta1Alone: Robots made through v1alpha1 and stored so, then
// migrated. With the CRD applied again with v1alpha1 not served, the Robots
// stay Ready and the operator keeps working, a v1alpha1 request is answered
// 404, and an idle cluster makes the API server call the conversion webhook
// not once. Applied again serving v1alpha1, as a rollback does, the Robots
// read through v1alpha1 again. storedVersions stays [v1beta1] throughout.
func TestServingV1beta1Alone(t *testing.T) {
	exclusive(t, "changes the Robot CRD's storage and served versions, restarts the shared operator to migrate, and counts the API server's conversions")
	ctx := t.Context()
	crds := crdClient(t)
	ns := newNamespace(t)
	t.Cleanup(func() {
		// This tree's CRD, serving both versions, whatever happened.
		if err := installCRD(context.Background()); err != nil {
			t.Errorf("installing this tree's CRD again: %v", err)
		}
	})

	setStorageVersion(t, crds, "v1alpha1")
	names := []string{"one", "two"}
	for _, name := range names {
		robot := &robotv1alpha1.Robot{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       robotv1alpha1.RobotSpec{Image: image1, Replicas: ptr.To[int32](1)},
		}
		if _, err := env.robots.RobotV1alpha1().Robots(ns).Create(ctx, robot, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Robot %s through v1alpha1: %v", name, err)
		}
	}
	if err := installCRD(ctx); err != nil {
		t.Fatal(err)
	}
	restartOperator(t)
	waitForCRD(t, func(crd string) bool { return strings.Contains(crd, `"storedVersions":["v1beta1"]`) }, "lists v1beta1 alone in storedVersions")
	for _, name := range names {
		waitForRobotReady(t, ns, name)
	}

	applyCRDServing(t, false)
	eventually(t, convergeTimeout, "a v1alpha1 request answered 404", func(ctx context.Context) (bool, string, error) {
		_, err := env.robots.RobotV1alpha1().Robots(ns).Get(ctx, names[0], metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
	if _, _, err := kubectl(ctx, "", "get", "--raw", "/apis/robot.dev/v1alpha1/namespaces/"+ns+"/robots"); err == nil {
		t.Errorf("a LIST of robot.dev/v1alpha1 passed, want 404")
	}
	// The operator reads and writes v1beta1 alone: a change of spec is
	// still carried to the Deployment.
	patchRobot(t, ns, names[1], `{"spec":{"replicas":2}}`)
	waitForDeployment(t, ns, names[1], "scaled to 2 with v1alpha1 not served", func(d *appsv1.Deployment) bool {
		return ptr.Deref(d.Spec.Replicas, 0) == 2
	})
	for _, name := range names {
		waitForRobotReady(t, ns, name)
	}

	before := apiServerConversions(t)
	time.Sleep(idleWindow)
	if after := apiServerConversions(t); after != before {
		t.Errorf("the API server called the conversion webhook %v times in %s of idle with v1alpha1 not served, want 0", after-before, idleWindow)
	}
	assertStoredVersions(t, "v1beta1")

	// The rollback: v1alpha1 served again, the Robots read through it.
	applyCRDServing(t, true)
	eventually(t, convergeTimeout, "the Robots read through v1alpha1 again", func(ctx context.Context) (bool, string, error) {
		list, err := env.robots.RobotV1alpha1().Robots(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		var got []string
		for _, robot := range list.Items {
			got = append(got, robot.Name)
		}
		slices.Sort(got)
		return slices.Equal(got, names), fmt.Sprint(got), nil
	})
	for _, name := range names {
		waitForRobotReady(t, ns, name)
	}
	assertStoredVersions(t, "v1beta1")
}

// applyCRDServing applies this tree's CRD, its conversion at the shared
// operator, with v1alpha1 served or not, and waits until it is Established.
func applyCRDServing(t *testing.T, served bool) {
	t.Helper()
	crd, err := localCRD()
	if err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`[{"op":"test","path":"/spec/versions/0/name","value":"v1alpha1"},{"op":"replace","path":"/spec/versions/0/served","value":%t}]`, served)
	patched, stderr, err := kubectl(t.Context(), crd, "patch", "--local", "-f", "-", "--type=json", "-p", patch, "-o", "yaml")
	if err != nil {
		t.Fatalf("setting v1alpha1's served to %t in the CRD: %v\n%s", served, err, stderr)
	}
	if _, stderr, err := kubectl(t.Context(), patched, "apply", "-f", "-"); err != nil {
		t.Fatalf("applying the CRD with v1alpha1 served %t: %v\n%s", served, err, stderr)
	}
	waitForCRD(t, func(string) bool { return true }, "is Established")
}

// apiServerConversions is how many times the API server has called the
// Robot CRD's conversion webhook, whatever the answer.
func apiServerConversions(t *testing.T) float64 {
	t.Helper()
	body, err := env.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("reading the API server's metrics: %v", err)
	}
	var total float64
	found := false
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "apiserver_crd_conversion_webhook_duration_seconds_count{") && strings.Contains(line, `crd_name="robots.robot.dev"`) {
			var value float64
			if _, err := fmt.Sscan(line[strings.LastIndex(line, "}")+1:], &value); err != nil {
				t.Fatalf("unreadable line %q: %v", line, err)
			}
			total, found = total+value, true
		}
	}
	if !found {
		t.Fatal("the API server's metrics have no apiserver_crd_conversion_webhook_duration_seconds for robots.robot.dev: the Robots made through v1alpha1 were converted, so they should")
	}
	return total
}

// assertStoredVersions fails unless the CRD's storedVersions is want.
func assertStoredVersions(t *testing.T, want ...string) {
	t.Helper()
	crd, err := crdClient(t).ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "robots.robot.dev", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(crd.Status.StoredVersions, want) {
		t.Errorf("storedVersions %v, want %v", crd.Status.StoredVersions, want)
	}
}

// TestServeV1alpha1Flag: an operator run with -serve-v1alpha1=false, as the
// chart's crd.serveV1alpha1=false and the component stop-serving-v1alpha1
// run it, stops the CRD serving v1alpha1 once the Robots are stored as
// v1beta1, and one run with -serve-v1alpha1=true serves it again; the
// version stays in the CRD throughout.
func TestServeV1alpha1Flag(t *testing.T) {
	exclusive(t, "pauses the shared operator and runs operators of its own that change the Robot CRD's served versions")
	t.Cleanup(func() {
		if err := installCRD(context.Background()); err != nil {
			t.Errorf("installing this tree's CRD again: %v", err)
		}
	})
	pauseSharedOperator(t)
	for _, served := range []bool{false, true} {
		// The shared operator's own command line, webhook included: it is
		// paused, and its port free.
		name := fmt.Sprintf("serve-v1alpha1-%t", served)
		o := extraOperator(t, name, append(slices.Clone(env.operator.args), fmt.Sprintf("-serve-v1alpha1=%t", served)))
		offset := launch(t, o)
		mustLog(t, o, offset, `"Started workers"`, convergeTimeout)
		eventually(t, convergeTimeout, fmt.Sprintf("the CRD's v1alpha1 served %t", served), func(ctx context.Context) (bool, string, error) {
			out, _, err := kubectl(ctx, "", "get", "crd", "robots.robot.dev", "-o", `jsonpath={range .spec.versions[*]}{.name}={.served} {end}`)
			if err != nil {
				return false, "", nil
			}
			return out == fmt.Sprintf("v1alpha1=%t v1beta1=true ", served), out, nil
		})
		assertStoredVersions(t, "v1beta1")
		if err := o.stop(); err != nil {
			t.Fatal(err)
		}
	}
}
