package robotctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/robot-operator/robot-operator/internal/workload"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	"github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
)

// Clients are what the commands read and write through: the Robots, and
// the ControllerRevisions that hold their history.
type Clients struct {
	Robots versioned.Interface
	Kube   kubernetes.Interface
}

// history is a Robot as read, with its revisions, oldest first.
type history struct {
	robot     *robotv1beta1.Robot
	revisions []*appsv1.ControllerRevision
	// current is the index in revisions of the revision that holds the
	// Robot's spec: -1 when none does yet (the operator has not recorded
	// the latest change).
	current int
}

// readHistory reads the Robot ns/name and the revisions it controls.
func readHistory(ctx context.Context, clients Clients, ns, name string) (*history, error) {
	robot, err := clients.Robots.RobotV1beta1().Robots(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("Robot %s/%s not found", ns, name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading Robot %s/%s: %w", ns, name, err)
	}
	selector := labels.SelectorFromSet(labels.Set{workload.LabelRobot: name}).String()
	list, err := clients.Kube.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing the revisions of Robot %s/%s: %w", ns, name, err)
	}
	var controlled []*appsv1.ControllerRevision
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], robot) {
			controlled = append(controlled, &list.Items[i])
		}
	}
	h := &history{robot: robot, revisions: workload.SortRevisions(controlled), current: -1}
	if len(h.revisions) == 0 {
		return nil, fmt.Errorf("Robot %s/%s has no history: no ControllerRevision it controls (the operator records one for each spec, once it has synced it)", ns, name)
	}
	for i, revision := range h.revisions {
		spec, err := revisionSpec(revision, false)
		if err != nil {
			return nil, err
		}
		if equality.Semantic.DeepEqual(spec, robot.Spec) {
			h.current = i
		}
	}
	return h, nil
}

// revisionSpec decodes the Robot spec that revision holds. Strict, it
// refuses a spec with fields this release does not know (a newer
// operator's), which writing it back would drop.
func revisionSpec(revision *appsv1.ControllerRevision, strict bool) (robotv1beta1.RobotSpec, error) {
	var spec robotv1beta1.RobotSpec
	decoder := json.NewDecoder(bytes.NewReader(revision.Data.Raw))
	if strict {
		decoder.DisallowUnknownFields()
	}
	if err := decoder.Decode(&spec); err != nil {
		return spec, fmt.Errorf("revision %d (ControllerRevision %s) holds no Robot spec this release of kubectl robot can write back: %w", revision.Revision, revision.Name, err)
	}
	return spec, nil
}

// find returns the revision numbered number.
func (h *history) find(number int64) (*appsv1.ControllerRevision, error) {
	i := slices.IndexFunc(h.revisions, func(r *appsv1.ControllerRevision) bool { return r.Revision == number })
	if i < 0 {
		return nil, fmt.Errorf("Robot %s/%s has no revision %d (its revisions: %s)", h.robot.Namespace, h.robot.Name, number, h.numbers())
	}
	return h.revisions[i], nil
}

// previous returns the revision before the current one: the newest one
// older than the current, or the newest one when the Robot's spec is not
// recorded yet (it is then the spec the Robot had before).
func (h *history) previous() (*appsv1.ControllerRevision, error) {
	switch {
	case h.current < 0:
		return h.revisions[len(h.revisions)-1], nil
	case h.current == 0:
		return nil, fmt.Errorf("Robot %s/%s has no revision before its current one, %d (its revisions: %s)",
			h.robot.Namespace, h.robot.Name, h.revisions[0].Revision, h.numbers())
	}
	return h.revisions[h.current-1], nil
}

// numbers lists the revisions' numbers, oldest first.
func (h *history) numbers() string {
	var numbers []string
	for _, revision := range h.revisions {
		numbers = append(numbers, strconv.FormatInt(revision.Revision, 10))
	}
	return strings.Join(numbers, ", ")
}
