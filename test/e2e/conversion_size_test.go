//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
)

// sizePolicy is the ValidatingAdmissionPolicy of
// artifacts/deploy/size-policy.yaml, and its binding's name.
const sizePolicy = "robot-operator-v1alpha1-size"

// robotWithAnnotation returns a v1beta1 Robot, as JSON, with one annotation
// of size bytes and extraSpec (JSON members of spec after image and ports);
// ports is 1 (v1alpha1's port alone) or 2 (a second port, which v1alpha1
// keeps in its conversion-data annotation).
func robotWithAnnotation(ns, name string, size, ports int, extraSpec string) string {
	list := `{"name":"http","containerPort":8080,"protocol":"TCP"}`
	if ports == 2 {
		list += `,{"name":"metrics","containerPort":9090,"protocol":"TCP"}`
	}
	return fmt.Sprintf(`{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":%q,"namespace":%q,"annotations":{"big":%q}},"spec":{"image":%q,"replicas":0,"ports":[%s]%s}}`,
		name, ns, strings.Repeat("x", size), image1, list, extraSpec)
}

// TestSizePolicy: the shipped ValidatingAdmissionPolicy, which TestMain
// applied with artifacts/deploy, is accepted by the API server and refuses a
// Robot whose annotations and the fields v1alpha1 keeps would come to over
// 250 KiB, through v1beta1 and through v1alpha1, and admits those that fit.
func TestSizePolicy(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	waitForConversion(t, ns)
	status := mustKubectl(t, "get", "validatingadmissionpolicy", sizePolicy, "-o", "jsonpath={.status}")
	if strings.Contains(status, "expressionWarnings") {
		t.Errorf("the API server's type check of %s warns: %s", sizePolicy, status)
	}
	hugeArgs := `,"sidecars":[{"name":"proxy","image":"proxy:1","args":["` + strings.Repeat("a", 300<<10) + `"]}]`
	for _, tt := range []struct {
		name    string
		robot   string
		refused bool
	}{
		{"annotations just under the API server's limit and a second port", robotWithAnnotation(ns, "over", 262068, 2, ""), true},
		{"a sidecar of 300 KiB", robotWithAnnotation(ns, "sidecar", 10, 1, hugeArgs), true},
		{"annotations of 250,000 bytes and one port", robotWithAnnotation(ns, "plain", 250000, 1, ""), false},
		{"annotations of 200 KiB and a second port", robotWithAnnotation(ns, "fits", 200<<10, 2, ""), false},
	} {
		err := restFor("v1beta1").Post().Namespace(ns).Resource("robots").Body([]byte(tt.robot)).Do(t.Context()).Error()
		switch {
		case tt.refused && (err == nil || !strings.Contains(err.Error(), sizePolicy)):
			t.Errorf("%s: error %v, want the policy's refusal", tt.name, err)
		case !tt.refused && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		}
	}
	// What fits keeps its second port through v1alpha1.
	alpha, err := rawRobot(t.Context(), "v1alpha1", ns, "fits")
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := jsonField(alpha, "metadata", "annotations", robotv1alpha1.ConversionDataAnnotation).(string); !strings.Contains(data, "metrics") {
		t.Errorf("read as v1alpha1, conversion-data is %.200q, want the second port", data)
	}
	// Through v1alpha1, the same Robot: the API server converts it to
	// v1beta1 before the policy sees it.
	over := robotWithAnnotation(ns, "over-alpha", 262068-100, 1, "")
	over = strings.Replace(over, `"robot.dev/v1beta1"`, `"robot.dev/v1alpha1"`, 1)
	over = strings.Replace(over, `"annotations":{`, `"annotations":{"robot.dev/conversion-data":"{\"minReadySeconds\":5,\"strategy\":{\"type\":\"Recreate\"}}",`, 1)
	over = strings.Replace(over, `"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}]`, `"port":8080`, 1)
	if err := restFor("v1alpha1").Post().Namespace(ns).Resource("robots").Body([]byte(over)).Do(t.Context()).Error(); err == nil || !strings.Contains(err.Error(), sizePolicy) {
		t.Errorf("through v1alpha1: error %v, want the policy's refusal", err)
	}
}

// TestCaseFoldedConversionDataStoresNothing: an annotation written through
// v1alpha1 whose keys differ from the fields' names in case, or repeat one,
// restores nothing: five sidecars beside one with a folded key, or a grace
// period of 104 days beside 30 s, are not stored past v1beta1's limits.
func TestCaseFoldedConversionDataStoresNothing(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	waitForConversion(t, ns)
	var sidecars []string
	for i := range 5 {
		sidecars = append(sidecars, fmt.Sprintf(`{"name":"s%d","image":"proxy:1"}`, i))
	}
	for name, data := range map[string]string{
		"folded-sidecars": `{"sidecars":[` + strings.Join(sidecars, ",") + `],"SIDECARS":[{"name":"proxy","image":"proxy:1"}]}`,
		"folded-grace":    `{"terminationGracePeriodSeconds":9000000000,"TerminationGracePeriodSeconds":30}`,
		"twice":           `{"sidecars":[` + strings.Join(sidecars, ",") + `],"sidecars":[{"name":"proxy","image":"proxy:1"}]}`,
	} {
		annotation, _ := json.Marshal(data)
		postRobot(t, "v1alpha1", ns, fmt.Sprintf(`{"apiVersion":"robot.dev/v1alpha1","kind":"Robot","metadata":{"name":%q,"annotations":{"robot.dev/conversion-data":%s}},"spec":{"image":%q,"replicas":0,"port":8080}}`, name, annotation, image1))
		robot := getRobot(t, ns, name)
		if len(robot.Spec.Sidecars) > 0 || robot.Spec.TerminationGracePeriodSeconds != nil || len(robot.Annotations) > 0 {
			t.Errorf("%s: stored %d sidecars, grace period %v, annotations %v; want none of them", name, len(robot.Spec.Sidecars), robot.Spec.TerminationGracePeriodSeconds, robot.Annotations)
		}
	}
}

