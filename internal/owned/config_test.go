package owned

import (
	"context"
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
	"github.com/robot-operator/robot-operator/internal/transform"
	"github.com/robot-operator/robot-operator/internal/workload"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	robotfake "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/fake"
	robotinformers "github.com/robot-operator/robot-operator/pkg/generated/informers/externalversions"
)

// configRobot returns a Robot of the namespace "team" whose pods read the
// ConfigMap configMap (by envFrom) and, when set, the Secret secret (by a
// volume); rolling on their changes as rolls says.
func configRobot(name, configMap, secret string, rolls *bool) *robotv1beta1.Robot {
	robot := robottest.NewRobot(name, 1)
	robot.Namespace = "team"
	robot.Spec.RollOnConfigChange = rolls
	robot.Spec.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}
	if secret != "" {
		robot.Spec.Volumes = []robotv1beta1.RobotVolume{{Name: "s", Secret: &corev1.SecretVolumeSource{SecretName: secret}}}
	}
	return robot
}

// metadataObject is the metadata of a ConfigMap or Secret of "team".
func metadataObject(kind, name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID("uid-" + name),
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "data"}}}
}

// configFixture is a Config over a Robot cache and a ConfigMap metadata
// informer fed by source; the Robots it queued are in queued.
type configFixture struct {
	config     *Config
	source     *fcache.FakeControllerSource
	configMaps cache.SharedIndexInformer
	mu         sync.Mutex
	queued     []string
	// configMapsChanged are the ConfigMaps the hook was told of, as
	// namespace/name.
	configMapsChanged []string
}

func newConfigFixture(t *testing.T, secrets bool, robots ...*robotv1beta1.Robot) *configFixture {
	t.Helper()
	f := &configFixture{source: fcache.NewFakeControllerSource()}
	t.Cleanup(f.source.Shutdown)
	robotInformer := robotinformers.NewSharedInformerFactory(robotfake.NewClientset(), 0).Robot().V1beta1().Robots().Informer()
	if err := robotInformer.AddIndexers(cache.Indexers{ConfigIndex: ConfigIndexFunc}); err != nil {
		t.Fatal(err)
	}
	for _, robot := range robots {
		if err := robotInformer.GetIndexer().Add(robot); err != nil {
			t.Fatal(err)
		}
	}
	f.source.Add(metadataObject("ConfigMap", "shared"))
	f.configMaps = cache.NewSharedIndexInformer(f.source, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	if err := f.configMaps.SetTransform(transform.ObjectMetadata); err != nil {
		t.Fatal(err)
	}
	var secretInformer cache.SharedIndexInformer
	if secrets {
		secretSource := fcache.NewFakeControllerSource()
		t.Cleanup(secretSource.Shutdown)
		secretSource.Add(metadataObject("Secret", "db"))
		secretInformer = cache.NewSharedIndexInformer(secretSource, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	}
	deps := Deps{Enqueue: func(key cache.ObjectName) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.queued = append(f.queued, key.Name)
	}}
	configMapChanged := func(namespace, name string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.configMapsChanged = append(f.configMapsChanged, namespace+"/"+name)
	}
	var err error
	if f.config, err = NewConfig(deps, robotInformer.GetIndexer(), f.configMaps, secretInformer, configMapChanged); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go f.configMaps.Run(stop)
	if secretInformer != nil {
		go secretInformer.Run(stop)
	}
	if !cache.WaitForCacheSync(stop, f.config.HasSynced) {
		t.Fatal("the config caches did not sync")
	}
	f.takeQueued() // the initial list's adds
	return f
}

// takeQueued returns the names of the Robots queued since it was last
// called, sorted.
func (f *configFixture) takeQueued() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	queued := f.queued
	f.queued = nil
	slices.Sort(queued)
	return slices.Compact(queued)
}

// waitQueued waits until a Robot is queued, and returns those queued.
func (f *configFixture) waitQueued(t *testing.T) []string {
	t.Helper()
	var queued []string
	_ = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		queued = append(queued, f.takeQueued()...)
		return len(queued) > 0, nil
	})
	return queued
}

