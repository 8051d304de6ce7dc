//go:build tools

// Package tools pins kwok and kwokctl, which simulate nodes and pods for the
// local test cluster. It is a module of its own so that kwok builds against
// the Kubernetes libraries it was released with.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)
