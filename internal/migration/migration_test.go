package migration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	robotfake "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/fake"
)

const crdName = "robots.robot.dev"

func crd(storage string, stored ...string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: crdName},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
			{Name: "v1alpha1", Served: true, Storage: storage == "v1alpha1"},
			{Name: "v1beta1", Served: true, Storage: storage == "v1beta1"},
		}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: stored},
	}
}

func robot(ns, name string) runtime.Object {
	return &robotv1beta1.Robot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// run runs a Migrator over robots and the CRD, and returns what it patched,
// the CRD's storedVersions after, and the error.
func run(t *testing.T, definition *apiextensionsv1.CustomResourceDefinition, robots ...runtime.Object) ([]string, []string, error) {
	t.Helper()
	robotClient := robotfake.NewSimpleClientset(robots...)
	crdClient := apiextensionsfake.NewSimpleClientset(definition)
	_, ctx := ktesting.NewTestContext(t)
	// Run returns only once done: a run that cannot finish ends here.
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	m := &Migrator{Robots: robotClient.RobotV1beta1(), CRDs: crdClient.ApiextensionsV1().CustomResourceDefinitions(), CRDName: crdName,
		InitialBackoff: 10 * time.Millisecond}
	n, err := m.Run(ctx)
	var patched []string
	for _, action := range robotClient.Actions() {
		if patch, ok := action.(k8stesting.PatchAction); ok {
			if string(patch.GetPatch()) != "{}" {
				t.Errorf("patch %s of %s/%s, want the empty patch", patch.GetPatch(), patch.GetNamespace(), patch.GetName())
			}
			patched = append(patched, patch.GetNamespace()+"/"+patch.GetName())
		}
	}
	if n != len(patched) {
		t.Errorf("Run says it patched %d Robots, the client saw %d", n, len(patched))
	}
	after, getErr := crdClient.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crdName, metav1.GetOptions{})
	if getErr != nil {
		t.Fatal(getErr)
	}
	slices.Sort(patched)
	return patched, after.Status.StoredVersions, err
}

func TestMigratesEveryRobotThenStoredVersions(t *testing.T) {
	patched, stored, err := run(t, crd("v1beta1", "v1alpha1", "v1beta1"), robot("a", "one"), robot("a", "two"), robot("b", "three"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/one", "a/two", "b/three"}; !slices.Equal(patched, want) {
		t.Errorf("patched %v, want every Robot %v", patched, want)
	}
	if !slices.Equal(stored, []string{"v1beta1"}) {
		t.Errorf("storedVersions %v, want [v1beta1]", stored)
	}
}

func TestNothingToMigrateCostsNoRobotRequest(t *testing.T) {
	robotClient := robotfake.NewSimpleClientset(robot("a", "one"))
	crdClient := apiextensionsfake.NewSimpleClientset(crd("v1beta1", "v1beta1"))
	_, ctx := ktesting.NewTestContext(t)
	m := &Migrator{Robots: robotClient.RobotV1beta1(), CRDs: crdClient.ApiextensionsV1().CustomResourceDefinitions(), CRDName: crdName}
	if _, err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := robotClient.Actions(); len(got) != 0 {
		t.Errorf("%d Robot requests, want none: %v", len(got), got)
	}
	if got := crdClient.Actions(); len(got) != 1 || got[0].GetVerb() != "get" {
		t.Errorf("CRD requests %v, want one get", got)
	}
}

func TestRefusesACRDOfAnotherRelease(t *testing.T) {
	patched, stored, err := run(t, crd("v1alpha1", "v1alpha1"), robot("a", "one"))
	if err == nil || !strings.Contains(err.Error(), "install the CRD of this release") {
		t.Errorf("error %v, want one that says to install this release's CRD", err)
	}
	if len(patched) != 0 || !slices.Equal(stored, []string{"v1alpha1"}) {
		t.Errorf("patched %v, storedVersions %v; want nothing touched", patched, stored)
	}
}

// journal records, in order, the Robot patches and CRD status updates two
// fake clientsets receive, and refuses the patches of the Robots in refuse
// as an admission policy would, each as many times as its count says.
type journal struct {
	mu      sync.Mutex
	entries []string
	refuse  map[string]int
}

func (j *journal) add(entry string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, entry)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.entries)
}

