# robot-operator: see README.md. `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c
.DEFAULT_GOAL := help

BIN        ?= bin/robot-operator
# The end-to-end tests get clusters of their own, so that a demo left
# running never interferes with them: E2E_CLUSTER for the tests that run side
# by side, E2E_CLUSTER-exclusive for those that need the operator to
# themselves (hack/e2e.sh). E2E_PARALLEL of the first run at once;
# E2E_SPLIT=0 runs them all on E2E_CLUSTER, the exclusive ones first.
E2E_CLUSTER    := robot-operator-e2e
E2E_KUBECONFIG := $(CURDIR)/_output/e2e-kubeconfig
E2E_PARALLEL   ?= 16
E2E_SPLIT      ?= 1
# The oldest Kubernetes the operator supports (hack/tools/kubernetes-v1.*)
# gets clusters of its own too.
E2E_OLDEST_CLUSTER    := robot-operator-e2e-oldest
E2E_OLDEST_KUBECONFIG := $(CURDIR)/_output/e2e-oldest-kubeconfig
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
REVISION   ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
GO_TEST_FLAGS ?=
BENCH_N       ?= 1000
BENCH_PAIRS   ?= 3
# The benchmark makes a cluster of this name afresh for each phase.
BENCH_CLUSTER ?= robot-operator-bench
FUZZTIME      ?= 60s

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build the operator into bin/.
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$(VERSION) -X main.revision=$(REVISION)" -o $(BIN) .

PLUGIN_BIN ?= bin/kubectl-robot

.PHONY: plugin
plugin: ## Build the kubectl robot plugin into bin/kubectl-robot (on the PATH: kubectl robot history|diff|undo NAME).
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $(PLUGIN_BIN) ./internal/robotctl/kubectl-robot

# The parts of make test, which hack/test.sh runs side by side (each part's
# log in _output/test/PART.log); TEST_PARTS="unit e2e" runs some of them.
TEST_PARTS ?=

.PHONY: test
test: ## Run the unit tests, the monitoring tests, the image, release and chart tests (the chart installed on a cluster), the end-to-end tests on the newest and the oldest supported Kubernetes, the benchmark at N=20, the floods of the webhook and metrics ports and the short fault suite, side by side.
	hack/test.sh $(TEST_PARTS)

.PHONY: unit
unit: ## Run the unit tests (no cluster needed), and the conversions' round trips at full count, which the race detector would slow tenfold.
	go test -race -count=1 $(GO_TEST_FLAGS) ./...
	go test -count=1 -run RoundTrip $(GO_TEST_FLAGS) ./pkg/apis/...

.PHONY: monitoring-test
monitoring-test: ## Check the alerts with promtool and its rule unit tests, and the dashboard's queries (builds promtool once).
	hack/monitoring-test.sh

.PHONY: chart-test
chart-test: ## Check the Helm chart: helm lint, and the objects it renders against artifacts/deploy, deploy-namespaced and monitoring.
	hack/tools.sh cluster helm
	eval "$$(hack/tools.sh env)" && HELM="$$HELM" KUBECTL="$$KUBECTL" go test -tags chart -count=1 $(GO_TEST_FLAGS) ./test/chart/

# The chart's install, upgrade and uninstall get a local cluster of their own.
CHART_CLUSTER    := robot-operator-chart
CHART_KUBECONFIG := $(CURDIR)/_output/chart-kubeconfig
# The operator that chart-e2e, bench and chaos run: they build it, unless
# OPERATOR_BIN names one built from the tree (make test builds it once for
# all its parts).
OPERATOR_BIN ?=

.PHONY: chart-e2e
chart-e2e: $(if $(OPERATOR_BIN),,build) ## Install, upgrade and uninstall the chart on a local cluster of its own, with the operator running.
	hack/tools.sh helm
	CLUSTER_NAME=$(CHART_CLUSTER) KUBECONFIG_OUT=$(CHART_KUBECONFIG) hack/cluster.sh up
	eval "$$(hack/tools.sh env)" && HELM="$$HELM" KUBECTL="$$KUBECTL" KUBECONFIG=$(CHART_KUBECONFIG) \
		AUDIT_LOG=$(HOME)/.kwok/clusters/$(CHART_CLUSTER)/logs/audit.log OPERATOR_BIN=$(or $(OPERATOR_BIN),$(CURDIR)/$(BIN)) \
		go test -tags 'chart install' -count=1 -v -run TestHelmInstallUpgradeUninstall $(GO_TEST_FLAGS) ./test/chart/

