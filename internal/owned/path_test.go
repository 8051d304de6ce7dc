package owned

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/policy"
	"github.com/robot-operator/robot-operator/internal/robottest"
	"github.com/robot-operator/robot-operator/internal/workload"
	"github.com/robot-operator/robot-operator/internal/writer"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	robotfake "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/fake"
	robotinformers "github.com/robot-operator/robot-operator/pkg/generated/informers/externalversions"
)

// pathFixture is a Path's world: a fake API server, the caches, a clock and
// the queue.
type pathFixture struct {
	kube   *k8sfake.Clientset
	robot  *robotfake.Clientset
	robots cache.Indexer
	deps   Deps
	clock  *clocktesting.FakeClock
	// queued are the Robots queued; an informer's handler may queue one,
	// so queue and Queued take mu.
	mu       sync.Mutex
	queued   []cache.ObjectName
	recorder *record.FakeRecorder
}

// Queued returns a copy of the Robots queued so far, safe to call while an
// informer's handler queues.
func (f *pathFixture) Queued() []cache.ObjectName {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queued)
}

func newPathFixture(t *testing.T, robot *robotv1beta1.Robot) *pathFixture {
	f := &pathFixture{kube: k8sfake.NewClientset(), clock: clocktesting.NewFakeClock(robottest.FixtureNow), recorder: record.NewFakeRecorder(100)}
	f.robot = robotfake.NewClientset(robot)
	robotInformer := robotinformers.NewSharedInformerFactory(f.robot, 0).Robot().V1beta1().Robots()
	f.robots = robotInformer.Informer().GetIndexer()
	if err := f.robots.Add(robot); err != nil {
		t.Fatal(err)
	}
	f.deps = Deps{Writer: writer.New(f.robot, f.recorder, nil), Robots: robotInformer.Lister(), Clock: f.clock,
		Enqueue: func(key cache.ObjectName) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.queued = append(f.queued, key)
		}}
	return f
}

// writes returns the writes f's API server got, as "verb resource".
func (f *pathFixture) writes() []string {
	var writes []string
	for _, action := range f.kube.Actions() {
		if verb := action.GetVerb(); verb != "get" && verb != "list" && verb != "watch" {
			writes = append(writes, verb+" "+action.GetResource().Resource)
		}
	}
	f.kube.ClearActions()
	return writes
}

// services returns the path of Services, with its cache.
func (f *pathFixture) services(t *testing.T) (*ServicePath, cache.Indexer) {
	informer := informers.NewSharedInformerFactory(f.kube, 0).Core().V1().Services()
	path, err := Services(f.deps, informer, f.kube, policy.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	return path, informer.Informer().GetIndexer()
}

// TestServiceFightBacksOff: another writer that keeps changing what the
// Robot sets on its Service meets the fight back-off the Deployment's
// writers do: a few reverts, then the Robot says ServiceContested, naming
// what changed, and the reverts wait.
func TestServiceFightBacksOff(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeClusterIP)
	f := newPathFixture(t, robot)
	services, serviceCache := f.services(t)

	created, err := services.Sync(ctx, robot)
	if err != nil {
		t.Fatalf("creating the Service: %v", err)
	}
	if got := f.writes(); fmt.Sprint(got) != "[create services]" {
		t.Fatalf("writes %v, want the create", got)
	}
	current := created
	reverts, contested := 0, 0
	for range 10 {
		edited := current.DeepCopy()
		edited.Spec.Selector = map[string]string{"app": "someone-else"}
		edited.ResourceVersion += "1"
		if err := f.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("services"), edited, edited.Namespace); err != nil {
			t.Fatal(err)
		}
		if err := serviceCache.Update(edited); err != nil {
			t.Fatal(err)
		}
		written, err := services.Sync(ctx, robot)
		var fight *outcome.ContestedError
		switch {
		case errors.As(err, &fight):
			contested++
			if fight.Reason != robotv1beta1.ReasonServiceContested || fight.Kind != "Service" || fight.Name != "web" {
				t.Errorf("contested: reason %q, kind %q, name %q; want ServiceContested over Service web", fight.Reason, fight.Kind, fight.Name)
			}
		case err != nil:
			t.Fatalf("sync: %v", err)
		}
		for _, w := range f.writes() {
			if w == "patch services" {
				reverts++
			}
		}
		if written != nil {
			current = written
		}
		f.clock.Step(time.Second)
	}
	if contested == 0 {
		t.Error("ten edits in ten seconds made no fight")
	}
	// The first patch after the create hands its fields to the applies; the
	// applies are the reverts.
	if reverts > 5 {
		t.Errorf("%d writes for ten edits in ten seconds: the fight did not back off", reverts)
	}
	if reverts < 3 {
		t.Errorf("%d writes for ten edits: the first reverts must not wait", reverts)
	}
}

