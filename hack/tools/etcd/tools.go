//go:build tools

// Package tools pins etcd for the local test cluster. It is a module of its
// own because Kubernetes' module graph would raise etcd to a newer minor.
package tools

import _ "go.etcd.io/etcd/server/v3"
