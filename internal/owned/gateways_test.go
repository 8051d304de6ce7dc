package owned

import (
	"slices"
	"testing"

	"github.com/robot-operator/robot-operator/internal/robottest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// TestGateways: whether a Gateway exists is known only once the cache says
// it synced, and only for the namespace it holds; a Gateway made or
// deleted queues the Robots whose routes attach to it, and no other.
func TestGateways(t *testing.T) {
	robot := robottest.NewRobot("site", 1)
	robot.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "public"}, {Name: "shared", Namespace: "infra"}}}
	f := newPathFixture(t, robot)
	other := robottest.NewRobot("other", 1)
	other.Spec.HTTP = &robotv1beta1.RobotHTTP{Gateways: []robotv1beta1.RobotGateway{{Name: "internal"}}}
	if err := f.robots.Add(other); err != nil {
		t.Fatal(err)
	}
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{}, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	found := &Discovery{}
	gateways, err := NewGateways(f.deps, informer, "", found)
	if err != nil {
		t.Fatal(err)
	}
	public := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "public", Namespace: robot.Namespace}}
	if err := informer.GetIndexer().Add(public); err != nil {
		t.Fatal(err)
	}
	if _, known := gateways.Exists(robot.Namespace, "public"); known {
		t.Error("known before the cache said it synced")
	}
	found.SetAvailable(true)
	if got := f.queued; len(got) != 2 {
		t.Errorf("queued %v once the cache synced, want both Robots that ask for a route", got)
	}
	for _, tt := range []struct {
		namespace, name string
		exists          bool
	}{{robot.Namespace, "public", true}, {"infra", "shared", false}} {
		if exists, known := gateways.Exists(tt.namespace, tt.name); exists != tt.exists || !known {
			t.Errorf("Exists(%s/%s) = %v, %v; want %v, known", tt.namespace, tt.name, exists, known, tt.exists)
		}
	}
	scoped := &Gateways{informer: informer, namespace: robot.Namespace, found: found}
	if _, known := scoped.Exists("infra", "shared"); known {
		t.Error("a cache of one namespace claims to know another's")
	}

	f.queued = nil
	gateways.changed(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "infra"}})
	gateways.changed(cache.DeletedFinalStateUnknown{Key: "default/public", Obj: public})
	gateways.changed(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: robot.Namespace}})
	if want := []cache.ObjectName{cache.MetaObjectToName(robot), cache.MetaObjectToName(robot)}; !slices.Equal(f.queued, want) {
		t.Errorf("queued %v, want %v: the Robot whose route attaches to each Gateway, and no other", f.queued, want)
	}
}
