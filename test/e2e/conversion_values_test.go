//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// restFor returns the REST client of a Robot version, "v1alpha1" or
// "v1beta1", for Robots the typed clients cannot decode.
func restFor(version string) rest.Interface {
	if version == "v1alpha1" {
		return env.robots.RobotV1alpha1().RESTClient()
	}
	return env.robots.RobotV1beta1().RESTClient()
}

// rawRobot reads a Robot as JSON, through version.
func rawRobot(ctx context.Context, version, ns, name string) (map[string]any, error) {
	raw, err := restFor(version).Get().Namespace(ns).Resource("robots").Name(name).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var robot map[string]any
	return robot, json.Unmarshal(raw, &robot)
}

// jsonField returns the value at path in object, nil if there is none.
func jsonField(object map[string]any, path ...string) any {
	var value any = object
	for _, key := range path {
		m, ok := value.(map[string]any)
		if !ok {
			return nil
		}
		value = m[key]
	}
	return value
}

// withRobotsStoredAsV1alpha1 makes v1alpha1 the Robot CRD's storage version,
// with a schema that accepts anything, runs store, and puts the CRD back as
// it was: the Robots store writes are then what a cluster of the previous
// release holds, stored as v1alpha1, with values its schema admitted.
func withRobotsStoredAsV1alpha1(t *testing.T, store func()) {
	t.Helper()
	requireExclusive(t, "changes the Robot CRD")
	original := mustKubectl(t, "get", "crd", "robots.robot.dev", "-o", "json")
	put := func(ctx context.Context, body []byte) error {
		if _, stderr, err := kubectl(ctx, string(body), "replace", "-f", "-"); err != nil {
			return fmt.Errorf("%v\n%s", err, stderr)
		}
		_, stderr, err := kubectl(ctx, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/robots.robot.dev")
		if err != nil {
			return fmt.Errorf("%v\n%s", err, stderr)
		}
		return nil
	}
	restore := func(ctx context.Context) error {
		var back map[string]any
		if err := json.Unmarshal([]byte(original), &back); err != nil {
			return err
		}
		delete(back["metadata"].(map[string]any), "resourceVersion")
		body, _ := json.Marshal(back)
		return put(ctx, body)
	}
	restored := false
	t.Cleanup(func() {
		if !restored {
			if err := restore(context.Background()); err != nil {
				t.Errorf("putting the Robot CRD back: %v", err)
			}
		}
	})
	var crd map[string]any
	if err := json.Unmarshal([]byte(original), &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
		version := v.(map[string]any)
		version["storage"] = version["name"] == "v1alpha1"
		version["schema"] = map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
	}
	delete(crd["metadata"].(map[string]any), "resourceVersion")
	body, _ := json.Marshal(crd)
	if err := put(t.Context(), body); err != nil {
		t.Fatalf("storing Robots as v1alpha1: %v", err)
	}
	probe := []byte(`{"apiVersion":"robot.dev/v1alpha1","kind":"Robot","metadata":{"name":"probe"},"spec":{"image":"x","port":"http"}}`)
	eventually(t, 30*time.Second, "the loosened Robot CRD is served", func(ctx context.Context) (bool, string, error) {
		err := restFor("v1alpha1").Post().Namespace("default").Resource("robots").Param("dryRun", metav1.DryRunAll).Body(probe).Do(ctx).Error()
		return err == nil, fmt.Sprint(err), nil
	})
	store()
	if err := restore(t.Context()); err != nil {
		t.Fatalf("putting the Robot CRD back: %v", err)
	}
	restored = true
	eventually(t, 30*time.Second, "the Robot CRD's schema is enforced again", func(ctx context.Context) (bool, string, error) {
		err := restFor("v1alpha1").Post().Namespace("default").Resource("robots").Param("dryRun", metav1.DryRunAll).Body(probe).Do(ctx).Error()
		return err != nil, fmt.Sprint(err), nil
	})
}

// postRobot stores a Robot, given as JSON, through version.
func postRobot(t *testing.T, version, ns, body string) {
	t.Helper()
	if err := restFor(version).Post().Namespace(ns).Resource("robots").Body([]byte(body)).Do(t.Context()).Error(); err != nil {
		t.Fatalf("storing a Robot through %s: %v\n%s", version, err, body)
	}
}

// TestStoredValuesGoCannotParse: Robots that an earlier release stored as
// v1alpha1 with a quantity Go cannot parse (cpu: 1e1.5), or with a
// robot.dev/conversion-data annotation that is not the conversion's, and a
// Robot stored as v1beta1 with such a quantity, do not break any version:
// every LIST and WATCH works, each Robot reads in both versions with its
// values as stored, and each can be patched and deleted through either.
func TestStoredValuesGoCannotParse(t *testing.T) {
	exclusive(t, "it makes v1alpha1 the Robot CRD's storage version for a moment, and loosens its schema")
	ns := newNamespace(t)
	ctx := t.Context()
	waitForConversion(t, ns)
	alpha := func(name, annotations, spec string) string {
		return fmt.Sprintf(`{"apiVersion":"robot.dev/v1alpha1","kind":"Robot","metadata":{"name":%q,"annotations":{%s}},"spec":{"image":%q,%s}}`, name, annotations, image1, spec)
	}
	withRobotsStoredAsV1alpha1(t, func() {
		postRobot(t, "v1alpha1", ns, alpha("alpha-quantity", "", `"port":8080,"resources":{"limits":{"cpu":"1e1.5"}}`))
		postRobot(t, "v1alpha1", ns, alpha("alpha-annotation", `"robot.dev/conversion-data":"set by a user of the old release"`, `"port":8080`))
	})
	withoutRobotSchema(t, func() {
		postRobot(t, "v1beta1", ns, fmt.Sprintf(`{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"beta-quantity"},"spec":{"image":%q,"resources":{"limits":{"cpu":"1e1.5"}}}}`, image1))
	})
	names := []string{"alpha-quantity", "alpha-annotation", "beta-quantity"}

	// The operator reads the v1alpha1-stored Robot with the foreign
	// annotation through v1beta1, runs it, and writes its status, which
	// stores it as v1beta1 without the annotation.
	waitForRobotReady(t, ns, "alpha-annotation")

	// The pre-upgrade check names the Robots whose values it cannot read,
	// and fails. (The annotation is gone by now: the precheck's unit
	// tests cover it.)
	check := exec.CommandContext(ctx, env.operator.bin, "check-conversion", "-kubeconfig", env.kubeconfig)
	out, err := check.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("check-conversion: %v, want exit code 1\n%s", err, out)
	}
	for _, want := range []string{
		ns + "/alpha-quantity (read as robot.dev/v1alpha1): holds a value the operator cannot read",
		ns + "/beta-quantity (read as robot.dev/v1alpha1): holds a value the operator cannot read",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check-conversion does not say %q:\n%s", want, out)
		}
	}

	for _, version := range []string{"v1alpha1", "v1beta1"} {
		// Cluster-wide, as the operator's informers and kubectl get -A
		// list: served from the watch cache, which a Robot that fails to
		// convert stops.
		eventually(t, 30*time.Second, "a cluster-wide LIST of "+version+" Robots", func(ctx context.Context) (bool, string, error) {
			raw, err := restFor(version).Get().Resource("robots").DoRaw(ctx)
			if err != nil {
				return false, err.Error(), nil
			}
			var list struct {
				Items []map[string]any `json:"items"`
			}
			if err := json.Unmarshal(raw, &list); err != nil {
				return false, "", err
			}
			found := 0
			for _, item := range list.Items {
				if jsonField(item, "metadata", "namespace") == ns {
					found++
				}
			}
			return found == len(names), fmt.Sprintf("%d of the test's Robots", found), nil
		})
		for _, name := range names {
			robot, err := rawRobot(ctx, version, ns, name)
			if err != nil {
				t.Fatalf("reading Robot %s as %s: %v", name, version, err)
			}
			if strings.HasSuffix(name, "quantity") {
				if cpu := jsonField(robot, "spec", "resources", "limits", "cpu"); cpu != "1e1.5" {
					t.Errorf("Robot %s read as %s: limits.cpu %v, want 1e1.5 as stored", name, version, cpu)
				}
			}
		}
	}
	annotated, err := rawRobot(ctx, "v1beta1", ns, "alpha-annotation")
	if err != nil {
		t.Fatal(err)
	}
	if ports, _ := jsonField(annotated, "spec", "ports").([]any); len(ports) != 1 || jsonField(annotated, "metadata", "annotations", robotv1alpha1.ConversionDataAnnotation) != nil {
		t.Errorf("Robot alpha-annotation read as v1beta1: ports %v and annotations %v, want its one port and no annotation", ports, jsonField(annotated, "metadata", "annotations"))
	}

	// A v1alpha1 WATCH sees a change of each Robot.
	raw, err := restFor("v1alpha1").Get().Namespace(ns).Resource("robots").DoRaw(ctx)
	if err != nil {
		t.Fatalf("listing v1alpha1 Robots: %v", err)
	}
	var list metav1.List
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	// Read as a raw stream: the typed decoder cannot read a quantity of
	// 1e1.5, the API server can.
	stream, err := restFor("v1alpha1").Get().Namespace(ns).Resource("robots").
		Param("watch", "true").Param("resourceVersion", list.ResourceVersion).Param("timeoutSeconds", "60").Stream(ctx)
	if err != nil {
		t.Fatalf("watching v1alpha1 Robots: %v", err)
	}
	defer stream.Close()
	events := make(chan map[string]any)
	go func() {
		defer close(events)
		decoder := json.NewDecoder(stream)
		for {
			var event map[string]any
			if err := decoder.Decode(&event); err != nil {
				return
			}
			events <- event
		}
	}()

	// Patched through either version, and deleted through either.
	for i, name := range names {
		for _, version := range []string{"v1alpha1", "v1beta1"} {
			err := restFor(version).Patch(types.MergePatchType).Namespace(ns).Resource("robots").Name(name).
				Body([]byte(fmt.Sprintf(`{"metadata":{"labels":{"patched-through-%s":"yes"}}}`, version))).Do(ctx).Error()
			if err != nil {
				t.Errorf("patching Robot %s through %s: %v", name, version, err)
			}
		}
		version := []string{"v1alpha1", "v1beta1"}[i%2]
		if err := restFor(version).Delete().Namespace(ns).Resource("robots").Name(name).Do(ctx).Error(); err != nil {
			t.Errorf("deleting Robot %s through %s: %v", name, version, err)
		}
	}
	seen := map[string]bool{}
	timeout := time.After(30 * time.Second)
	for len(seen) < len(names) {
		select {
		case event, ok := <-events:
			if !ok {
				t.Fatalf("the v1alpha1 watch ended; it saw the deletion of %v", seen)
			}
			switch event["type"] {
			case string(watch.Error):
				t.Fatalf("the v1alpha1 watch failed: %v", event["object"])
			case string(watch.Deleted):
				name, _ := jsonField(event, "object", "metadata", "name").(string)
				seen[name] = true
			}
		case <-timeout:
			t.Fatalf("the v1alpha1 watch saw the deletion of %v, want all of %v", seen, names)
		}
	}
}

