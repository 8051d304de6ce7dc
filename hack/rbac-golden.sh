#!/usr/bin/env bash
# Regenerates artifacts/deploy/testdata/can-i.golden: what the API server says
# the operator's ServiceAccount may do, in the operator's namespace, once
# artifacts/deploy is applied. The e2e test TestServiceAccountMayDoNoMore
# compares the cluster against it.
#
# Usage: hack/rbac-golden.sh          apply artifacts/deploy, then write the file
#        hack/rbac-golden.sh check    apply, then fail if the file differs
#
# Environment: KUBECONFIG (a cluster you may apply to: it deploys the operator
# there; `make rbac-golden` uses a local cluster of its own), KUBECTL
# (default: the cluster's kubectl from hack/tools.sh; the output's layout can
# change with kubectl's version).
#
# The list includes what every authenticated user may do (self-subject
# reviews, discovery): it is what the cluster says.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${KUBECONFIG:?set KUBECONFIG to the kubeconfig of the cluster}"
export KUBECONFIG
if [[ -z "${KUBECTL:-}" ]]; then
	eval "$("${ROOT}/hack/tools.sh" env)"
fi
GOLDEN="${ROOT}/artifacts/deploy/testdata/can-i.golden"
SA_NAMESPACE=robot-operator
SA_USER="system:serviceaccount:${SA_NAMESPACE}:robot-operator"

"${KUBECTL}" apply -k "${ROOT}/artifacts/deploy" >/dev/null
got=$(mktemp)
trap 'rm -f "${got}"' EXIT
"${KUBECTL}" auth can-i --list --as="${SA_USER}" -n "${SA_NAMESPACE}" >"${got}"

if [[ "${1:-}" == "check" ]]; then
	if ! diff -u "${GOLDEN}" "${got}"; then
		echo "rbac-golden: the cluster differs from ${GOLDEN#"${ROOT}"/} (above); run make rbac-golden if the change is intended" >&2
		exit 1
	fi
	echo "rbac-golden: ${GOLDEN#"${ROOT}"/} matches the cluster"
else
	mkdir -p "$(dirname "${GOLDEN}")"
	cp "${got}" "${GOLDEN}"
	echo "rbac-golden: wrote ${GOLDEN#"${ROOT}"/}"
fi
