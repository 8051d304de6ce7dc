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

echo "Generating the CRD into artifacts/crd"
go tool controller-gen \
	crd:crdVersions=v1 \
	paths=./pkg/apis/... \
	output:crd:dir="${ROOT}/artifacts/crd"

# Without v1alpha1's descriptions: with them, the CRD is too large for
# client-side `kubectl apply` (hack/trimcrd says why).
go run ./hack/trimcrd "${ROOT}/artifacts/crd/robot.dev_robots.yaml" v1alpha1

# controller-gen writes no conversion: the versions are converted by the
# operator's webhook, behind the Service the manifests ship in the
# robot-operator namespace. The operator points it at its own namespace and
# adds the CA when it runs elsewhere; a local cluster, where the operator
# runs on the host, gets a url instead (hack/cluster.sh).
crd="${ROOT}/artifacts/crd/robot.dev_robots.yaml"
awk '
	{ print }
	/^spec:$/ && !done {
		print "  conversion:"
		print "    strategy: Webhook"
		print "    webhook:"
		print "      clientConfig:"
		print "        service:"
		print "          name: robot-operator-webhook"
		print "          namespace: robot-operator"
		print "          path: /convert"
		print "          port: 443"
		print "      conversionReviewVersions:"
		print "      - v1"
		done = 1
	}' "${crd}" >"${crd}.tmp"
mv "${crd}.tmp" "${crd}"

# The chart carries a copy of the CRD.
"${ROOT}/hack/update-chart.sh" >/dev/null
