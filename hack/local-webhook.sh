#!/usr/bin/env bash
# Readies a local cluster for an operator that runs on this host, outside
# the cluster, to serve the CRD's conversion webhook: the namespace and the
# empty Secret of the shipped manifests (artifacts/deploy/webhook.yaml), and
# the CRD's conversion pointed at https://127.0.0.1:PORT/convert instead of
# the Service, which no pod backs here. The operator, run with the flags
# this prints, fills the Secret and the caBundle itself.
#
# Usage: hack/local-webhook.sh PORT      (KUBECTL and KUBECONFIG set)
set -o errexit -o nounset -o pipefail

port=${1:?usage: hack/local-webhook.sh PORT}
: "${KUBECTL:?}" "${KUBECONFIG:?}"
namespace=robot-operator
url="https://127.0.0.1:${port}/convert"

"${KUBECTL}" create namespace "${namespace}" --dry-run=client -o yaml | "${KUBECTL}" apply -f - >/dev/null
# Only the Secret of webhook.yaml: its Service would select no pod.
"${KUBECTL}" create secret generic robot-operator-webhook-cert -n "${namespace}" \
	--dry-run=client -o yaml | "${KUBECTL}" apply -f - >/dev/null
# A merge patch, which can drop the Service that the CRD names.
"${KUBECTL}" patch crd robots.robot.dev --type=merge \
	-p "{\"spec\":{\"conversion\":{\"webhook\":{\"clientConfig\":{\"service\":null,\"url\":\"${url}\"}}}}}" >/dev/null
echo "-webhook-bind-address=127.0.0.1:${port} -webhook-url=${url} -webhook-namespace=${namespace}"