# go test fuzzes one target at a time. An input that fails is written to
# testdata/fuzz/<target>/ beside the fuzz test's package; commit it, and every
# go test runs it from then on. Minimizing each new input for the default
# minute would leave a short run little time to fuzz.
.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 60s).
	@for pkg in $$(go list . ./internal/...); do \
		for target in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz: $$pkg $$target for $(FUZZTIME)"; \
			go test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s $(GO_TEST_FLAGS) $$pkg || exit 1; \
		done; \
	done

.PHONY: e2e
e2e: ## Run the end-to-end tests against local clusters of their own (GO_TEST_FLAGS="-run X" picks some; K8S_VERSION=v1.35.4 another Kubernetes).
	E2E_CLUSTER=$(E2E_CLUSTER) E2E_KUBECONFIG=$(E2E_KUBECONFIG) E2E_PARALLEL=$(E2E_PARALLEL) E2E_SPLIT=$(E2E_SPLIT) hack/e2e.sh $(GO_TEST_FLAGS)

.PHONY: e2e-oldest
e2e-oldest: ## Run the end-to-end tests against the oldest supported Kubernetes (1.35), on local clusters of their own.
	$(MAKE) --no-print-directory e2e K8S_VERSION=oldest E2E_CLUSTER=$(E2E_OLDEST_CLUSTER) E2E_KUBECONFIG=$(E2E_OLDEST_KUBECONFIG)

.PHONY: bench
bench: ## Benchmark N = 1000 Robots against the floor in 3 floor/operator pairs (BENCH_N=1000,5000, BENCH_PAIRS=5 for more); writes docs/benchmarks.md (~8 min on an idle 2-core machine, twice that on a busy one).
	go run ./test/bench -cluster $(BENCH_CLUSTER) -n $(BENCH_N) -pairs $(BENCH_PAIRS) -out docs/benchmarks.md -plot docs/benchmark-latency.png

.PHONY: bench-smoke
bench-smoke: ## Run the benchmark once at N=20 (one floor/operator pair): it must complete and print its table.
	go run ./test/bench -cluster $(BENCH_CLUSTER) -n 20 -pairs 1 -idle 5s -restart-settle 5s -unrelated 200 -out _output/bench-smoke.md
	@grep -q '^| \*\*T_ready / floor-ready\*\*' _output/bench-smoke.md || { echo "bench-smoke: no table in _output/bench-smoke.md"; exit 1; }
	@grep -q '^| kube-apiserver CPU per Robot: floor' _output/bench-smoke.md || { echo "bench-smoke: no CPU per Robot in _output/bench-smoke.md"; exit 1; }
	@grep -q "^| … in the floor's phase" _output/bench-smoke.md || { echo "bench-smoke: no floor's conversions in _output/bench-smoke.md"; exit 1; }
	@! grep -E '^\| (conversion webhook calls|… in the floor).*failed' _output/bench-smoke.md || { echo "bench-smoke: the API server's conversions failed in a phase: its webhook did not answer (_output/bench-smoke.md)"; exit 1; }
	@echo "bench-smoke: the benchmark completed and printed its table (_output/bench-smoke.md)"

# The benchmark at scale: not part of make test (hours on a 2-core machine).
# Each N's Robots have 1 replica and a ClusterIP Service, spread over 10
# namespaces; the first pair of each N also churns specs after a restart.
BENCH_SCALE_N        ?= 1000,3000,10000
BENCH_SCALE_PAIRS    ?= 3
BENCH_SCALE_CHURN    ?= 3m
BENCH_SCALE_CLUSTER  ?= robot-operator-bench-scale
BENCH_CONTROLLER_N   ?= 100000
# More flags for either, e.g. BENCH_SCALE_FLAGS=-profile.
BENCH_SCALE_FLAGS    ?=

