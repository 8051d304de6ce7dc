#!/usr/bin/env bash
# Builds a release's files into RELEASE_DIR (_output/release), with no
# network and no container engine:
#
#   install.yaml                      artifacts/deploy, every object, the image pinned by digest
#   install-namespaced.yaml           artifacts/deploy-namespaced, the same way
#   robot-operator-X.Y.Z.tgz          the Helm chart: version X.Y.Z, appVersion and image tag vX.Y.Z, the digest
#   robot-operator-vX.Y.Z-image.oci.tar   the image (linux/amd64, linux/arm64) as an OCI image layout
#   robot-operator-vX.Y.Z-linux-ARCH.spdx.json   each platform's SBOM, as the image holds it
#   kubectl-robot-vX.Y.Z-linux-ARCH.tar.gz       the kubectl robot plugin (make plugin) for each
#                                     of the image's platforms, with the LICENSE
#   SHA256SUMS                        the sums of all of the above
#
# Usage: hack/release.sh            build       (make release VERSION=vX.Y.Z)
#        hack/release.sh manifests  build only the image and install.yaml and
#                                   install-namespaced.yaml, from the tree
#                                   RELEASE_SOURCE (default: this one), e.g.
#                                   an earlier commit's, extracted with git
#                                   archive: what the upgrade test installs
#        hack/release.sh push       push the image of RELEASE_DIR to
#                                   IMAGE_REPO:VERSION and its chart to
#                                   CHART_REGISTRY, as they are: by the
#                                   digests that install.yaml and SHA256SUMS
#                                   name (make release-push)
#
# Environment: VERSION (vX.Y.Z, required), IMAGE_REPO (where the image is
# pushed; default ghcr.io/robot-operator/robot-operator), RELEASE_DIR,
# SOURCE_DATE_EPOCH (default: the commit's time), REVISION (default: the
# commit), RELEASE_SOURCE; for push, CHART_REGISTRY (default oci://ghcr.io/robot-operator/charts)
# and HELM_PUSH_FLAGS (e.g. --plain-http). Credentials come from the Docker
# config (docker login) for the image and from helm registry login for the
# chart.
#
# Two runs from one commit write the same bytes: every time in every file is
# SOURCE_DATE_EPOCH, archives list their entries sorted, with no owner.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
VERSION=${VERSION:?set VERSION to the release, e.g. VERSION=v0.2.0}
IMAGE_REPO=${IMAGE_REPO:-ghcr.io/robot-operator/robot-operator}
RELEASE_DIR=${RELEASE_DIR:-${ROOT}/_output/release}
SOURCE=$(cd "${RELEASE_SOURCE:-${ROOT}}" && pwd)
MODE=${1:-build}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
REVISION=${REVISION:-$(git rev-parse HEAD)}
export SOURCE_DATE_EPOCH

