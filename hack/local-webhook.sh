#!/usr/bin/env bash
# Readies a local cluster for an operator that runs on this host, outside
# the cluster, to serve the CRD's conversion webhook: the namespace and the
# empty Secret of the shipped manifests (artifacts/deploy/webhook.yaml), and
# the Robot CRD of artifacts/crd, installed or updated, its conversion at
# https://127.0.0.1:PORT/convert instead of the Service, which no pod backs
# here. The operator, run with the flags this prints, fills the Secret and
# the caBundle itself. It can run again, on a CRD it or anything else made.
#
# Usage: hack/local-webhook.sh PORT      (KUBECTL and KUBECONFIG set)
set -o errexit -o nounset -o pipefail

port=${1:?usage: hack/local-webhook.sh PORT}
: "${KUBECTL:?}" "${KUBECONFIG:?}"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
namespace=robot-operator
url="https://127.0.0.1:${port}/convert"

"${KUBECTL}" create namespace "${namespace}" --dry-run=client -o yaml | "${KUBECTL}" apply -f - >/dev/null
# Only the Secret of webhook.yaml: its Service would select no pod.
"${KUBECTL}" create secret generic robot-operator-webhook-cert -n "${namespace}" \
	--dry-run=client -o yaml | "${KUBECTL}" apply -f - >/dev/null
# The CRD must name the URL or the Service, never both. The CRD is applied
# with the URL already in place: applying the shipped one, then patching in
# the URL, would have the next apply merge the Service back beside the URL.
# A CRD already there loses its Service first, by a merge patch, since an
# apply drops only what its own earlier apply wrote (a CRD that kubectl
# create made, or an earlier apply of the shipped file, keeps it).
client_config="{\"spec\":{\"conversion\":{\"webhook\":{\"clientConfig\":{\"service\":null,\"url\":\"${url}\"}}}}}"
if "${KUBECTL}" get crd robots.robot.dev >/dev/null 2>&1; then
	"${KUBECTL}" patch crd robots.robot.dev --type=merge -p "${client_config}" >/dev/null
fi
"${KUBECTL}" patch --local -f "${ROOT}/artifacts/crd/robot.dev_robots.yaml" --type=merge -p "${client_config}" -o yaml |
	"${KUBECTL}" apply -f - >/dev/null
# kubectl wait fails at once, instead of waiting, when it finds the new CRD
# before the API server has given it any condition: ask again for a minute.
for _ in $(seq 30); do
	"${KUBECTL}" wait --for=condition=Established crd/robots.robot.dev --timeout=10s >/dev/null 2>&1 && break
	sleep 1
done
"${KUBECTL}" wait --for=condition=Established crd/robots.robot.dev --timeout=10s >/dev/null
echo "-webhook-bind-address=127.0.0.1:${port} -webhook-url=${url} -webhook-namespace=${namespace}"