func TestConfigIndexFunc(t *testing.T) {
	for _, tt := range []struct {
		name  string
		robot *robotv1beta1.Robot
		want  []string
	}{
		{name: "rolls", robot: configRobot("a", "shared", "db", ptr.To(true)), want: []string{"ConfigMap/team/shared", "Secret/team/db"}},
		{name: "does not roll", robot: configRobot("a", "shared", "db", ptr.To(false))},
		{name: "unset", robot: configRobot("a", "shared", "db", nil)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ConfigIndexFunc(tt.robot)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("ConfigIndexFunc = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestConfigChangeQueuesTheRobotsThatRoll checks that a ConfigMap's change
// queues the Robots that roll on it, not one that reads it without rolling
// nor one that reads another, and changes their digest.
func TestConfigChangeQueuesTheRobotsThatRoll(t *testing.T) {
	rolls, other, stays := configRobot("rolls", "shared", "", ptr.To(true)), configRobot("other", "other", "", ptr.To(true)), configRobot("stays", "shared", "", nil)
	f := newConfigFixture(t, false, rolls, other, stays)
	before, _ := f.config.Digest(rolls)
	if before == "" {
		t.Fatal("a Robot that rolls on a ConfigMap it reads has no digest")
	}
	if digest, _ := f.config.Digest(stays); digest != "" {
		t.Errorf("a Robot that does not roll has the digest %s", digest)
	}
	again, _ := f.config.Digest(rolls)
	if again != before {
		t.Errorf("the digest of unchanged config changed: %s, then %s", before, again)
	}

	f.source.Modify(metadataObject("ConfigMap", "shared"))
	if got := f.waitQueued(t); !slices.Equal(got, []string{"rolls"}) {
		t.Errorf("queued %q after the ConfigMap changed, want [rolls]", got)
	}
	after, _ := f.config.Digest(rolls)
	if after == before {
		t.Errorf("the digest did not change with the ConfigMap: %s", after)
	}
	deployment, err := f.config.desiredDeployment(rolls)
	if err != nil {
		t.Fatal(err)
	}
	if got := deployment.Spec.Template.Annotations[workload.AnnotationConfigDigest]; got != after {
		t.Errorf("the desired Deployment's digest is %q, want %q", got, after)
	}

	f.source.Delete(metadataObject("ConfigMap", "other"))
	if got := f.waitQueued(t); !slices.Equal(got, []string{"other"}) {
		t.Errorf("queued %q after the other ConfigMap was deleted, want [other]", got)
	}
}

// TestConfigMapChangeReachesThePreflight checks that every new version of a
// ConfigMap is handed to the hook that forgets the check's refusals it
// caused (Paths.ConfigMapChanged), whether or not a Robot rolls on it: a
// change refused for a missing key of a ConfigMap is checked again once the
// ConfigMap is fixed, for any Robot. A resync is not.
func TestConfigMapChangeReachesThePreflight(t *testing.T) {
	f := newConfigFixture(t, false, configRobot("stays", "shared", "", nil))
	f.mu.Lock()
	f.configMapsChanged = nil // the initial list's adds
	f.mu.Unlock()
	f.source.Modify(metadataObject("ConfigMap", "shared"))
	var got []string
	_ = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		got = slices.Clone(f.configMapsChanged)
		return len(got) > 0, nil
	})
	if !slices.Equal(got, []string{"team/shared"}) {
		t.Errorf("the hook was told of %q after the ConfigMap changed, want [team/shared]", got)
	}
}

// TestConfigResyncQueuesNobody checks that an update with no new version
// (a resync) queues nothing.
func TestConfigResyncQueuesNobody(t *testing.T) {
	rolls := configRobot("rolls", "shared", "", ptr.To(true))
	source := fcache.NewFakeControllerSource()
	defer source.Shutdown()
	source.Add(metadataObject("ConfigMap", "shared"))
	informer := cache.NewSharedIndexInformer(source, &metav1.PartialObjectMetadata{}, time.Millisecond, cache.Indexers{})
	robots := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{ConfigIndex: ConfigIndexFunc})
	if err := robots.Add(rolls); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	queued := 0
	config, err := NewConfig(Deps{Enqueue: func(cache.ObjectName) { mu.Lock(); queued++; mu.Unlock() }}, robots, informer, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Another handler with a resync of its own makes the informer resync.
	resynced := make(chan struct{}, 1)
	if _, err := informer.AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ interface{}) {
		select {
		case resynced <- struct{}{}:
		default:
		}
	}}, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go informer.Run(stop)
	if !cache.WaitForCacheSync(stop, config.HasSynced) {
		t.Fatal("the cache did not sync")
	}
	mu.Lock()
	queued = 0 // the initial list's add
	mu.Unlock()
	// Two, so that this Config's handler has had the first.
	for range 2 {
		<-resynced
	}
	mu.Lock()
	defer mu.Unlock()
	if queued != 0 {
		t.Errorf("resyncs queued the Robot %d times, want none", queued)
	}
}

