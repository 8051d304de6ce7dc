// Command kubectl-robot is the kubectl robot plugin (internal/robotctl):
// on the PATH, kubectl runs it for `kubectl robot ...`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/robot-operator/robot-operator/internal/robotctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := robotctl.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
