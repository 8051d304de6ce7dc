package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// DefaultRevisionHistoryLimit is how many ControllerRevisions of a Robot's
// specs are kept when the operator is not told otherwise.
const DefaultRevisionHistoryLimit = 10

// revisionNameMax is the longest name of an object: a DNS subdomain.
const revisionNameMax = 253

// RevisionData returns the data of the ControllerRevision of robot's
// current spec: the spec, in v1beta1, as JSON.
func RevisionData(robot *robotv1beta1.Robot) ([]byte, error) {
	return json.Marshal(robot.Spec)
}

// RevisionName returns the name of the ControllerRevision that holds data
// for robot: the Robot's name and a short hash of data, so that the same
// spec has the same name each time it comes back.
func RevisionName(robot *robotv1beta1.Robot, data []byte) string {
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:5])
	prefix := robot.Name
	if len(prefix) > revisionNameMax-len(hash)-1 {
		prefix = prefix[:revisionNameMax-len(hash)-1]
	}
	return prefix + "-" + hash
}

// NewRevision returns the ControllerRevision of robot's current spec,
// numbered revision: labelled as the Robot's other objects, controlled by
// the Robot, so that deleting the Robot deletes its history.
func NewRevision(robot *robotv1beta1.Robot, revision int64) (*appsv1.ControllerRevision, error) {
	data, err := RevisionData(robot)
	if err != nil {
		return nil, err
	}
	return newRevision(robot, data, revision), nil
}

func newRevision(robot *robotv1beta1.Robot, data []byte, revision int64) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:      RevisionName(robot, data),
			Namespace: robot.Namespace,
			Labels:    ObjectLabels(robot),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         robotv1beta1.SchemeGroupVersion.String(),
				Kind:               "Robot",
				Name:               robot.Name,
				UID:                robot.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: revision,
	}
}

// RevisionPlan is what brings a Robot's history to its current spec: at
// most one of Create and Renumber, then Delete. The zero plan writes
// nothing.
type RevisionPlan struct {
	// Current is the revision of the Robot's current spec, as it is once
	// the plan is carried out.
	Current *appsv1.ControllerRevision
	// Create is a revision to create: the current spec is new.
	Create *appsv1.ControllerRevision
	// Renumber is an existing revision, given the next number: the spec
	// came back to one it had before. Its data never changes (the API
	// server refuses it); its number does, as a StatefulSet's does.
	Renumber *appsv1.ControllerRevision
	// Delete are the names of the oldest revisions beyond the limit.
	Delete []string
}

// Writes reports whether the plan writes anything.
func (p RevisionPlan) Writes() bool {
	return p.Create != nil || p.Renumber != nil || len(p.Delete) > 0
}

// PlanRevisions returns what brings the history of robot, whose revisions
// are existing (those it controls, in any order), to its current spec,
// keeping at most limit revisions (at least the current one). The numbers
// grow by one from the highest existing one, so that a Robot whose history
// was pruned does not reuse a number.
func PlanRevisions(robot *robotv1beta1.Robot, existing []*appsv1.ControllerRevision, limit int) (RevisionPlan, error) {
	data, err := RevisionData(robot)
	if err != nil {
		return RevisionPlan{}, err
	}
	revisions := SortRevisions(existing)
	var highest int64
	if n := len(revisions); n > 0 {
		highest = revisions[n-1].Revision
	}
	name := RevisionName(robot, data)
	var plan RevisionPlan
	for _, revision := range revisions {
		if revision.Name != name {
			continue
		}
		// A cache may keep no revision's data (its name is the hash of
		// it): the check is for a revision read whole.
		if len(revision.Data.Raw) > 0 && !bytes.Equal(revision.Data.Raw, data) {
			return RevisionPlan{}, fmt.Errorf("ControllerRevision %s holds another spec than the one its name is the hash of", name)
		}
		plan.Current = revision
		if revision.Revision != highest {
			renumbered := revision.DeepCopy()
			renumbered.Revision = highest + 1
			// Sent whole: the API server refuses a change of the data.
			renumbered.Data = runtime.RawExtension{Raw: data}
			plan.Current, plan.Renumber = renumbered, renumbered
		}
	}
	if plan.Current == nil {
		plan.Create = newRevision(robot, data, highest+1)
		plan.Current = plan.Create
	}
	plan.Delete = pruned(revisions, plan.Current.Name, max(limit, 1))
	return plan, nil
}

// pruned returns the names of the oldest of revisions (sorted, oldest
// first) beyond limit, once current is the newest: never current.
func pruned(revisions []*appsv1.ControllerRevision, current string, limit int) []string {
	var older []string
	for _, revision := range revisions {
		if revision.Name != current {
			older = append(older, revision.Name)
		}
	}
	if excess := len(older) + 1 - limit; excess > 0 {
		return older[:excess]
	}
	return nil
}

// SortRevisions returns revisions oldest first: by number, then by name.
func SortRevisions(revisions []*appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	sorted := append([]*appsv1.ControllerRevision(nil), revisions...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Revision != sorted[j].Revision {
			return sorted[i].Revision < sorted[j].Revision
		}
		return sorted[i].Name < sorted[j].Name
	})
	return sorted
}
