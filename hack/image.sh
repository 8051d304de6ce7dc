#!/usr/bin/env bash
# Builds or pushes the operator's container image with docker or podman,
# whichever has an engine that answers (`docker info` / `podman info`).
#
# Usage: hack/image.sh build    build IMG from the Dockerfile
#        hack/image.sh push     push IMG
#
# Environment: IMG (the image reference; required), VERSION (stamped into
# the binary; build only), CONTAINER_ENGINE (docker or podman: try only that
# one).
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${IMG:?set IMG to the image reference, e.g. IMG=ghcr.io/you/robot-operator:v0.1.0}"

# engine prints the first container engine that answers, or explains on
# stderr why none does and fails.
engine() {
	local candidates=(docker podman) why=() e out tried
	if [[ -n "${CONTAINER_ENGINE:-}" ]]; then
		candidates=("${CONTAINER_ENGINE}")
	fi
	for e in "${candidates[@]}"; do
		if ! command -v "${e}" >/dev/null 2>&1; then
			why+=("${e}: not installed")
			continue
		fi
		if out=$("${e}" info 2>&1 >/dev/null); then
			echo "${e}"
			return
		fi
		why+=("${e}: installed, but \`${e} info\` failed: $(printf '%s' "${out}" | grep -v '^$' | tail -n 1)")
	done
	{
		# shellcheck disable=SC2016 # the backquotes are text
		tried=$(printf '`%s info`, ' "${candidates[@]}")
		echo "image: no container engine found (tried ${tried%, }), so no image was built or pushed:"
		printf '  %s\n' "${why[@]}"
		echo "  Start a Docker engine or install Podman (or set CONTAINER_ENGINE), then run this again."
	} >&2
	return 1
}

case "${1:-}" in
build)
	e=$(engine)
	set -x
	"${e}" build --build-arg "VERSION=${VERSION:-unknown}" --build-arg "REVISION=${REVISION:-$(git -C "${ROOT}" rev-parse HEAD 2>/dev/null || echo unknown)}" -t "${IMG}" "${ROOT}"
	;;
push)
	e=$(engine)
	set -x
	"${e}" push "${IMG}"
	;;
*)
	echo "usage: $0 build|push" >&2
	exit 2
	;;
esac
