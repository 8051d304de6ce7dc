# robot-operator: see README.md. `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c
.DEFAULT_GOAL := help

BIN        ?= bin/robot-operator
# The end-to-end tests get a cluster of their own, so that a demo left
# running never interferes with them.
E2E_CLUSTER    := robot-operator-e2e
E2E_KUBECONFIG := $(CURDIR)/_output/e2e-kubeconfig
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
GO_TEST_FLAGS ?=

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build the operator into bin/.
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BIN) .

.PHONY: test
test: unit e2e ## Run the unit tests, then the end-to-end tests on the local cluster.

.PHONY: unit
unit: ## Run the unit tests (no cluster needed).
	go test -race -count=1 $(GO_TEST_FLAGS) ./...

.PHONY: e2e
e2e: ## Run the end-to-end tests against a local cluster of their own.
	CLUSTER_NAME=$(E2E_CLUSTER) KUBECONFIG_OUT=$(E2E_KUBECONFIG) hack/cluster.sh up
	CLUSTER_NAME=$(E2E_CLUSTER) KUBECONFIG=$(E2E_KUBECONFIG) go test -tags e2e -count=1 -timeout 20m -v $(GO_TEST_FLAGS) ./test/e2e/ 2>&1 | tee _output/e2e.log; exit $${PIPESTATUS[0]}

.PHONY: verify
verify: ## Check formatting, vet, and that generated code is up to date.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	go vet ./...
	go vet -tags e2e ./test/...
	hack/verify-codegen.sh

.PHONY: codegen
codegen: ## Regenerate the clientset, listers, informers, deepcopy and the CRD.
	hack/update-codegen.sh

.PHONY: tools
tools: ## Build the local cluster's binaries into the cache (once; ~10 minutes).
	hack/tools.sh

.PHONY: cluster
cluster: ## Start the local cluster (kubeconfig: _output/kubeconfig).
	hack/cluster.sh up

.PHONY: cluster-down
cluster-down: demo-stop ## Remove the local clusters (the demo's and the tests').
	hack/cluster.sh down
	CLUSTER_NAME=$(E2E_CLUSTER) KUBECONFIG_OUT=$(E2E_KUBECONFIG) hack/cluster.sh down

.PHONY: demo
demo: ## Bring up a local cluster, run the operator and a Robot, and show them.
	hack/demo.sh

.PHONY: demo-stop
demo-stop: ## Stop the operator that `make demo` started.
	hack/demo.sh stop

.PHONY: clean
clean: ## Remove build output (not the tool cache).
	rm -rf bin _output
