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
	m := &Migrator{Robots: robotClient.RobotV1beta1(), CRDs: crdClient.ApiextensionsV1().CustomResourceDefinitions(), CRDName: crdName}
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