.PHONY: bench-scale
bench-scale: ## Benchmark N = 1000, 3000 and 10,000 Robots (1 replica and a Service each, over 10 namespaces) against the floor, 3 pairs each, with a restart and 3 minutes of 10 spec changes a second at each N; writes docs/benchmarks-scale.md and its plots (hours; run it on an idle machine).
	go run ./test/bench -cluster $(BENCH_SCALE_CLUSTER) -n $(BENCH_SCALE_N) -pairs $(BENCH_SCALE_PAIRS) -service -namespaces 10 \
		-idle 10s -restart-settle 10s -unrelated 0 -churn $(BENCH_SCALE_CHURN) -churn-rate 10 -timeout 120m \
		-out docs/benchmarks-scale.md -plot docs/benchmark-scale-latency.png -scale-plot docs/benchmark-scale.png $(BENCH_SCALE_FLAGS)

.PHONY: bench-controller-scale
bench-controller-scale: ## Benchmark the controller's own path alone at N = 100,000 Robots (0 replicas, no Service, over 10 namespaces, no floor): its heap per Robot and its relist after a restart; writes docs/benchmarks-controller.md (more than 90 minutes on a 2-core machine, where the cluster's Deployment controller takes over an hour to make them Ready: see docs/benchmarks.md).
	go run ./test/bench -cluster $(BENCH_SCALE_CLUSTER) -n $(BENCH_CONTROLLER_N) -pairs 1 -controller-only -floor=false -namespaces 10 \
		-idle 10s -restart-settle 10s -unrelated 0 -timeout 180m -out docs/benchmarks-controller.md $(BENCH_SCALE_FLAGS)

# Each scenario gets a fresh cluster of its own, named CHAOS_CLUSTER.
# Scenario 8 churns Robots for CHAOS_CHURN (e.g. make chaos CHAOS_CHURN=3m).
CHAOS_CLUSTER   ?= chaos
CHAOS_N         ?= 300
CHAOS_SCENARIOS ?= 1,2,3,4,5,6,7,8,9,10
CHAOS_CHURN     ?= 20m
CHAOS_HOSTILE   ?= 2000

.PHONY: chaos
chaos: ## Break things on purpose (kill the operator, its leader, the API server, etcd; expire its watches; partition the leader; fight it; churn Robots for 20 minutes; 2000 random Robots at the schema's edges; kill every replica serving the conversion webhook while Robots are written through v1alpha1 and v1beta1) with N=300 Robots; check the invariants (docs/reliability.md).
	go run ./test/chaos -cluster $(CHAOS_CLUSTER) -n $(CHAOS_N) -scenarios $(CHAOS_SCENARIOS) -churn $(CHAOS_CHURN) -hostile $(CHAOS_HOSTILE) -out _output/chaos.md

.PHONY: chaos-short
chaos-short: ## The fault suite's scenarios 1, 3, 7 and 10 at N=60, with 15 kills and a 1-minute fight.
	go run ./test/chaos -cluster $(CHAOS_CLUSTER) -n 60 -scenarios 1,3,7,10 -kills 15 -fight 60s -out _output/chaos-short.md

# The floods get a local cluster of their own.
FLOOD_CLUSTER    := robot-operator-flood
FLOOD_KUBECONFIG := $(CURDIR)/_output/flood-kubeconfig

.PHONY: flood
flood: $(if $(OPERATOR_BIN),,build) ## Flood the operator's webhook and metrics ports (huge and many reviews, slow and idle connections, huge paths and made-up tokens, labelled foreign and forged Deployments, slow bodies while v1alpha1 is read) on a local cluster of its own; fails if its peak RSS passes 200 MiB (the shipped limit is 512Mi) or a v1alpha1 read fails.
	CLUSTER_NAME=$(FLOOD_CLUSTER) KUBECONFIG_OUT=$(FLOOD_KUBECONFIG) hack/cluster.sh up
	eval "$$(hack/tools.sh env)" && go run ./test/flood -kubeconfig $(FLOOD_KUBECONFIG) -kubectl "$$KUBECTL" -bin $(or $(OPERATOR_BIN),$(CURDIR)/$(BIN))
	CLUSTER_NAME=$(FLOOD_CLUSTER) KUBECONFIG_OUT=$(FLOOD_KUBECONFIG) hack/cluster.sh down

.PHONY: verify
verify: ## Check formatting, vet, that go.mod is tidy and that generated code is up to date.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	go mod tidy -diff
	go vet ./...
	go vet -tags e2e ./test/...
	go vet -tags chart ./test/chart/
	go vet -tags 'chart install' ./test/chart/
	go vet -tags release ./test/release/
	cd hack/imagebuild && go vet ./...
	hack/verify-codegen.sh

