//go:build tools

// Package tools pins helm, which lints the chart in artifacts/chart and
// installs, upgrades and uninstalls it in the end-to-end tests. It is a
// module of its own: Helm's dependency graph shares little with the other
// tools and pins its own Kubernetes libraries.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
