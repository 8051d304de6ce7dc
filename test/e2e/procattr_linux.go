//go:build e2e && linux

package e2e

import (
	"os/exec"
	"syscall"
)

// stopWithParent makes the kernel send cmd SIGTERM when the test process
// dies, so that an interrupted or timed-out run leaves no operator behind,
// still writing to the cluster.
func stopWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