// TestAnnotationRestoresOnlyValidValues: the annotation written through
// v1alpha1 restores nothing that v1beta1's rules refuse, neither 40 ports
// nor minReadySeconds 100000 nor an unknown strategy.
func TestAnnotationRestoresOnlyValidValues(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	waitForConversion(t, ns)
	var many []string
	for i := range 40 {
		many = append(many, fmt.Sprintf(`{"name":"p%d","containerPort":%d,"protocol":"TCP"}`, i, 9000+i))
	}
	annotations := map[string]string{
		"forty-ports":  `{"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},` + strings.Join(many, ",") + `]}`,
		"slow-sideway": `{"minReadySeconds":100000,"strategy":{"type":"Sideways"}}`,
	}
	for name, data := range annotations {
		quoted, _ := json.Marshal(data)
		postRobot(t, "v1alpha1", ns, fmt.Sprintf(`{"apiVersion":"robot.dev/v1alpha1","kind":"Robot","metadata":{"name":%q,"annotations":{%q:%s}},"spec":{"image":%q,"port":8080}}`,
			name, robotv1alpha1.ConversionDataAnnotation, quoted, image1))
		robot := getRobot(t, ns, name)
		if len(robot.Spec.Ports) != 1 || robot.Spec.MinReadySeconds != 0 || robot.Spec.Strategy != nil || robot.Annotations[robotv1alpha1.ConversionDataAnnotation] != "" {
			t.Errorf("Robot %s stored with %d ports, minReadySeconds %d, strategy %+v, annotations %v; want the one port of port and nothing from the annotation",
				name, len(robot.Spec.Ports), robot.Spec.MinReadySeconds, robot.Spec.Strategy, robot.Annotations)
		}
	}
}

