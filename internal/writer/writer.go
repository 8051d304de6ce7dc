package writer

import (
	"context"
	"fmt"

	"github.com/robot-operator/robot-operator/internal/echo"
	"github.com/robot-operator/robot-operator/internal/observe"
	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/status"
	"github.com/robot-operator/robot-operator/internal/workload"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
	clientset "github.com/robot-operator/robot-operator/pkg/generated/clientset/versioned"
)

// Writer makes the writes of the Robots themselves (their status), and is
// what the writers of the objects they own (Objects) write through: the
// write fence and the Event recorder. It remembers the statuses it wrote:
// the Robots' echo filter.
type Writer struct {
	robots   clientset.Interface
	Recorder record.EventRecorder
	// mayWrite, when set, is asked before every write; with leader
	// election it fails once this process may no longer be the leader.
	mayWrite func() error
	// statuses is the echo filter of the Robots' status writes.
	statuses echo.RecentWrites[*robotv1beta1.Robot]
	// observing, when set, makes the writer observe-only: each write is
	// recorded there, per sync, instead of being sent (observe.go).
	observing *observe.Report
}

// New returns a Writer that writes the Robots through robots, records its
// Events with recorder, and asks mayWrite (when set) before every write.
func New(robots clientset.Interface, recorder record.EventRecorder, mayWrite func() error) *Writer {
	return &Writer{robots: robots, Recorder: recorder, mayWrite: mayWrite}
}

// MayWrite asks the write fence whether this process may write now: nil
// when it may. A request that is not a write but acts on the Robots'
// behalf (the dry run of a change's check) asks it too.
func (w *Writer) MayWrite() error { return w.checkMayWrite() }

// checkMayWrite asks the write fence whether this process may write now.
func (w *Writer) checkMayWrite() error {
	if w.mayWrite == nil {
		return nil
	}
	return w.mayWrite()
}

// ApplyStatus applies status to robot's status subresource and returns the
// Robot as then stored; nil, and no error, when the Robot is gone.
func (w *Writer) ApplyStatus(ctx context.Context, robot *robotv1beta1.Robot, newStatus *robotv1beta1.RobotStatus) (*robotv1beta1.Robot, error) {
	if w.observing != nil {
		// Nothing is written: as for a Robot gone, there is nothing more
		// to report on.
		return nil, nil
	}
	if err := w.checkMayWrite(); err != nil {
		return nil, err
	}
	written, err := w.robots.RobotV1beta1().Robots(robot.Namespace).ApplyStatus(ctx,
		status.ApplyConfiguration(robot, newStatus), metav1.ApplyOptions{FieldManager: workload.FieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		// Deleted meanwhile: nothing left to report on.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("applying status of Robot %s/%s: %w", robot.Namespace, robot.Name, outcome.StatusWriteError(err))
	}
	w.statuses.Remember(written)
	return written, nil
}

// FreshestRobot returns the newer of cached and the Robot as this process
// last wrote its status.
func (w *Writer) FreshestRobot(cached *robotv1beta1.Robot) *robotv1beta1.Robot {
	return w.statuses.Freshest(cached)
}

// IsOwnStatusWrite reports whether robot, just arrived from a watch, is the
// echo of this process's own status write.
func (w *Writer) IsOwnStatusWrite(robot *robotv1beta1.Robot) bool {
	return w.statuses.IsOwnWrite(robot)
}

// RememberStatus records robot as written, for a write made around the
// writer (a test's).
func (w *Writer) RememberStatus(robot *robotv1beta1.Robot) { w.statuses.Remember(robot) }

// ForgetRobot drops what is remembered of the Robot uid, deleted.
func (w *Writer) ForgetRobot(uid types.UID) {
	w.statuses.Forget(uid)
	w.observing.Forget(uid)
}

// RememberedStatuses returns how many Robots the echo filter holds.
func (w *Writer) RememberedStatuses() int { return w.statuses.Len() }

// CheckRobotExists asks the API server whether robot still exists, the
// same Robot (by UID): outcome.ErrRobotGone when not.
func (w *Writer) CheckRobotExists(ctx context.Context, robot *robotv1beta1.Robot) error {
	live, err := w.robots.RobotV1beta1().Robots(robot.Namespace).Get(ctx, robot.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || err == nil && live.UID != robot.UID {
		return outcome.ErrRobotGone
	}
	return err
}
