#!/usr/bin/env bash
# Builds the tools the local clusters and the tests run, from the versions
# pinned in hack/tools/**/go.mod, into a cache outside the clone keyed by
# version, and skips whatever is already there:
#
#   cluster    the local cluster's binaries: kube-apiserver,
#              kube-controller-manager, kube-scheduler, kubectl, etcd, kwok,
#              kwokctl (what `make demo` and every cluster need);
#   promtool   which tests the alerting rules (make monitoring-test);
#   helm       which lints and installs the chart (make chart-test, chart-e2e).
#
# Usage: hack/tools.sh                  build all of them
#        hack/tools.sh WHAT...          build only those named (cluster, promtool, helm)
#        hack/tools.sh env              print shell assignments of the binary paths
#
# K8S_VERSION picks the Kubernetes version of the cluster's binaries: one
# that hack/tools pins (e.g. v1.35.4), or oldest; unset, the newest.
#
# The first build takes minutes (the cluster's about 10 on 2 cores, promtool
# and helm about 20 more): it says which step it is at, and every
# TOOLS_PROGRESS_SECONDS (30) how long the step has been running. Two runs at
# once build each tool once: the second waits for the first.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS_MOD="${ROOT}/hack/tools"
CACHE="${ROBOT_TOOLS_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/robot-operator}"
PROGRESS_SECONDS=${TOOLS_PROGRESS_SECONDS:-30}

modversion() { # modversion DIR MODULE
	(cd "$1" && go list -m -f '{{.Version}}' "$2")
}

# The Kubernetes control plane: hack/tools pins the newest supported minor,
# hack/tools/kubernetes-v1.*/ the older ones. K8S_VERSION (e.g. v1.35.4)
# picks one, K8S_VERSION=oldest the oldest; unset, the newest.
k8s_module() {
	local dir
	if [[ "${K8S_VERSION:-}" == oldest ]]; then
		K8S_VERSION=$(for dir in "${TOOLS_MOD}" "${TOOLS_MOD}"/kubernetes-v*; do modversion "${dir}" k8s.io/kubernetes; done | sort -V | sed -n 1p)
	fi
	for dir in "${TOOLS_MOD}" "${TOOLS_MOD}"/kubernetes-v*; do
		if [[ -z "${K8S_VERSION:-}" || "$(modversion "${dir}" k8s.io/kubernetes)" == "${K8S_VERSION}" ]]; then
			echo "${dir}"
			return
		fi
	done
	echo "tools: no module under hack/tools pins k8s.io/kubernetes ${K8S_VERSION}; the supported versions are $(for dir in "${TOOLS_MOD}" "${TOOLS_MOD}"/kubernetes-v*; do modversion "${dir}" k8s.io/kubernetes; done | tr '\n' ' ')" >&2
	return 1
}
K8S_MOD=$(k8s_module)
K8S_VERSION=$(modversion "${K8S_MOD}" k8s.io/kubernetes)
ETCD_VERSION=$(modversion "${TOOLS_MOD}/etcd" go.etcd.io/etcd/server/v3)
KWOK_VERSION=$(modversion "${TOOLS_MOD}/kwok" sigs.k8s.io/kwok)
PROMETHEUS_VERSION=$(modversion "${TOOLS_MOD}/promtool" github.com/prometheus/prometheus)
HELM_VERSION=$(modversion "${TOOLS_MOD}/helm" helm.sh/helm/v4)

K8S_DIR="${CACHE}/kubernetes-${K8S_VERSION}"
ETCD_DIR="${CACHE}/etcd-${ETCD_VERSION}"
KWOK_DIR="${CACHE}/kwok-${KWOK_VERSION}"
PROMTOOL_DIR="${CACHE}/promtool-${PROMETHEUS_VERSION}"
HELM_DIR="${CACHE}/helm-${HELM_VERSION}"

if [[ "${1:-}" == "env" ]]; then
	cat <<VARS
