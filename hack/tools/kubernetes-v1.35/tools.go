//go:build tools

// Package tools pins, for the oldest supported Kubernetes minor, the control-plane commands that the local
// test cluster runs. Nothing imports it; the blank imports keep the commands
// in this module's graph so that `go build` can find them at the pinned
// version.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
