package owned

import (
	"context"

	"github.com/robot-operator/robot-operator/internal/outcome"
	"github.com/robot-operator/robot-operator/internal/workload"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// held returns why nothing may be written to what robot owns, or nil when
// its objects are to be synced as it asks. Paths.Sync then returns them as
// the caches hold them, for the status, with that error.
func (p *Paths) held(ctx context.Context, robot *robotv1beta1.Robot) error {
	if workload.Paused(robot) {
		// A person holds what the Robot owns as it is: nothing is written
		// to it, whatever drifted or went missing. The status still
		// reports it as the caches hold it, and is written only when that
		// changes, so a paused Robot costs no request per sync.
		return &outcome.PausedError{Deployment: workload.DeploymentName(robot)}
	}
	fields := p.newerFields.Of(robot.UID)
	if len(fields) == 0 {
		return nil
	}
	// A newer release's CRD let a client write fields this release cannot
	// read, and decoding dropped them: an apply of what is left would
	// remove them from what the Robot owns. Nothing is written to it; the
	// status, which is this release's alone, says why. The log says it
	// once, until the status does.
	if synced := meta.FindStatusCondition(robot.Status.Conditions, robotv1beta1.ConditionSynced); synced == nil || synced.Reason != robotv1beta1.ReasonNewerAPI {
		klog.FromContext(ctx).Info("Not writing what the Robot owns: it holds fields this release does not know", "fields", fields)
	}
	return &outcome.NewerFieldsError{Fields: fields}
}