KUBE_APISERVER=${K8S_DIR}/kube-apiserver
KUBE_CONTROLLER_MANAGER=${K8S_DIR}/kube-controller-manager
KUBE_SCHEDULER=${K8S_DIR}/kube-scheduler
KUBECTL=${K8S_DIR}/kubectl
ETCD=${ETCD_DIR}/etcd
KWOK=${KWOK_DIR}/kwok
KWOKCTL=${KWOK_DIR}/kwokctl
PROMTOOL=${PROMTOOL_DIR}/promtool
HELM=${HELM_DIR}/helm
K8S_VERSION=${K8S_VERSION}
VARS
	exit 0
fi

log() { echo "tools: $*" >&2; }

# duration SECONDS prints 2m30s.
duration() {
	if (($1 >= 60)); then
		echo "$(($1 / 60))m$(($1 % 60))s"
	else
		echo "$1s"
	fi
}

# progress WHAT START says, every PROGRESS_SECONDS, that WHAT is still being
# built and for how long, until this script ends or is killed.
progress() {
	local what=$1 start=$2 script=$$ next=$((PROGRESS_SECONDS))
	while kill -0 "${script}" 2>/dev/null; do
		sleep 1
		local now
		now=$(($(date +%s) - start))
		if ((now >= next)); then
			log "still building ${what}... $(duration "${now}")"
			next=$((next + PROGRESS_SECONDS))
		fi
	done
}

