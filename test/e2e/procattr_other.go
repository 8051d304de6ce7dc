//go:build e2e && !linux

package e2e

import "os/exec"

// stopWithParent does nothing where the kernel cannot stop a child with its
// parent: an interrupted run may leave the operator running there.
func stopWithParent(*exec.Cmd) {}
