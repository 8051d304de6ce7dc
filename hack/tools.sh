#!/usr/bin/env bash
# Builds the binaries of the local test cluster (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl, etcd, kwok, kwokctl) and
# promtool (which tests the alerting rules) and helm (which lints and installs
# the chart) from the versions pinned in
# hack/tools/**/go.mod, into a cache outside the clone keyed by version, and
# skips whatever is already there.
#
# Usage: hack/tools.sh            build what is missing, print the paths
#        hack/tools.sh env        print shell assignments of the binary paths
#        hack/tools.sh promtool   build promtool only
#        hack/tools.sh helm       build helm only
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS_MOD="${ROOT}/hack/tools"
CACHE="${ROBOT_TOOLS_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/robot-operator}"

modversion() { # modversion DIR MODULE
	(cd "$1" && go list -m -f '{{.Version}}' "$2")
}

# The Kubernetes control plane: hack/tools pins the newest supported minor,
# hack/tools/kubernetes-v1.*/ the older ones. K8S_VERSION (e.g. v1.35.4)
# picks one; unset, the newest.
k8s_module() {
	local dir
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

# build DIR MODULE_DIR LDFLAGS PACKAGE... builds the packages into DIR unless
# every binary is already there. It writes into a temporary directory first so
# an interrupted build never leaves a half-written binary in the cache.
build() {
	local dir=$1 moddir=$2 ldflags=$3
	shift 3
	local missing=()
	for pkg in "$@"; do
		[[ -x "${dir}/$(basename "${pkg}")" ]] || missing+=("${pkg}")
	done
	if [[ ${#missing[@]} -eq 0 ]]; then
		log "cached: ${dir}"
		return
	fi
	log "building ${missing[*]##*/} into ${dir} (the first build takes several minutes)"
	mkdir -p "${dir}"
	local tmp
	tmp=$(mktemp -d "${dir}/.build.XXXXXX")
	trap 'rm -rf "${tmp:-}"' RETURN
	local start=${SECONDS}
	(cd "${moddir}" && CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${tmp}/" "${missing[@]}")
	mv "${tmp}"/* "${dir}/"
	log "built ${missing[*]##*/} in $((SECONDS - start))s"
}

# promtool comes from the Prometheus server's Go module, whose Go module
# tags are v0.3XX.Y for Prometheus 3.XX.Y (its v3.* tags are not usable Go
# module versions).
build_promtool() {
	build "${PROMTOOL_DIR}" "${TOOLS_MOD}/promtool" "-s -w" \
		github.com/prometheus/prometheus/cmd/promtool
}
if [[ "${1:-}" == "promtool" ]]; then
	build_promtool
	exit 0
fi

# helm's version is stamped as its own Makefile does, so that `helm version`
# and the chart's kubeVersion checks see the truth.
build_helm() {
	build "${HELM_DIR}" "${TOOLS_MOD}/helm" "-s -w -X helm.sh/helm/v4/internal/version.version=${HELM_VERSION}" \
		helm.sh/helm/v4/cmd/helm
}
if [[ "${1:-}" == "helm" ]]; then
	build_helm
	exit 0
fi

minor=${K8S_VERSION#v1.}
minor=${minor%%.*}
cb=k8s.io/component-base/version
build "${K8S_DIR}" "${K8S_MOD}" \
	"-s -w -X ${cb}.gitVersion=${K8S_VERSION} -X ${cb}.gitMajor=1 -X ${cb}.gitMinor=${minor} -X ${cb}.gitTreeState=clean" \
	k8s.io/kubernetes/cmd/kube-apiserver \
	k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-scheduler \
	k8s.io/kubernetes/cmd/kubectl

# etcd's main package is its module root; name the binary etcd.
if [[ ! -x "${ETCD_DIR}/etcd" ]]; then
	log "building etcd ${ETCD_VERSION} into ${ETCD_DIR}"
	mkdir -p "${ETCD_DIR}"
	(cd "${TOOLS_MOD}/etcd" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${ETCD_DIR}/.etcd.tmp" go.etcd.io/etcd/server/v3)
	mv "${ETCD_DIR}/.etcd.tmp" "${ETCD_DIR}/etcd"
else
	log "cached: ${ETCD_DIR}"
fi


build "${KWOK_DIR}" "${TOOLS_MOD}/kwok" \
	"-s -w" \
	sigs.k8s.io/kwok/cmd/kwok \
	sigs.k8s.io/kwok/cmd/kwokctl

build_promtool
build_helm

log "ready: kubernetes ${K8S_VERSION}, etcd ${ETCD_VERSION}, kwok ${KWOK_VERSION}, promtool ${PROMETHEUS_VERSION}, helm ${HELM_VERSION} under ${CACHE}"