# exe PACKAGE is the name go build gives the binary of a main package: its
# last path element that is not a major version (go.etcd.io/etcd/server/v3
# makes "server").
exe() {
	local name=${1##*/}
	if [[ "${name}" =~ ^v[0-9]+$ ]]; then
		name=${1%/*}
		name=${name##*/}
	fi
	echo "${name}"
}

# The steps this run takes, in order: each builds NAME:PACKAGE... (the
# binary NAME from the main package PACKAGE) of the module in MODULE_DIR
# into DIR, unless every binary is already there. WHAT says which tool and
# version it is, for people.
STEPS=()
step() { # step WHAT DIR MODULE_DIR LDFLAGS NAME:PACKAGE...
	local what=$1 dir=$2 missing=0 spec
	for spec in "${@:5}"; do
		[[ -x "${dir}/${spec%%:*}" ]] || missing=1
	done
	if ((missing)); then
		STEPS+=("$(printf '%q ' "$@")")
	else
		log "cached: ${what} (${dir})"
	fi
}

# build STEP_NUMBER STEPS WHAT DIR MODULE_DIR LDFLAGS NAME:PACKAGE... builds
# the binaries that are missing. It holds a lock on DIR, so that a second
# run waits for the first instead of building the same again, and writes
# into a temporary directory first, so that an interrupted build never
# leaves a half-written binary in the cache.
build() {
	local n=$1 of=$2 what=$3 dir=$4 moddir=$5 ldflags=$6
	shift 6
	mkdir -p "${dir}"
	local lock
	exec {lock}>"${dir}/.lock"
	if ! flock --nonblock "${lock}"; then
		log "waiting for another build of ${what} into ${dir}"
		flock "${lock}"
	fi
	local missing=() names=() spec
	for spec in "$@"; do
		if [[ ! -x "${dir}/${spec%%:*}" ]]; then
			names+=("${spec%%:*}")
			missing+=("${spec#*:}")
		fi
	done
	if [[ ${#missing[@]} -eq 0 ]]; then
		log "[${n}/${of}] ${what}: built meanwhile by another run"
		exec {lock}>&-
		return
	fi
	log "[${n}/${of}] building ${what}: ${names[*]} into ${dir} (the first build takes minutes; a line every ${PROGRESS_SECONDS}s while it runs)"
	local tmp start ticker
	tmp=$(mktemp -d "${dir}/.build.XXXXXX")
	start=$(date +%s)
	progress "${what} (${names[*]}, step ${n} of ${of})" "${start}" &
	ticker=$!
	# shellcheck disable=SC2064 # expand now: the locals are gone at EXIT
	trap "kill ${ticker} 2>/dev/null; rm -rf '${tmp}'" EXIT
	(cd "${moddir}" && CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${tmp}/" "${missing[@]}")
	kill "${ticker}" 2>/dev/null || true
	wait "${ticker}" 2>/dev/null || true
	local i
	for i in "${!missing[@]}"; do
		mv "${tmp}/$(exe "${missing[i]}")" "${dir}/${names[i]}"
	done
	rm -rf "${tmp}"
	trap - EXIT
	exec {lock}>&-
	log "[${n}/${of}] built ${what} in $(duration $(($(date +%s) - start)))"
}

cluster_steps() {
	local minor=${K8S_VERSION#v1.}
	minor=${minor%%.*}
	local cb=k8s.io/component-base/version
	step "kubernetes ${K8S_VERSION}" "${K8S_DIR}" "${K8S_MOD}" \
		"-s -w -X ${cb}.gitVersion=${K8S_VERSION} -X ${cb}.gitMajor=1 -X ${cb}.gitMinor=${minor} -X ${cb}.gitTreeState=clean" \
		kube-apiserver:k8s.io/kubernetes/cmd/kube-apiserver \
		kube-controller-manager:k8s.io/kubernetes/cmd/kube-controller-manager \
		kube-scheduler:k8s.io/kubernetes/cmd/kube-scheduler \
		kubectl:k8s.io/kubernetes/cmd/kubectl
	step "etcd ${ETCD_VERSION}" "${ETCD_DIR}" "${TOOLS_MOD}/etcd" "-s -w" \
		etcd:go.etcd.io/etcd/server/v3
	step "kwok ${KWOK_VERSION}" "${KWOK_DIR}" "${TOOLS_MOD}/kwok" "-s -w" \
		kwok:sigs.k8s.io/kwok/cmd/kwok \
		kwokctl:sigs.k8s.io/kwok/cmd/kwokctl
}

# promtool comes from the Prometheus server's Go module, whose Go module
# tags are v0.3XX.Y for Prometheus 3.XX.Y (its v3.* tags are not usable Go
# module versions).
promtool_steps() {
	step "promtool ${PROMETHEUS_VERSION}" "${PROMTOOL_DIR}" "${TOOLS_MOD}/promtool" "-s -w" \
		promtool:github.com/prometheus/prometheus/cmd/promtool
}

# helm's version is stamped as its own Makefile does, so that `helm version`
# and the chart's kubeVersion checks see the truth.
helm_steps() {
	step "helm ${HELM_VERSION}" "${HELM_DIR}" "${TOOLS_MOD}/helm" "-s -w -X helm.sh/helm/v4/internal/version.version=${HELM_VERSION}" \
		helm:helm.sh/helm/v4/cmd/helm
}

wanted=("$@")
[[ ${#wanted[@]} -gt 0 ]] || wanted=(cluster promtool helm)
ready=()
for what in "${wanted[@]}"; do
	case "${what}" in
	cluster)
		cluster_steps
		ready+=("kubernetes ${K8S_VERSION}, etcd ${ETCD_VERSION}, kwok ${KWOK_VERSION}")
		;;
	promtool)
		promtool_steps
		ready+=("promtool ${PROMETHEUS_VERSION}")
		;;
	helm)
		helm_steps
		ready+=("helm ${HELM_VERSION}")
		;;
	*)
		echo "usage: $0 [cluster|promtool|helm]... | env" >&2
		exit 2
		;;
	esac
done

for i in "${!STEPS[@]}"; do
	eval "build $((i + 1)) ${#STEPS[@]} ${STEPS[i]}"
done

summary=$(printf '%s, ' "${ready[@]}")
log "ready: ${summary%, } under ${CACHE}"
