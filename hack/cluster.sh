#!/usr/bin/env bash
# Starts or removes the local test cluster: a real kube-apiserver, etcd,
# kube-controller-manager and kube-scheduler, with kwok standing in for
# kubelets (pods are scheduled and marked Running and Ready without running
# anything). Everything listens on loopback.
#
# kwok plays the lifecycles of hack/kwok-stages.yaml (Stage objects, applied
# at every `up`): the ordinary one, and the failures of a kubelet the
# end-to-end tests ask for.
#
# Usage: hack/cluster.sh up      start it (does nothing if it is already up)
#        hack/cluster.sh down    remove it (does nothing if there is none)
#
# Environment: K8S_VERSION (the Kubernetes version, one that hack/tools pins;
# default the newest), CLUSTER_NAME (robot-operator), KUBECONFIG_OUT
# (_output/kubeconfig), NODES (fake nodes, 110 pods each; default 2),
# AUDIT_POLICY (an audit policy file; default: every write, at Metadata level),
# KUBE_FEATURE_GATES (feature gates of the control plane, e.g.
# CBORServingAndStorage=true; default none; a cluster already up keeps its
# own), SERVICE_CIDR (the Services' cluster IP range; default the API server's
# own, a /24: 254 Services at most; a cluster already up keeps its own).
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER_NAME=${CLUSTER_NAME:-robot-operator}
KUBECONFIG_OUT=${KUBECONFIG_OUT:-${ROOT}/_output/kubeconfig}
NODES=${NODES:-2}
KWOKCTL_LOG="${ROOT}/_output/kwokctl-${CLUSTER_NAME}.log"
STAGES="${ROOT}/hack/kwok-stages.yaml"

eval "$("${ROOT}/hack/tools.sh" env)"
mkdir -p "${ROOT}/_output"

log() { echo "cluster: $*" >&2; }

# healthy: the cluster answers, and runs the Kubernetes version asked for.
healthy() {
	[[ -f "${KUBECONFIG_OUT}" ]] &&
		"${KUBECTL}" --kubeconfig "${KUBECONFIG_OUT}" get --raw /readyz >/dev/null 2>&1 &&
		"${KUBECTL}" --kubeconfig "${KUBECONFIG_OUT}" get --raw /version 2>/dev/null | grep -q "\"gitVersion\": *\"${K8S_VERSION}\""
}

# stagesEnabled: the cluster serves Stage objects. A cluster made before it
# did plays kwok's built-in stages, and none of the failures.
stagesEnabled() {
	"${KUBECTL}" --kubeconfig "${KUBECONFIG_OUT}" get crd stages.kwok.x-k8s.io >/dev/null 2>&1
}

exists() {
	# grep reads the whole list (no -q): under pipefail, a grep that exits
	# at the first match could make kwokctl's write fail, and the pipeline
	# with it.
	"${KWOKCTL}" get clusters 2>/dev/null | grep -x "${CLUSTER_NAME}" >/dev/null
}

up() {
	"${ROOT}/hack/tools.sh" cluster
	if exists && healthy && stagesEnabled; then
		log "cluster ${CLUSTER_NAME} is already up (kubeconfig: ${KUBECONFIG_OUT})"
	else
		if exists; then
			log "cluster ${CLUSTER_NAME} exists but does not answer, runs another Kubernetes version than ${K8S_VERSION}, or has no Stage objects; recreating it"
			"${KWOKCTL}" delete cluster --name "${CLUSTER_NAME}" >/dev/null 2>&1 || true
		fi
		mkdir -p "$(dirname "${KUBECONFIG_OUT}")"
		# The audit log records each write with its user agent: the e2e tests
		# count the operator's writes from it.
		# With the Stage CRD enabled, kwok reads its stages from the cluster
		# only: until hack/kwok-stages.yaml is applied below, no node becomes
		# Ready and no pod Running.
		local config="${ROOT}/_output/kwokctl-${CLUSTER_NAME}.yaml"
		cat >"${config}" <<CONFIG
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  bindAddress: 127.0.0.1
  kubeVersion: ${K8S_VERSION}
  enableCRDs:
  - Stage
CONFIG
		if [[ -n "${SERVICE_CIDR:-}" ]]; then
			cat >>"${config}" <<CONFIG
componentsPatches:
- name: kube-apiserver
  extraArgs:
  - key: service-cluster-ip-range
    value: ${SERVICE_CIDR}
CONFIG
		fi
		local policy=${AUDIT_POLICY:-${ROOT}/_output/audit-policy-${CLUSTER_NAME}.yaml}
		[[ -n "${AUDIT_POLICY:-}" ]] || cat >"${policy}" <<POLICY
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
# Reviews (of a token, of what a user may do) are created but store nothing.
- level: None
  resources:
  - group: authorization.k8s.io
  - group: authentication.k8s.io
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
POLICY
		log "creating cluster ${CLUSTER_NAME} (kubernetes ${K8S_VERSION}, ${NODES} fake nodes; log: ${KWOKCTL_LOG})"
		# One cluster made at a time, machine-wide (the parts of make test
		# make theirs side by side): kwokctl gives each component the first
		# free port below 32768, and two at once could pick the same. The
		# fault suite holds the lock too while a component of its cluster
		# is down, its ports free. flock -o: the cluster's processes must
		# not inherit the lock.
		mkdir -p "${HOME}/.kwok"
		if ! flock -o "${HOME}/.kwok/.robot-operator-ports.lock" "${KWOKCTL}" --config "${config}" create cluster \
			--name "${CLUSTER_NAME}" \
			--runtime binary \
			--kube-apiserver-binary "${KUBE_APISERVER}" \
			--kube-controller-manager-binary "${KUBE_CONTROLLER_MANAGER}" \
			--kube-scheduler-binary "${KUBE_SCHEDULER}" \
			--etcd-binary "${ETCD}" \
			--kwok-controller-binary "${KWOK}" \
			--kube-audit-policy "${policy}" \
			--disable-qps-limits \
			--kube-feature-gates "${KUBE_FEATURE_GATES:-}" \
			--kubeconfig "${KUBECONFIG_OUT}" \
			--wait 120s >"${KWOKCTL_LOG}" 2>&1; then
			cat "${KWOKCTL_LOG}" >&2
			log "creating cluster ${CLUSTER_NAME} failed"
			exit 1
		fi
	fi
	# At every up, so that a cluster left running plays the stages of this
	# tree; before the nodes are made.
	"${KUBECTL}" --kubeconfig "${KUBECONFIG_OUT}" apply -f "${STAGES}" >>"${KWOKCTL_LOG}"
	local have
	have=$("${KUBECTL}" --kubeconfig "${KUBECONFIG_OUT}" get nodes --no-headers 2>/dev/null | wc -l)
	if [[ ${have} -lt ${NODES} ]]; then
		log "scaling to ${NODES} fake nodes"
		"${KWOKCTL}" --name "${CLUSTER_NAME}" scale node --replicas "${NODES}" >>"${KWOKCTL_LOG}" 2>&1
	fi
	log "ready: export KUBECONFIG=${KUBECONFIG_OUT}"
}

down() {
	if exists; then
		log "deleting cluster ${CLUSTER_NAME}"
		"${KWOKCTL}" delete cluster --name "${CLUSTER_NAME}" >>"${KWOKCTL_LOG}" 2>&1
	else
		log "no cluster ${CLUSTER_NAME} to delete"
	fi
	rm -f "${KUBECONFIG_OUT}"
}

case "${1:-}" in
up) up ;;
down) down ;;
*)
	echo "usage: $0 up|down" >&2
	exit 2
	;;
esac
