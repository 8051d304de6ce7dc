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
# The file holds what the operator's bindings grant: the cluster's answer for
# the ServiceAccount, less what it answers for a ServiceAccount with no
# bindings (what every authenticated user may do, which changes from one
# Kubernetes version to the next), one rule a line with single spaces.
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
baseline=$(mktemp)
trap 'rm -f "${got}" "${baseline}"' EXIT
squeeze() { tr -s ' ' | sed 's/^ *//; s/ *$//'; }
"${KUBECTL}" auth can-i --list --as="${SA_USER}" -n "${SA_NAMESPACE}" | squeeze >"${got}.all"
"${KUBECTL}" auth can-i --list --as="system:serviceaccount:${SA_NAMESPACE}:no-bindings" -n "${SA_NAMESPACE}" | squeeze >"${baseline}"
{ head -n 1 "${got}.all"; tail -n +2 "${got}.all" | grep -vxF -f "${baseline}" || true; } >"${got}"
rm -f "${got}.all"

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
