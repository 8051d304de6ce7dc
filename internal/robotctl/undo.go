package robotctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/robot-operator/robot-operator/internal/workload"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// DefaultFieldManager is the field manager of an undo when no one but the
// operator has written the Robot's spec.
const DefaultFieldManager = "kubectl-robot"

// UndoOptions say which revision an undo goes back to, and as whom.
type UndoOptions struct {
	// ToRevision is the number of the revision to go back to; 0 is the one
	// before the current one.
	ToRevision int64
	// FieldManager is the field manager of the write; empty is the manager
	// that owns most of the Robot's spec.
	FieldManager string
}

// Undo writes the spec of a revision of the Robot ns/name back to the
// Robot, as its user would: an update of the Robot read, on the
// resourceVersion read (read again and retried on a conflict), by the
// field manager that owns most of its spec, so that the change is theirs
// and a GitOps tool sees it as such. It writes nothing when the revision
// is the current spec already.
func Undo(ctx context.Context, clients Clients, ns, name string, options UndoOptions, out io.Writer) error {
	var message string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		h, err := readHistory(ctx, clients, ns, name)
		if err != nil {
			return err
		}
		var target *appsv1.ControllerRevision
		if options.ToRevision == 0 {
			target, err = h.previous()
		} else {
			target, err = h.find(options.ToRevision)
		}
		if err != nil {
			return err
		}
		spec, err := revisionSpec(target, true)
		if err != nil {
			return err
		}
		robot := h.robot.DeepCopy()
		if equality.Semantic.DeepEqual(spec, robot.Spec) {
			message = fmt.Sprintf("robot.robot.dev/%s skipped: revision %d is its current spec\n", name, target.Revision)
			return nil
		}
		manager := options.FieldManager
		if manager == "" {
			manager = SpecManager(robot)
		}
		robot.Spec = spec
		if _, err := clients.Robots.RobotV1beta1().Robots(ns).Update(ctx, robot, metav1.UpdateOptions{FieldManager: manager}); err != nil {
			return err
		}
		message = fmt.Sprintf("robot.robot.dev/%s rolled back to revision %d (field manager %s)\n", name, target.Revision, manager)
		return nil
	})
	if err != nil {
		return err
	}
	_, err = io.WriteString(out, message)
	return err
}

// SpecManager returns the field manager that owns most of robot's spec in
// its managedFields (the newest of those that own as many; the operator
// never counts), or DefaultFieldManager when none owns any of it.
func SpecManager(robot *robotv1beta1.Robot) string {
	best, most := DefaultFieldManager, 0
	var newest metav1.Time
	for _, entry := range robot.ManagedFields {
		if entry.Manager == workload.FieldManager || entry.Subresource != "" || entry.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(entry.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		spec, _ := fields["f:spec"].(map[string]any)
		n := countFields(spec)
		if n > most || (n == most && n > 0 && entry.Time != nil && newest.Before(entry.Time)) {
			best, most = entry.Manager, n
			if entry.Time != nil {
				newest = *entry.Time
			}
		}
	}
	return best
}

// countFields counts the fields, list items and values in a tree of
// managedFields (each key but ".", which stands for its parent).
func countFields(tree map[string]any) int {
	n := 0
	for key, value := range tree {
		if key == "." {
			continue
		}
		n++
		if sub, ok := value.(map[string]any); ok {
			n += countFields(sub)
		}
	}
	return n
}
