package workload

import (
	"fmt"

	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// UndecodableSpecAnnotation marks, in the operator's memory only, a Robot
// whose spec could not be decoded; its value says why. The key is not a valid
// annotation key, so no Robot the API server stores can carry it, and the
// operator never sends it back: it writes a Robot's status alone.
const UndecodableSpecAnnotation = "robot-operator: undecodable spec"

// UndecodableSpec returns the error for a Robot whose spec could not be
// decoded, or nil.
func UndecodableSpec(robot *robotv1beta1.Robot) error {
	reason, ok := robot.Annotations[UndecodableSpecAnnotation]
	if !ok {
		return nil
	}
	return fmt.Errorf("%s; the operator leaves the Robot's Deployment as it is until the Robot is corrected", reason)
}
