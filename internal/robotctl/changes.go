package robotctl

import (
	"encoding/json"

	"github.com/robot-operator/robot-operator/internal/workload"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// Changes returns what changed from the spec previous to the spec next,
// both as a revision's JSON, one short phrase each, as the Robot's Ready
// message names them (workload.SpecChanges): "image nginx:1.27 → 1.28",
// "env LOG_LEVEL added", "args changed".
func Changes(previous, next []byte) ([]string, error) {
	var before, after robotv1beta1.RobotSpec
	if err := json.Unmarshal(previous, &before); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(next, &after); err != nil {
		return nil, err
	}
	return workload.SpecChanges(&before, &after), nil
}
