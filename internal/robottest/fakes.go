package robottest

import (
	"encoding/json"
	"strconv"
	"testing"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	"github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned/fake"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// AnswerStatusApplies makes client answer the status applies of Robots as
// the API server would, with the applied status and a new
// resourceVersion. The fake clientset cannot apply to custom resources
// (kubernetes/kubernetes#126850).
func AnswerStatusApplies(client *fake.Clientset) {
	client.PrependReactor("patch", "robots", func(action core.Action) (bool, runtime.Object, error) {
		patch := action.(core.PatchAction)
		obj, err := client.Tracker().Get(RobotsResource, patch.GetNamespace(), patch.GetName())
		if err != nil {
			return true, nil, err
		}
		robot := obj.(*robotv1beta1.Robot).DeepCopy()
		var applied robotv1beta1.Robot
		if err := json.Unmarshal(patch.GetPatch(), &applied); err != nil {
			return true, nil, err
		}
		robot.Status = applied.Status
		rv, _ := strconv.Atoi(robot.ResourceVersion)
		robot.ResourceVersion = strconv.Itoa(rv + 1)
		return true, robot, client.Tracker().Update(RobotsResource, robot, robot.Namespace)
	})
}

// Fill adds objs to the informer cache indexer.
func Fill[T any](t *testing.T, indexer cache.Indexer, objs ...T) {
	t.Helper()
	for _, obj := range objs {
		if err := indexer.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
}