// TestPlantedAnnotationDoesNotSurviveAScale: v1beta1 stores any annotation,
// the conversion's too. Read through v1alpha1 the annotation says what the
// Robot holds, so a kubectl scale through v1alpha1 changes the replicas and
// nothing else.
func TestPlantedAnnotationDoesNotSurviveAScale(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	waitForConversion(t, ns)
	planted := `{"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"admin","containerPort":9999,"protocol":"TCP"}],"minReadySeconds":99,"strategy":{"type":"Recreate"}}`
	robot := newRobot(ns, "planted", 1)
	robot.Spec.Ports = httpPorts(8080)
	robot.Annotations = map[string]string{robotv1alpha1.ConversionDataAnnotation: planted}
	createRobot(t, robot)
	mustKubectl(t, "scale", "-n", ns, "robots.v1alpha1.robot.dev", "planted", "--replicas=2")
	after := getRobot(t, ns, "planted")
	if *after.Spec.Replicas != 2 {
		t.Errorf("replicas %d after the scale, want 2", *after.Spec.Replicas)
	}
	if len(after.Spec.Ports) != 1 || after.Spec.MinReadySeconds != 0 || after.Spec.Strategy != nil {
		t.Errorf("after a scale through v1alpha1: ports %+v, minReadySeconds %d, strategy %+v; want the one port, and nothing from the planted annotation",
			after.Spec.Ports, after.Spec.MinReadySeconds, after.Spec.Strategy)
	}
}