if [[ ! "${VERSION}" =~ ^v([0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?)$ ]]; then
	echo "release: VERSION=${VERSION} is not vMAJOR.MINOR.PATCH[-PRERELEASE]" >&2
	exit 2
fi
CHART_VERSION=${BASH_REMATCH[1]}
if [[ "${SOURCE}" == "${ROOT}" && -n "$(git status --porcelain --untracked-files=no)" ]]; then
	echo "release: warning: the tree has uncommitted changes; the files are built from them, not from ${REVISION}" >&2
fi

log() { echo "release: $*"; }

mkdir -p "${ROOT}/_output"
# kubectl renders the manifests; helm, which manifests needs not, packages
# and pushes the chart.
if [[ "${MODE}" == manifests ]]; then hack/tools.sh cluster >&2; else hack/tools.sh cluster helm >&2; fi
eval "$(hack/tools.sh env)"

if [[ "${MODE}" == push ]]; then
	CHART_REGISTRY=${CHART_REGISTRY:-oci://ghcr.io/robot-operator/charts}
	layout=$(mktemp -d "${ROOT}/_output/release-push.XXXXXX")
	trap 'rm -rf "${layout}"' EXIT
	(cd "${RELEASE_DIR}" && sha256sum --check --quiet SHA256SUMS)
	tar -xf "${RELEASE_DIR}/robot-operator-${VERSION}-image.oci.tar" -C "${layout}"
	log "pushing the image to ${IMAGE_REPO}:${VERSION}"
	(cd hack/imagebuild && go run . -push-layout "${layout}" -push "${IMAGE_REPO}:${VERSION}")
	log "pushing the chart to ${CHART_REGISTRY}"
	# shellcheck disable=SC2086 # HELM_PUSH_FLAGS is a list of flags
	"${HELM}" push "${RELEASE_DIR}/robot-operator-${CHART_VERSION}.tgz" "${CHART_REGISTRY}" ${HELM_PUSH_FLAGS:-}
	exit 0
elif [[ "${MODE}" != build && "${MODE}" != manifests ]]; then
	echo "usage: $0 [build|manifests|push]" >&2
	exit 2
fi

work=$(mktemp -d "${ROOT}/_output/release-work.XXXXXX")
trap 'rm -rf "${work}"' EXIT
out="${work}/out"
mkdir -p "${out}"

# The image, as make image builds it, and its SBOMs.
log "building the image ${VERSION} (${REVISION})"
make --no-print-directory -C "${SOURCE}" image VERSION="${VERSION}" REVISION="${REVISION}" SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH}" \
	IMAGE_LAYOUT="${work}/image" SBOM_DIR="${work}/sbom" >&2
# index.json names the one image index (hack/imagebuild).
digest=$(grep -o '"digest": *"sha256:[0-9a-f]\{64\}"' "${work}/image/index.json" | grep -o 'sha256:[0-9a-f]*')
if [[ -z "${digest}" ]]; then
	echo "release: no image index digest in ${work}/image/index.json" >&2
	exit 1
fi
log "the image index is ${IMAGE_REPO}:${VERSION}@${digest}"

# stamp sets every time under $1 to SOURCE_DATE_EPOCH.
stamp() { find "$1" -exec touch --no-dereference --date="@${SOURCE_DATE_EPOCH}" {} +; }
# archive writes a tar of directory $2 into $1: entries sorted, times
# SOURCE_DATE_EPOCH, no owner, the modes git would give.
archive() {
	stamp "$2"
	tar --create --file "$1" --directory "$2" --sort=name --format=gnu \
		--mtime="@${SOURCE_DATE_EPOCH}" --owner=0 --group=0 --numeric-owner --mode='a-x,u+rwX,go+rX,go-w' .
}

# The manifests: each kustomization with the image by digest.
manifests() { # manifests BASE OUTPUT
	local overlay="${work}/overlay-${2%.yaml}"
	mkdir -p "${overlay}"
	cat >"${overlay}/kustomization.yaml" <<KUSTOMIZATION
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $(realpath --relative-to="${overlay}" "${SOURCE}/$1")
images:
- name: ghcr.io/robot-operator/robot-operator
  newName: ${IMAGE_REPO}
  newTag: ${VERSION}
  digest: ${digest}
KUSTOMIZATION
	{
		echo "# robot-operator ${VERSION} (${REVISION}): $1, the image ${IMAGE_REPO}:${VERSION}@${digest}."
		echo "#   kubectl apply -f $2"
		"${KUBECTL}" kustomize "${overlay}"
	} >"${out}/$2"
}
log "rendering install.yaml and install-namespaced.yaml"
manifests artifacts/deploy install.yaml
manifests artifacts/deploy-namespaced install-namespaced.yaml
if [[ "${MODE}" == manifests ]]; then
	mkdir -p "${RELEASE_DIR}"
	mv "${out}/install.yaml" "${out}/install-namespaced.yaml" "${RELEASE_DIR}/"
	log "wrote install.yaml and install-namespaced.yaml of ${SOURCE} into ${RELEASE_DIR}"
	exit 0
fi

# The image as a tarball of its OCI layout, and its SBOMs.
archive "${out}/robot-operator-${VERSION}-image.oci.tar" "${work}/image"
for sbom in "${work}"/sbom/robot-operator-*.spdx.json; do
	cp "${sbom}" "${out}/robot-operator-${VERSION}-${sbom##*/robot-operator-}"
done

# The kubectl robot plugin, for each of the image's platforms: the binary
# as make plugin builds it (executable in the tarball) and the licence.
for arch in amd64 arm64; do
	log "building the kubectl robot plugin for linux/${arch}"
	plugin="${work}/plugin-${arch}"
	mkdir -p "${plugin}"
	GOOS=linux GOARCH=${arch} make --no-print-directory -C "${SOURCE}" plugin PLUGIN_BIN="${plugin}/kubectl-robot" >&2
	cp "${SOURCE}/LICENSE" "${plugin}/"
	stamp "${plugin}"
	tar --create --directory "${plugin}" --sort=name --format=gnu --mtime="@${SOURCE_DATE_EPOCH}" \
		--owner=0 --group=0 --numeric-owner --mode='u+rwX,go+rX,go-w' . |
		gzip -n -9 >"${out}/kubectl-robot-${VERSION}-linux-${arch}.tar.gz"
done

# The chart, with the release's version and image.
log "packaging the chart ${CHART_VERSION}"
cp -r "${SOURCE}/artifacts/chart" "${work}/robot-operator"
sed -i -e "s/^version: .*/version: ${CHART_VERSION}/" -e "s/^appVersion: .*/appVersion: \"${VERSION}\"/" \
	-e "s|^      image: ghcr.io/robot-operator/robot-operator:latest$|      image: ${IMAGE_REPO}:${VERSION}@${digest}|" "${work}/robot-operator/Chart.yaml"
grep -q "^      image: ${IMAGE_REPO}:${VERSION}@${digest}$" "${work}/robot-operator/Chart.yaml" || {
	echo "release: the chart's Chart.yaml has no artifacthub.io/images entry to set" >&2
	exit 1
}
sed -i -e "s|^  repository: .*|  repository: ${IMAGE_REPO}|" -e "s/^  tag: .*/  tag: ${VERSION}/" -e "s/^  digest: .*/  digest: \"${digest}\"/" \
	"${work}/robot-operator/values.yaml"
grep -q "^  digest: \"${digest}\"" "${work}/robot-operator/values.yaml" || {
	echo "release: the chart's values.yaml has no image digest to set" >&2
	exit 1
}
stamp "${work}/robot-operator"
"${HELM}" package "${work}/robot-operator" --destination "${out}" >&2

(cd "${out}" && sha256sum -- * | LC_ALL=C sort -k2 >"${work}/SHA256SUMS")
mv "${work}/SHA256SUMS" "${out}/"
rm -rf "${RELEASE_DIR}"
mkdir -p "$(dirname "${RELEASE_DIR}")"
mv "${out}" "${RELEASE_DIR}"
log "wrote ${RELEASE_DIR}:"
cat "${RELEASE_DIR}/SHA256SUMS"