// watch installs the journal's reactors on the two clientsets.
func (j *journal) watch(robots *robotfake.Clientset, crds *apiextensionsfake.Clientset) {
	robots.PrependReactor("patch", "robots", func(action k8stesting.Action) (bool, runtime.Object, error) {
		patch := action.(k8stesting.PatchAction)
		key := patch.GetNamespace() + "/" + patch.GetName()
		j.mu.Lock()
		refused := j.refuse[key] > 0
		if refused {
			j.refuse[key]--
		}
		j.mu.Unlock()
		if refused {
			j.add("refused " + key)
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "robot.dev", Resource: "robots"}, patch.GetName(),
				errors.New("ValidatingAdmissionPolicy 'freeze' denied request"))
		}
		j.add("patched " + key)
		return false, nil, nil
	})
	crds.PrependReactor("update", "customresourcedefinitions", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "status" {
			stored := action.(k8stesting.UpdateAction).GetObject().(*apiextensionsv1.CustomResourceDefinition).Status.StoredVersions
			j.add(fmt.Sprintf("storedVersions %v", stored))
		}
		return false, nil, nil
	})
}

// TestContinuesPastARefusedRobot: a Robot whose rewrite is refused does not
// keep the others from theirs; it alone is retried, and storedVersions is
// cleaned only once it too is rewritten.
func TestContinuesPastARefusedRobot(t *testing.T) {
	robotClient := robotfake.NewSimpleClientset(robot("a", "one"), robot("a", "two"), robot("b", "three"))
	crdClient := apiextensionsfake.NewSimpleClientset(crd("v1beta1", "v1alpha1", "v1beta1"))
	j := &journal{refuse: map[string]int{"a/one": 1}}
	j.watch(robotClient, crdClient)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	m := &Migrator{Robots: robotClient.RobotV1beta1(), CRDs: crdClient.ApiextensionsV1().CustomResourceDefinitions(), CRDName: crdName}
	_, err := m.Run(ctx)
	if err != nil {
		t.Errorf("Run: %v", err)
	}
	want := []string{"refused a/one", "patched a/two", "patched b/three", "patched a/one", "storedVersions [v1beta1]"}
	if got := j.list(); !slices.Equal(got, want) {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// observer counts what a Migrator reports to its Observer.
type observer struct {
	mu       sync.Mutex
	failures int
	left     []int
}

func (o *observer) RewriteFailed()   { o.mu.Lock(); o.failures++; o.mu.Unlock() }
func (o *observer) RobotsLeft(n int) { o.mu.Lock(); o.left = append(o.left, n); o.mu.Unlock() }

// TestReportsEachRefusal: each refused rewrite gives a Warning Event on its
// Robot and counts in the metrics, and the Robots left fall to 0 once done.
func TestReportsEachRefusal(t *testing.T) {
	robotClient := robotfake.NewSimpleClientset(robot("a", "one"), robot("a", "two"))
	crdClient := apiextensionsfake.NewSimpleClientset(crd("v1beta1", "v1alpha1", "v1beta1"))
	j := &journal{refuse: map[string]int{"a/two": 2}}
	j.watch(robotClient, crdClient)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	recorder := record.NewFakeRecorder(10)
	o := &observer{}
	m := &Migrator{Robots: robotClient.RobotV1beta1(), CRDs: crdClient.ApiextensionsV1().CustomResourceDefinitions(), CRDName: crdName,
		Recorder: recorder, Observer: o, InitialBackoff: 10 * time.Millisecond}
	n, err := m.Run(ctx)
	if err != nil || n != 2 {
		t.Errorf("Run: %d, %v; want 2 Robots patched and no error", n, err)
	}
	want := []string{"patched a/one", "refused a/two", "refused a/two", "patched a/two", "storedVersions [v1beta1]"}
	if got := j.list(); !slices.Equal(got, want) {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	close(recorder.Events)
	var events []string
	for event := range recorder.Events {
		events = append(events, event)
	}
	if len(events) != 2 {
		t.Fatalf("events %q, want 2", events)
	}
	for _, event := range events {
		if !strings.HasPrefix(event, "Warning "+EventStorageMigrationFailed+" ") || !strings.Contains(event, "denied request") {
			t.Errorf("event %q, want a Warning %s that quotes the refusal", event, EventStorageMigrationFailed)
		}
	}
	if o.failures != 2 || !slices.Equal(o.left, []int{1, 1, 0}) {
		t.Errorf("observed %d failures and Robots left %v; want 2 and [1 1 0]", o.failures, o.left)
	}
}

// TestNeverCleansWhileARobotIsRefused: storedVersions keeps v1alpha1 as
// long as one Robot cannot be rewritten.
func TestNeverCleansWhileARobotIsRefused(t *testing.T) {
	robotClient := robotfake.NewSimpleClientset(robot("a", "one"), robot("a", "two"))
	crdClient := apiextensionsfake.NewSimpleClientset(crd("v1beta1", "v1alpha1", "v1beta1"))
	j := &journal{refuse: map[string]int{"a/one": 1 << 30}}
	j.watch(robotClient, crdClient)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	m := &Migrator{Robots: robotClient.RobotV1beta1(), CRDs: crdClient.ApiextensionsV1().CustomResourceDefinitions(), CRDName: crdName,
		InitialBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
	_, err := m.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "1 Robots could not be rewritten") {
		t.Errorf("Run: %v, want it to say that a Robot could not be rewritten", err)
	}
	got := j.list()
	if slices.ContainsFunc(got, func(e string) bool { return strings.HasPrefix(e, "storedVersions") }) {
		t.Errorf("storedVersions written while a Robot was refused: %v", got)
	}
	if n := slices.Index(got, "patched a/two"); n < 0 || slices.Index(got[n+1:], "patched a/two") >= 0 {
		t.Errorf("requests %v: want a/two, which was rewritten, patched exactly once", got)
	}
	if refusals := len(got) - 1; refusals < 3 {
		t.Errorf("requests %v: want a/one retried several times", got)
	}
}

// TestCRDChangedDuringThePassStartsOver: a change of the CRD's spec during
// the pass (its storage version flipped and back, which lets Robots be
// stored in v1alpha1 meanwhile) keeps storedVersions as it is until a full
// pass was made under the CRD's new spec.
func TestCRDChangedDuringThePassStartsOver(t *testing.T) {
	robotClient := robotfake.NewSimpleClientset(robot("a", "one"), robot("a", "two"))
	definition := crd("v1beta1", "v1alpha1", "v1beta1")
	definition.Generation = 1
	crdClient := apiextensionsfake.NewSimpleClientset(definition)
	j := &journal{refuse: map[string]int{}}
	j.watch(robotClient, crdClient)
	var flipped sync.Once
	robotClient.PrependReactor("patch", "robots", func(action k8stesting.Action) (bool, runtime.Object, error) {
		flipped.Do(func() {
			changed := definition.DeepCopy()
			changed.Generation = 3
			if _, err := crdClient.ApiextensionsV1().CustomResourceDefinitions().Update(context.Background(), changed, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
			}
			j.add("CRD changed")
		})
		return false, nil, nil
	})
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m := &Migrator{Robots: robotClient.RobotV1beta1(), CRDs: crdClient.ApiextensionsV1().CustomResourceDefinitions(), CRDName: crdName,
		InitialBackoff: 10 * time.Millisecond}
	if _, err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"CRD changed", "patched a/one", "patched a/two", "patched a/one", "patched a/two", "storedVersions [v1beta1]"}
	if got := j.list(); !slices.Equal(got, want) {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