// TestQuantitiesGoCannotParseAreRefused: a new Robot cannot store a
// quantity that the schema's pattern admits and the API's Go types cannot
// parse (1e1.5), in either version; quantities Go parses, strings or
// numbers, are accepted.
func TestQuantitiesGoCannotParseAreRefused(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	waitForConversion(t, ns)
	send := func(version, spec string) error {
		body := fmt.Sprintf(`{"apiVersion":"robot.dev/%s","kind":"Robot","metadata":{"name":"q"},"spec":{"image":%q,%s}}`, version, image1, spec)
		return restFor(version).Post().Namespace(ns).Resource("robots").Param("dryRun", metav1.DryRunAll).Body([]byte(body)).Do(t.Context()).Error()
	}
	for _, version := range []string{"v1alpha1", "v1beta1"} {
		for _, spec := range []string{
			`"resources":{"limits":{"cpu":"1e1.5"}}`,
			`"resources":{"requests":{"memory":"2e0.5"}}`,
			`"resources":{"requests":{"ephemeral-storage":"1e1.5"}}`,
		} {
			err := send(version, spec)
			// The CRD's own message: a failed conversion also names
			// quantities, and is no refusal by the schema.
			if err == nil || !strings.Contains(err.Error(), "must be a quantity such as 128Mi, 1Gi, 500m or 0.5") {
				t.Errorf("%s %s: %v, want a refusal saying it is not a quantity", version, spec, err)
			} else {
				t.Logf("%s %s refused: %v", version, spec, err)
			}
		}
		for _, spec := range []string{
			`"resources":{"limits":{"cpu":"500m","memory":"1Gi"},"requests":{"cpu":2,"memory":"1e3"}}`,
		} {
			if err := send(version, spec); err != nil {
				t.Errorf("%s %s: %v, want it accepted", version, spec, err)
			}
		}
	}
}

// TestTooManyPortsAreInvalidSpec: a Robot stored with more ports than the
// CRD allows (through the conversion's annotation before it was checked, or
// while the CRD was looser) gets no Deployment, and its status says
// InvalidSpec: the ports rule answers at once for a list over 16 instead of
// comparing every pair at each status write until its cost limit.
func TestTooManyPortsAreInvalidSpec(t *testing.T) {
	exclusive(t, "it loosens the Robot CRD's schema to store a Robot with 1000 ports")
	ns := newNamespace(t)
	var ports []string
	for i := range 1000 {
		ports = append(ports, fmt.Sprintf(`{"name":"p%d","containerPort":%d,"protocol":"TCP"}`, i, 10000+i))
	}
	withoutRobotSchema(t, func() {
		postRobot(t, "v1beta1", ns, fmt.Sprintf(`{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"many-ports"},"spec":{"image":%q,"replicas":1,"ports":[%s]}}`, image1, strings.Join(ports, ",")))
	})
	robot := waitForRobotReason(t, ns, "many-ports", metav1.ConditionFalse, robotv1beta1.ReasonInvalidSpec, convergeTimeout)
	if message := readyCondition(robot).Message; !strings.Contains(message, "at most 16 ports, not 1000") {
		t.Errorf("Ready's message %q does not say the ports are too many", message)
	}
	if _, err := env.kube.AppsV1().Deployments(ns).Get(t.Context(), "many-ports", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Deployment of a Robot with 1000 ports: %v, want none", err)
	}
}
