package app

import (
	"cmp"
	"os"

	"github.com/robot-operator/robot-operator/internal/memlimit"

	"k8s.io/klog/v2"
)

// setMemoryLimit sets the Go runtime's memory limit from the container's
// when opts ask for it, and says what it did. A limit it cannot read leaves
// the runtime as it was: the operator runs as it would without the option.
func setMemoryLimit(logger klog.Logger, opts Options) {
	if !opts.MemoryLimitFromCgroup {
		return
	}
	result, err := memlimit.Apply(cmp.Or(opts.CgroupRoot, memlimit.DefaultRoot), os.Getenv)
	if result.Warning != "" {
		logger.Error(nil, "The container's memory limit is too small", "containerLimit", result.ContainerLimit, "warning", result.Warning)
	}
	switch {
	case err != nil:
		logger.Error(err, "Not setting the Go memory limit")
	case result.Skipped != "":
		logger.Info("Not setting the Go memory limit from the container's", "reason", result.Skipped)
	default:
		logger.Info("Set the Go memory limit from the container's", "containerLimit", result.ContainerLimit,
			"goMemLimit", result.GoLimit)
	}
}