// TestServiceRefusalIsRemembered: a Service write the API server refuses as
// invalid is not sent again for the same generation of the Robot, only for
// the next one.
func TestServiceRefusalIsRemembered(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeLoadBalancer)
	f := newPathFixture(t, robot)
	services, _ := f.services(t)
	f.kube.PrependReactor("create", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "web",
			field.ErrorList{field.NotSupported(field.NewPath("spec", "type"), "LoadBalancer", []string{"ClusterIP"})})
	})
	for range 3 {
		_, err := services.Sync(ctx, robot)
		var invalid *outcome.InvalidSpecError
		if !errors.As(err, &invalid) {
			t.Fatalf("sync: %v, want an invalid spec", err)
		}
	}
	if got := f.writes(); fmt.Sprint(got) != "[create services]" {
		t.Errorf("writes %v for three syncs of one generation, want one create", got)
	}
	robot.Generation++
	if _, err := services.Sync(ctx, robot); err == nil {
		t.Fatal("the next generation's create passed the reactor that refuses it")
	}
	if got := f.writes(); fmt.Sprint(got) != "[create services]" {
		t.Errorf("writes %v for the next generation, want the create sent again", got)
	}
}

// TestServiceNodePortRefusalNamesTheRobotsField: a node port the API server
// refuses on the Service (out of the cluster's range, which only it knows)
// is reported as an invalid spec that names the Robot's port, and
// remembered as any refusal.
func TestServiceNodePortRefusalNamesTheRobotsField(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeNodePort)
	robot.Spec.Ports[0].NodePort = 40000
	f := newPathFixture(t, robot)
	services, _ := f.services(t)
	f.kube.PrependReactor("create", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "web",
			field.ErrorList{field.Invalid(field.NewPath("spec", "ports").Index(0).Child("nodePort"), int32(40000),
				"provided port is not in the valid range. The range of valid ports is 30000-32767")})
	})
	for range 2 {
		_, err := services.Sync(ctx, robot)
		var invalid *outcome.InvalidSpecError
		want := `spec.ports[0].nodePort 40000: the API server refuses it on the Service "web": provided port is not in the valid range`
		if !errors.As(err, &invalid) || !strings.Contains(err.Error(), want) {
			t.Fatalf("sync: %v, want an invalid spec that says %q", err, want)
		}
	}
	if got := f.writes(); fmt.Sprint(got) != "[create services]" {
		t.Errorf("writes %v for two syncs of one generation, want one create", got)
	}
}