// TestConfigSecretsNotWatched checks that a Robot rolling on config whose
// pods read a Secret the operator may not watch says so, and that its
// ConfigMap still counts.
func TestConfigSecretsNotWatched(t *testing.T) {
	withSecret, withoutSecret := configRobot("with", "shared", "db", ptr.To(true)), configRobot("without", "shared", "", ptr.To(true))
	notRolling := configRobot("not-rolling", "shared", "db", nil)
	f := newConfigFixture(t, false, withSecret, withoutSecret, notRolling)

	err := f.config.NotWatched(withSecret)
	var notAllowed *outcome.NotAllowedError
	if !errors.As(err, &notAllowed) || notAllowed.Reason != robotv1beta1.ReasonConfigNotWatched || !strings.Contains(err.Error(), "Secrets db") {
		t.Errorf("NotWatched = %v, want %s naming Secrets db", err, robotv1beta1.ReasonConfigNotWatched)
	}
	for _, robot := range []*robotv1beta1.Robot{withoutSecret, notRolling} {
		if err := f.config.NotWatched(robot); err != nil {
			t.Errorf("NotWatched(%s) = %v, want nil", robot.Name, err)
		}
	}
	digest, unwatched := f.config.Digest(withSecret)
	if want := []workload.ConfigRef{{Kind: workload.SecretKind, Name: "db"}}; !slices.Equal(unwatched, want) {
		t.Errorf("unwatched %v, want %v", unwatched, want)
	}
	if onlyConfigMap, _ := f.config.Digest(withoutSecret); digest != onlyConfigMap {
		t.Errorf("the digest with an unwatched Secret is %s, want the ConfigMap's alone, %s", digest, onlyConfigMap)
	}
	f.source.Modify(metadataObject("ConfigMap", "shared"))
	if got := f.waitQueued(t); !slices.Equal(got, []string{"with", "without"}) {
		t.Errorf("queued %q after the ConfigMap changed, want [with without]", got)
	}

	// Watched, the Secret counts.
	watched := newConfigFixture(t, true, withSecret, withoutSecret)
	if err := watched.config.NotWatched(withSecret); err != nil {
		t.Errorf("NotWatched = %v with the Secret watched, want nil", err)
	}
	withDigest, _ := watched.config.Digest(withSecret)
	if onlyConfigMap, _ := watched.config.Digest(withoutSecret); withDigest == onlyConfigMap {
		t.Errorf("the watched Secret is not in the digest %s", withDigest)
	}
}

// TestPathsRollOnConfig: through the paths, a converged Robot rolling on
// config syncs with no write, and says ConfigNotWatched for its Secret the
// operator may not watch; the config has synced only once its cache has;
// a change of its ConfigMap is applied to the Deployment.
func TestPathsRollOnConfig(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	robot := policyRobot()
	robot.Spec.HTTP = nil
	robot.Spec.RollOnConfigChange = ptr.To(true)
	robot.Spec.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}}
	robot.Spec.Volumes = []robotv1beta1.RobotVolume{{Name: "s", Secret: &corev1.SecretVolumeSource{SecretName: "db"}}}
	f := newPolicyFixture(t, robot)
	if err := f.robots.AddIndexers(cache.Indexers{ConfigIndex: ConfigIndexFunc}); err != nil {
		t.Fatal(err)
	}
	source := fcache.NewFakeControllerSource()
	defer source.Shutdown()
	source.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: robot.Namespace, Name: "shared", UID: "cm-1"}})
	configMaps := cache.NewSharedIndexInformer(source, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	f.sources.ConfigMaps, f.sources.RobotIndexer = configMaps, f.robots
	paths := f.paths(t, policy.Policy{})
	if paths.config.HasSynced() {
		t.Error("the config has synced before its cache")
	}
	f.syncCaches(t, configMaps)
	if !paths.config.HasSynced() {
		t.Error("the config has not synced once its cache has")
	}

	// The Robot's Deployment and Service as the API server holds them once
	// applied.
	desired, err := paths.config.desiredDeployment(robot)
	deployment, service := robottest.LiveDeploymentOf(t, desired, err), liveService(t, robot)
	first := deployment.Spec.Template.Annotations[workload.AnnotationConfigDigest]
	if first == "" {
		t.Fatalf("the Deployment's template has no config digest: %v", deployment.Spec.Template.Annotations)
	}
	for _, object := range []runtime.Object{deployment, service} {
		if err := f.kube.Tracker().Add(object); err != nil {
			t.Fatal(err)
		}
	}
	objects := Objects{Deployment: deployment, Service: service}
	f.cache(t, objects)
	converged(robot, objects)

	_, err = paths.Sync(ctx, robot)
	refusedFor(t, err, robotv1beta1.ReasonConfigNotWatched)
	if writes := f.writes(); len(writes) != 0 {
		t.Errorf("writes %v with the config unchanged, want none", writes)
	}

	source.Modify(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: robot.Namespace, Name: "shared", UID: "cm-1"}})
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		digest, _ := paths.config.Digest(robot)
		return digest != first, nil
	}); err != nil {
		t.Fatal("the digest did not follow the ConfigMap's change")
	}
	objects, err = paths.Sync(ctx, robot)
	refusedFor(t, err, robotv1beta1.ReasonConfigNotWatched)
	if got := fmt.Sprint(f.writes()); got != "[patch deployments patch deployments]" && got != "[patch deployments]" {
		t.Errorf("writes %s after the ConfigMap changed, want the Deployment applied", got)
	}
	stored, err := f.kube.AppsV1().Deployments(robot.Namespace).Get(ctx, objects.Deployment.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := stored.Spec.Template.Annotations[workload.AnnotationConfigDigest]; got == first || got == "" {
		t.Errorf("the Deployment's config digest is %q after the change, before %q (returned: %q)", got, first, objects.Deployment.Spec.Template.Annotations)
	}
}