.PHONY: codegen
codegen: ## Regenerate the clientset, listers, informers, deepcopy and the CRD.
	hack/update-codegen.sh

.PHONY: tools
tools: ## Build the local cluster's binaries, promtool and helm into the cache (once; ~10 minutes, ~30 with promtool and helm).
	hack/tools.sh

.PHONY: cluster
cluster: ## Start the local cluster (kubeconfig: _output/kubeconfig).
	hack/cluster.sh up

.PHONY: cluster-down
cluster-down: demo-stop test-clusters-down ## Remove the local clusters (the demo's and the tests').
	hack/cluster.sh down

.PHONY: test-clusters-down
test-clusters-down: ## Remove the local clusters of e2e, e2e-oldest, chart-e2e and flood (make test does when they pass).
	CLUSTER_NAME=$(E2E_CLUSTER) KUBECONFIG_OUT=$(E2E_KUBECONFIG) hack/cluster.sh down
	CLUSTER_NAME=$(E2E_CLUSTER)-exclusive KUBECONFIG_OUT=$(E2E_KUBECONFIG:-kubeconfig=-exclusive-kubeconfig) hack/cluster.sh down
	CLUSTER_NAME=$(E2E_OLDEST_CLUSTER) KUBECONFIG_OUT=$(E2E_OLDEST_KUBECONFIG) hack/cluster.sh down
	CLUSTER_NAME=$(E2E_OLDEST_CLUSTER)-exclusive KUBECONFIG_OUT=$(E2E_OLDEST_KUBECONFIG:-kubeconfig=-exclusive-kubeconfig) hack/cluster.sh down
	CLUSTER_NAME=$(CHART_CLUSTER) KUBECONFIG_OUT=$(CHART_KUBECONFIG) hack/cluster.sh down
	CLUSTER_NAME=robot-operator-flood KUBECONFIG_OUT=$(CURDIR)/_output/flood-kubeconfig hack/cluster.sh down

.PHONY: demo
demo: ## Bring up a local cluster, run the operator and a Robot, and show them.
	hack/demo.sh

.PHONY: demo-stop
demo-stop: ## Stop the operator that `make demo` started.
	hack/demo.sh stop

.PHONY: clean
clean: ## Remove build output (not the tool cache).
	rm -rf bin _output

# ---- The container image and the in-cluster deployment: see "Deploy to a
# cluster" in README.md.

IMAGE_REPO ?= ghcr.io/robot-operator/robot-operator
IMG        ?= $(IMAGE_REPO):$(VERSION)
KUBECTL    ?= kubectl
DEPLOY_DIR ?= artifacts/deploy
# deploy-check and rbac-golden get a local cluster of their own too.
DEPLOY_CLUSTER    := robot-operator-deploy
DEPLOY_KUBECONFIG := $(CURDIR)/_output/deploy-kubeconfig

# The image is built without a container engine (hack/imagebuild): for
# linux/amd64 and linux/arm64, reproducibly (every time in it is the commit's),
# with an SPDX SBOM, as an OCI image layout in IMAGE_LAYOUT (and each
# platform's SBOM as a file in SBOM_DIR, if set).
IMAGE_LAYOUT ?= $(CURDIR)/_output/image
SBOM_DIR     ?=
PLATFORMS    ?= linux/amd64,linux/arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

.PHONY: image
image: ## Build the OCI image (linux/amd64, linux/arm64) into _output/image, with no container engine.
	cd hack/imagebuild && go run . -source $(CURDIR) -out $(IMAGE_LAYOUT) -version $(VERSION) \
		-revision $(REVISION) -platforms $(PLATFORMS) -source-date-epoch $(SOURCE_DATE_EPOCH) \
		$(if $(SBOM_DIR),-sbom-dir $(SBOM_DIR))

.PHONY: image-push
image-push: ## Build the image and push it to IMG (credentials from the Docker config, as `docker login` writes them).
	cd hack/imagebuild && go run . -source $(CURDIR) -out $(IMAGE_LAYOUT) -version $(VERSION) \
		-revision $(REVISION) -platforms $(PLATFORMS) -source-date-epoch $(SOURCE_DATE_EPOCH) -push $(IMG)