// TestV1alpha1ListsAnOversizedRobot: a Robot whose annotations and the
// fields v1alpha1 keeps come to more than the API server accepts in
// annotations (made before the size policy, which is unbound for the
// moment) no longer breaks v1alpha1: a LIST across namespaces and a WATCH
// of another namespace work, the Robot reads through v1alpha1 without its
// conversion-data, and the webhook counts it.
func TestV1alpha1ListsAnOversizedRobot(t *testing.T) {
	exclusive(t, "it unbinds the cluster-wide size policy to store a Robot that the policy refuses")
	ctx := t.Context()
	tenantA, tenantB := newNamespace(t), newNamespace(t)
	waitForConversion(t, tenantA)
	createRobot(t, newRobot(tenantA, "good", 0))

	policyFile := filepath.Join(env.root, "artifacts", "deploy", "size-policy.yaml")
	mustKubectl(t, "delete", "validatingadmissionpolicybinding", sizePolicy)
	t.Cleanup(func() {
		if _, stderr, err := kubectl(context.Background(), "", "apply", "-f", policyFile); err != nil {
			t.Errorf("binding the size policy again: %v\n%s", err, stderr)
		}
	})
	big := robotWithAnnotation(tenantB, "bigann", 262068, 2, "")
	// The binding's removal reaches the API server's admission a moment
	// later.
	eventually(t, 30*time.Second, "the oversized Robot is stored", func(ctx context.Context) (bool, string, error) {
		err := restFor("v1beta1").Post().Namespace(tenantB).Resource("robots").Body([]byte(big)).Do(ctx).Error()
		return err == nil, fmt.Sprint(err), nil
	})

	// The LIST of every namespace, several times: the API server asks the
	// webhook at each.
	for range 3 {
		list, err := env.robots.RobotV1alpha1().Robots("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing Robots as v1alpha1 in every namespace: %v", err)
		}
		found := false
		for _, robot := range list.Items {
			if robot.Namespace == tenantB && robot.Name == "bigann" {
				found = true
				if _, kept := robot.Annotations[robotv1alpha1.ConversionDataAnnotation]; kept || len(robot.Annotations["big"]) != 262068 || robot.Spec.Port == nil || *robot.Spec.Port != 8080 {
					t.Errorf("bigann read as v1alpha1: annotations %d (conversion-data kept %v), port %v; want its own annotation, no conversion-data, port 8080",
						len(robot.Annotations), kept, robot.Spec.Port)
				}
			}
		}
		if !found {
			t.Fatalf("the v1alpha1 LIST of %d Robots has no %s/bigann", len(list.Items), tenantB)
		}
	}

	// A WATCH of another namespace, from now: it sees the change.
	list, err := env.robots.RobotV1alpha1().Robots(tenantA).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watchCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := env.robots.RobotV1alpha1().Robots(tenantA).Watch(watchCtx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watching Robots of %s as v1alpha1: %v", tenantA, err)
	}
	defer w.Stop()
	patchRobot(t, tenantA, "good", `{"metadata":{"labels":{"seen":"yes"}}}`)
	for seen := false; !seen; {
		select {
		case event, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the v1alpha1 WATCH ended before the change")
			}
			robot, isRobot := event.Object.(*robotv1alpha1.Robot)
			if !isRobot {
				t.Fatalf("the v1alpha1 WATCH sent %s: %+v", event.Type, event.Object)
			}
			seen = robot.Name == "good" && robot.Labels["seen"] == "yes"
		case <-watchCtx.Done():
			t.Fatal("the v1alpha1 WATCH did not see the change in 30 s")
		}
	}

	// The webhook counts what it left out: at least once, as the API
	// server's v1alpha1 watch cache converts a Robot when it enters it,
	// and serves the LISTs from there.
	address := servingAddress(env.operator, 0, "metrics")
	if address == "" {
		t.Fatalf("the shared operator did not log where it serves metrics; see %s", env.operator.logPath)
	}
	m := scrape(t, "http://"+address+"/metrics")
	if m.sum("robot_operator_conversion_annotations_ignored_total", `reason="too_large"`) < 1 {
		t.Errorf("the webhook counted %v too_large, want at least one:\n%s", m.sum("robot_operator_conversion_annotations_ignored_total", `reason="too_large"`),
			strings.Join(m.lines("robot_operator_conversion_annotations_ignored_total"), "\n"))
	}
}
