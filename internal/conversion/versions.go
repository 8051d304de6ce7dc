package conversion

import (
	robotv1alpha1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1alpha1"
	robotv1beta1 "github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1"
)

// Versions are the versions of robot.dev this release serves: the webhook
// converts between them, and the operator reads Robots of either. A CRD
// that stores another was installed by a newer release.
var Versions = []string{robotv1alpha1.SchemeGroupVersion.Version, robotv1beta1.SchemeGroupVersion.Version}