.PHONY: image-test
# On a fresh machine the test cross-compiles the operator for two platforms,
# twice, with a cold build cache: past go test's default 10 minutes on a
# busy 2-core machine.
image-test: ## Build the image twice: one digest, the Dockerfile's user, entry point and ports, no shell, an SBOM, the version.
	cd hack/imagebuild && go test -count=1 -timeout 30m $(GO_TEST_FLAGS) .

.PHONY: image-docker
image-docker: ## Build the image IMG from the Dockerfile with docker or podman (fails if neither has an engine).
	IMG=$(IMG) VERSION=$(VERSION) hack/image.sh build

.PHONY: image-docker-push
image-docker-push: ## Push the image IMG that image-docker built.
	IMG=$(IMG) hack/image.sh push

# ---- A release: see CHANGELOG.md and docs/operating.md, "Upgrades".
RELEASE_DIR ?= $(CURDIR)/_output/release

.PHONY: release
release: ## Write a release's files into _output/release (VERSION=vX.Y.Z): install.yaml, install-namespaced.yaml, the chart, the image as an OCI layout with its SBOMs, the kubectl robot plugin for linux/amd64 and arm64, SHA256SUMS; the same bytes every time from one commit.
	VERSION=$(VERSION) REVISION=$(REVISION) IMAGE_REPO=$(IMAGE_REPO) RELEASE_DIR=$(RELEASE_DIR) SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) hack/release.sh

# Where release-push pushes the chart (helm push), and its flags.
CHART_REGISTRY  ?= oci://ghcr.io/robot-operator/charts
HELM_PUSH_FLAGS ?=

.PHONY: release-push
release-push: ## Push the image of _output/release to IMAGE_REPO:VERSION and its chart to CHART_REGISTRY, by the digests its files name (after make release; credentials from docker login and helm registry login).
	VERSION=$(VERSION) IMAGE_REPO=$(IMAGE_REPO) RELEASE_DIR=$(RELEASE_DIR) CHART_REGISTRY=$(CHART_REGISTRY) HELM_PUSH_FLAGS="$(HELM_PUSH_FLAGS)" hack/release.sh push

.PHONY: release-test
release-test: ## Run make release twice: the same SHA256SUMS, then make release-push to a registry of its own, and install.yaml, install-namespaced.yaml and the packaged chart render what artifacts/deploy and deploy-namespaced do, the image pinned by the digest of the image released.
	hack/tools.sh cluster helm
	eval "$$(hack/tools.sh env)" && HELM="$$HELM" KUBECTL="$$KUBECTL" go test -tags release -count=1 -timeout 30m $(GO_TEST_FLAGS) ./test/release/

.PHONY: deploy
deploy: ## Apply DEPLOY_DIR (CRD, RBAC, operator) with image IMG to the current kube context.
	KUBECTL=$(KUBECTL) DEPLOY_DIR=$(DEPLOY_DIR) IMG=$(IMG) hack/deploy.sh apply

.PHONY: undeploy
undeploy: ## Delete what deploy applied, the CRD too: every Robot and its Deployment go with it.
	KUBECTL=$(KUBECTL) DEPLOY_DIR=$(DEPLOY_DIR) hack/deploy.sh delete

.PHONY: deploy-check
deploy-check: ## Check the manifests, Pod Security and RBAC on a local cluster of their own (the e2e tests that do).
	$(MAKE) --no-print-directory e2e E2E_CLUSTER=$(DEPLOY_CLUSTER) E2E_KUBECONFIG=$(DEPLOY_KUBECONFIG) E2E_SPLIT=0 \
		GO_TEST_FLAGS="-run 'TestDeployManifests|TestServiceAccountMayDoNoMore|TestRobotWritesStayInItsNamespace|TestCreateRobot|TestScaleRobot|TestDeletedRobotDeletesDeployment'"

.PHONY: rbac-golden
rbac-golden: ## Regenerate artifacts/deploy/testdata/can-i.golden on that local cluster.
	CLUSTER_NAME=$(DEPLOY_CLUSTER) KUBECONFIG_OUT=$(DEPLOY_KUBECONFIG) hack/cluster.sh up
	KUBECONFIG=$(DEPLOY_KUBECONFIG) hack/rbac-golden.sh

.PHONY: deploy-cluster-down
deploy-cluster-down: ## Remove the local cluster of deploy-check and rbac-golden.
	CLUSTER_NAME=$(DEPLOY_CLUSTER) KUBECONFIG_OUT=$(DEPLOY_KUBECONFIG) hack/cluster.sh down
