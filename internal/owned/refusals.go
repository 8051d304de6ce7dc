package owned

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// Refusals remembers, per Robot UID, a write the API server refused for one
// generation of the Robot, and that refusal: the same write would be
// refused again, and only the Robot's next generation may change that. An
// unrelated event (a status update, a resync) then costs no request.
type Refusals struct{ m sync.Map }

// refusal is a write refused for a generation of a Robot.
type refusal struct {
	generation int64
	err        error
}

// Record remembers err as the refusal of a write for robot's generation.
func (r *Refusals) Record(robot *robotv1beta1.Robot, err error) {
	r.m.Store(robot.UID, refusal{generation: robot.Generation, err: err})
}

// At returns the refusal recorded for robot's current generation, if any,
// and forgets one of an earlier generation.
func (r *Refusals) At(robot *robotv1beta1.Robot) error {
	last, ok := r.m.Load(robot.UID)
	if !ok {
		return nil
	}
	if last := last.(refusal); last.generation == robot.Generation {
		return last.err
	}
	r.m.Delete(robot.UID)
	return nil
}

// Forget drops what is remembered of the Robot uid, deleted.
func (r *Refusals) Forget(uid types.UID) { r.m.Delete(uid) }
