package owned

import (
	"fmt"
	"testing"

	"github.com/robot-operator/robot-operator/internal/policy"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// TestPathsWaitForTheGatewayAPIAnswer: until discovery has answered once
// whether the Gateway API is there, the paths have not synced, so that no
// worker starts and no Robot that asks for a route is told, on a guess,
// that the cluster has none. A definite "not there" is an answer too.
func TestPathsWaitForTheGatewayAPIAnswer(t *testing.T) {
	for _, there := range []bool{true, false} {
		f := newPolicyFixture(t, policyRobot())
		f.sources.APIs = &APIs{}
		found := f.sources.APIs.Found(RoutesCRD)
		paths := f.paths(t, policy.Policy{})
		f.syncCaches(t, f.sources.KubeInformers.Apps().V1().Deployments().Informer(), f.sources.KubeInformers.Core().V1().Services().Informer())
		if paths.HasSynced() {
			t.Errorf("synced before discovery answered")
		}
		found.SetAvailable(there)
		if !paths.HasSynced() {
			t.Errorf("not synced once discovery answered that the Gateway API is there: %v", there)
		}
	}
}

// TestPathsWaitForEveryCache: the paths have synced only once the cache of
// every kind always watched has; leaving out any one of them, they have
// not, so that no worker starts on a cache that reads as empty and creates
// again what is there.
func TestPathsWaitForEveryCache(t *testing.T) {
	kinds := []string{"Deployment", "Service", "PodDisruptionBudget", historyKindName}
	for _, unsynced := range append(kinds, "") {
		f := newPolicyFixture(t, policyRobot())
		factory := informers.NewSharedInformerFactory(f.kube, 0)
		sources := f.sources
		sources.KubeInformers, sources.Without = factory, nil
		paths, err := NewPaths(f.deps, sources)
		if err != nil {
			t.Fatal(err)
		}
		caches := map[string]cache.SharedIndexInformer{"Deployment": factory.Apps().V1().Deployments().Informer(),
			"Service": factory.Core().V1().Services().Informer(), "PodDisruptionBudget": factory.Policy().V1().PodDisruptionBudgets().Informer(),
			historyKindName: factory.Apps().V1().ControllerRevisions().Informer()}
		stop := make(chan struct{})
		for _, kind := range kinds {
			if kind != unsynced {
				go caches[kind].Run(stop)
				if !cache.WaitForCacheSync(t.Context().Done(), caches[kind].HasSynced) {
					t.Fatalf("the %s cache did not sync", kind)
				}
			}
		}
		if got, want := paths.HasSynced(), unsynced == ""; got != want {
			t.Errorf("with the %q cache not synced: HasSynced %v, want %v", unsynced, got, want)
		}
		close(stop)
	}
}

// syncCaches runs informers until the test ends, and waits for their caches.
func (f *policyFixture) syncCaches(t *testing.T, informers ...cache.SharedIndexInformer) {
	t.Helper()
	for _, informer := range informers {
		go informer.Run(t.Context().Done())
		if !cache.WaitForCacheSync(t.Context().Done(), informer.HasSynced) {
			t.Fatal("a cache did not sync")
		}
	}
}

// TestOptionalKindsAreHandedToDiscovery: the paths hand the API of each
// optional kind (the HTTPRoute's) to discovery, with its CRD, version and
// informer, and the Robots that want the kind are queued when it is found.
func TestOptionalKindsAreHandedToDiscovery(t *testing.T) {
	robot := policyRobot()
	f := newPolicyFixture(t, robot)
	f.sources.APIs = &APIs{}
	f.paths(t, policy.Policy{})
	watched := f.sources.APIs.Watched()
	if len(watched) != 1 {
		t.Fatalf("handed %d APIs to discovery, want the HTTPRoute's", len(watched))
	}
	api := watched[0]
	if api.CRD != RoutesCRD || api.Version != "v1" || api.Kind != "HTTPRoute" || api.Found != f.sources.APIs.Found(RoutesCRD) ||
		api.Informer != f.sources.GatewayInformers.Gateway().V1().HTTPRoutes().Informer() {
		t.Errorf("handed %+v, want the HTTPRoute's CRD, version v1, its informer and its Discovery", api)
	}
	plain := robot.DeepCopy()
	plain.Name, plain.UID, plain.Spec.HTTP = "plain", "plain-uid", nil
	if err := f.robots.Add(plain); err != nil {
		t.Fatal(err)
	}
	api.Found.SetAvailable(true)
	if fmt.Sprint(f.queued) != fmt.Sprint([]cache.ObjectName{cache.MetaObjectToName(robot)}) {
		t.Errorf("queued %v once the HTTPRoute's API was found, want the Robot that asks for a route alone", f.queued)
	}
}