// configMapKind is a kind no Robot owns, described here as a new kind
// would be in a file of its own: a ConfigMap named as the Robot, holding
// its image, for Robots with the label wants-config.
func configMapKind(kube *k8sfake.Clientset, cached cache.Indexer) Kind[*corev1.ConfigMap, *corev1ac.ConfigMapApplyConfiguration] {
	return Kind[*corev1.ConfigMap, *corev1ac.ConfigMapApplyConfiguration]{
		Name: "ConfigMap",
		Client: func(namespace string) writer.Client[*corev1.ConfigMap, *corev1ac.ConfigMapApplyConfiguration] {
			return kube.CoreV1().ConfigMaps(namespace)
		},
		Updated: "ConfigMapUpdated", Deleted: "ConfigMapDeleted",
		// What the Robot asks of it is its image.
		SpecHash: func(desired *corev1ac.ConfigMapApplyConfiguration) string { return desired.Data["image"] },
		Drift: func(desired *corev1ac.ConfigMapApplyConfiguration, current *corev1.ConfigMap, _ bool) string {
			for key, value := range desired.Data {
				if current.Data[key] != value {
					return fmt.Sprintf("data[%s] is %q, not %q", key, current.Data[key], value)
				}
			}
			return ""
		},
		Wants:      func(robot *robotv1beta1.Robot) bool { return robot.Labels["wants-config"] == "true" },
		ObjectName: func(robot *robotv1beta1.Robot) string { return robot.Name },
		Desired: func(robot *robotv1beta1.Robot) (*corev1ac.ConfigMapApplyConfiguration, error) {
			owner := metav1ac.OwnerReference().WithAPIVersion(robotv1beta1.SchemeGroupVersion.String()).WithKind("Robot").
				WithName(robot.Name).WithUID(robot.UID).WithController(true).WithBlockOwnerDeletion(true)
			return corev1ac.ConfigMap(robot.Name, robot.Namespace).
				WithLabels(workload.ObjectLabels(robot)).
				WithOwnerReferences(owner).
				WithData(map[string]string{"image": robot.Spec.Image}), nil
		},
		Cached: func(namespace, name string) (*corev1.ConfigMap, error) {
			obj, exists, err := cached.GetByKey(namespace + "/" + name)
			if err != nil || !exists {
				return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
			}
			return obj.(*corev1.ConfigMap), nil
		},
		NameTaken:     "ConfigMapNameTaken",
		NameTakenHint: "or remove the label wants-config",
		Contested:     "ConfigMapContested",
	}
}

// TestAddingAKind: a kind described once goes through the whole path:
// created when missing, left alone when as asked, put back when changed,
// never touched when someone else's, deleted when no longer wanted, and
// every write announced.
func TestAddingAKind(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewRobot("web", 1)
	robot.Labels = map[string]string{"wants-config": "true"}
	f := newPathFixture(t, robot)
	informer := informers.NewSharedInformerFactory(f.kube, 0).Core().V1().ConfigMaps().Informer()
	configMaps, err := New(f.deps, configMapKind(f.kube, informer.GetIndexer()), informer)
	if err != nil {
		t.Fatal(err)
	}
	sync := func(what string, wantWrites string) *corev1.ConfigMap {
		t.Helper()
		got, err := configMaps.Sync(ctx, robot)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if writes := fmt.Sprint(f.writes()); writes != wantWrites {
			t.Errorf("%s: writes %s, want %s", what, writes, wantWrites)
		}
		return got
	}

	created := sync("missing", "[create configmaps]")
	if created.Data["image"] != robot.Spec.Image || !metav1.IsControlledBy(created, robot) {
		t.Fatalf("created %v, want the Robot's image, controlled by the Robot", created)
	}
	if err := informer.GetIndexer().Add(created); err != nil {
		t.Fatal(err)
	}
	sync("as asked", "[]")

	edited := created.DeepCopy()
	edited.Data = map[string]string{"image": "someone/else"}
	edited.ResourceVersion = "99"
	if err := f.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("configmaps"), edited, edited.Namespace); err != nil {
		t.Fatal(err)
	}
	if err := informer.GetIndexer().Update(edited); err != nil {
		t.Fatal(err)
	}
	reverted := sync("changed by another writer", "[patch configmaps]")
	if reverted.Data["image"] != robot.Spec.Image {
		t.Errorf("after the revert: image %q, want %q", reverted.Data["image"], robot.Spec.Image)
	}
	if err := informer.GetIndexer().Update(reverted); err != nil {
		t.Fatal(err)
	}

	robot.Labels = nil
	sync("no longer wanted", "[delete configmaps]")

	robot.Labels = map[string]string{"wants-config": "true"}
	foreign := reverted.DeepCopy()
	foreign.OwnerReferences, foreign.UID = nil, "foreign"
	if err := informer.GetIndexer().Update(foreign); err != nil {
		t.Fatal(err)
	}
	if _, err := configMaps.Sync(ctx, robot); err == nil || err.Error() != `ConfigMap "web" already exists and is not controlled by this Robot; `+
		`the operator leaves it alone: delete it, or remove the label wants-config` {
		t.Errorf("someone else's ConfigMap: %v, want the kind's error", err)
	}
	if writes := f.writes(); len(writes) != 0 {
		t.Errorf("writes %v to someone else's ConfigMap", writes)
	}

	var events []string
	for len(f.recorder.Events) > 0 {
		events = append(events, <-f.recorder.Events)
	}
	want := []string{
		`Normal Created Created ConfigMap "web"`,
		`Normal ConfigMapUpdated Updated ConfigMap "web": data[image] is "someone/else", not "` + robot.Spec.Image + `"`,
		`Normal ConfigMapDeleted Deleted ConfigMap "web": the Robot asks for none`,
	}
	if fmt.Sprint(events) != fmt.Sprint(want) {
		t.Errorf("events\n%q\nwant\n%q", events, want)
	}
}

