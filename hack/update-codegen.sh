#!/usr/bin/env bash
# Regenerates everything derived from the hand-written API types in pkg/apis:
# deepcopy functions, the clientset (with watch and apply configurations),
# listers and informers under pkg/generated, and the CRD under artifacts/crd.
# Never edit the generated files by hand; change the types and run this.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

# The code-generator pinned in go.mod, so the generated code matches client-go.
# `go list -m` names a module's directory only once the module is in the
# module cache, so download it first: a fresh machine has an empty cache.
if [[ -z "${CODEGEN_PKG:-}" ]]; then
	go mod download k8s.io/code-generator
	CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
fi
if [[ ! -f "${CODEGEN_PKG}/kube_codegen.sh" ]]; then
	echo "update-codegen: no kube_codegen.sh in '${CODEGEN_PKG}' (k8s.io/code-generator's directory)" >&2
	exit 1
fi
# kube_codegen.sh installs its generators into GOBIN; keep them out of the
# user's PATH directories.
export GOBIN="${ROOT}/_output/bin"
mkdir -p "${GOBIN}"

# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

MODULE=github.com/robot-operator/robot-operator
BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"

kube::codegen::gen_helpers \
	--boilerplate "${BOILERPLATE}" \
	"${ROOT}/pkg/apis"

kube::codegen::gen_client \
	--with-watch \
	--with-applyconfig \
	--output-dir "${ROOT}/pkg/generated" \
	--output-pkg "${MODULE}/pkg/generated" \
	--boilerplate "${BOILERPLATE}" \
	"${ROOT}/pkg/apis"

# v1beta1 joins the CRD with the conversion webhook that serves it: until
# then the CRD serves and stores v1alpha1 alone.
echo "Generating the CRD into artifacts/crd"
go tool controller-gen \
	crd:crdVersions=v1 \
	paths=./pkg/apis/robot/v1alpha1/... \
	output:crd:dir="${ROOT}/artifacts/crd"

# The chart carries a copy of the CRD.
"${ROOT}/hack/update-chart.sh" >/dev/null