// TestRoutesWaitForTheGatewayAPI: until the Gateway API is found, a Robot
// that asks for a route gets none and says so, with no request; a Robot
// that asks for none is not held up. Once it is found, the Robots that
// asked are queued, and the route is created.
func TestRoutesWaitForTheGatewayAPI(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeClusterIP)
	robot.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "public"}}}
	f := newPathFixture(t, robot)
	gateway := gatewayfake.NewClientset()
	informer := gatewayinformers.NewSharedInformerFactory(gateway, 0).Gateway().V1().HTTPRoutes()
	found := &Discovery{}
	routes, err := Routes(f.deps, informer, gateway, found, policy.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	found.OnAvailable(func() { f.queued = append(f.queued, cache.MetaObjectToName(robot)) })

	if _, err := routes.Sync(ctx, robot); !errors.Is(err, outcome.ErrGatewayAPIMissing) {
		t.Errorf("before the Gateway API: %v, want ErrGatewayAPIMissing", err)
	}
	plain := robot.DeepCopy()
	plain.Spec.HTTP = nil
	if route, err := routes.Sync(ctx, plain); route != nil || err != nil {
		t.Errorf("a Robot without spec.http: %v, %v; want nothing", route, err)
	}
	if actions := gateway.Actions(); len(actions) != 0 {
		t.Errorf("requests before the Gateway API is there: %v", actions)
	}

	found.SetAvailable(true)
	if fmt.Sprint(f.queued) != fmt.Sprint([]cache.ObjectName{cache.MetaObjectToName(robot)}) {
		t.Errorf("queued %v once the Gateway API was found, want the Robot", f.queued)
	}
	created, err := routes.Sync(ctx, robot)
	if err != nil {
		t.Fatalf("after the Gateway API: %v", err)
	}
	if created.Name != "web" || len(created.Spec.ParentRefs) != 1 || created.Spec.ParentRefs[0].Name != "public" {
		t.Errorf("created %s attached to %v, want web attached to public", created.Name, created.Spec.ParentRefs)
	}
	var verbs []string
	for _, action := range gateway.Actions() {
		verbs = append(verbs, action.GetVerb()+" "+action.GetResource().Resource)
	}
	if fmt.Sprint(verbs) != "[create httproutes]" {
		t.Errorf("requests %v, want one create", verbs)
	}
}

// TestStubOfTheRobotsOwnObjectIsReread: when the informer took the Robot's
// own object before the Robot cache had the Robot (a stub, as
// transform.Workloads keeps of an object whose Robot it cannot find), the
// path reads the object from the API server instead: the Robot is synced
// from the whole object, with no write when it is converged, and the
// status is never given the stub.
func TestStubOfTheRobotsOwnObjectIsReread(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := robottest.NewServiceRobot("web", robotv1beta1.ServiceTypeClusterIP)
	f := newPathFixture(t, robot)
	services, _ := f.services(t)
	created, err := services.Sync(ctx, robot)
	if err != nil {
		t.Fatalf("creating the Service: %v", err)
	}
	f.writes()

	// The operator restarts: a new path, whose cache holds a stub of the
	// Service.
	restarted, serviceCache := f.services(t)
	stub := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: created.Name, Namespace: created.Namespace, UID: created.UID,
		ResourceVersion: created.ResourceVersion, OwnerReferences: created.OwnerReferences}}
	if err := serviceCache.Add(stub); err != nil {
		t.Fatal(err)
	}
	if own := restarted.Own(robot); own != nil {
		t.Errorf("Own gave the status a stub: %v", own)
	}
	synced, err := restarted.Sync(ctx, robot)
	if err != nil {
		t.Fatalf("sync with a stub of the Robot's Service in the cache: %v", err)
	}
	if got := f.writes(); len(got) != 0 {
		t.Errorf("sync with a stub of the Robot's converged Service in the cache: writes %v, want none", got)
	}
	if synced == nil || len(synced.Spec.Ports) == 0 || synced.Labels == nil {
		t.Errorf("sync with a stub in the cache returned %v, want the whole Service", synced)
	}
}

// TestAddingAKindIsOneLineInTheList: the ConfigMap kind of TestAddingAKind,
// given one more line in the list of kinds and nothing else, is synced,
// reported, waited for, counted and forgotten with the others: no function
// of Paths names a kind.
func TestAddingAKindIsOneLineInTheList(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := policyRobot()
	robot.Labels = map[string]string{"wants-config": "true"}
	f := newPolicyFixture(t, robot)
	informer := f.sources.KubeInformers.Core().V1().ConfigMaps().Informer()
	listConfigMaps := func(p *Paths, sources Sources) (ownedKind, error) {
		path, err := New(p.deps, configMapKind(f.kube, informer.GetIndexer()), informer)
		return listed(p, sources, path, err, informer, "written_config_maps")
	}
	listedBefore := kinds
	kinds = append(slices.Clone(kinds), kindEntry{"ConfigMap", listConfigMaps})
	t.Cleanup(func() { kinds = listedBefore })

	paths := f.paths(t, policy.Policy{})
	f.syncCaches(t, f.sources.KubeInformers.Apps().V1().Deployments().Informer(), f.sources.KubeInformers.Core().V1().Services().Informer())
	if paths.HasSynced() {
		t.Errorf("synced before the ConfigMaps' cache has")
	}
	f.syncCaches(t, informer)
	if !paths.HasSynced() {
		t.Errorf("not synced once the ConfigMaps' cache has")
	}
	objects, err := paths.Sync(ctx, robot)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if got := fmt.Sprint(f.writes()); got != "[create deployments create services create configmaps create httproutes]" {
		t.Errorf("writes %s, want the ConfigMap created beside the others", got)
	}
	if created := objectOf[*corev1.ConfigMap](objects, "ConfigMap"); created == nil || !metav1.IsControlledBy(created, robot) {
		t.Errorf("the sync reports the ConfigMap %v, want the Robot's", created)
	}
	// What the echo filter holds goes as the running informer catches up:
	// the gauge's name is there, whatever its count.
	sizes := map[string]int{}
	paths.Tracked(sizes)
	if _, counted := sizes["written_config_maps"]; !counted {
		t.Errorf("tracked %v, want the ConfigMaps written counted", sizes)
	}
	paths.ForgetRobot(robot.UID)
}
