#!/usr/bin/env bash
# Fails when hack/update-codegen.sh would change anything: generated code and
# the CRD must always match the API types they come from. The tree is left as
# it was found.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

GENERATED=(pkg/generated pkg/apis artifacts/crd artifacts/chart/crds artifacts/chart/files)
SNAPSHOT=$(mktemp -d)
restore() {
	for dir in "${GENERATED[@]}"; do
		rm -rf "${ROOT:?}/${dir}"
		mkdir -p "$(dirname "${ROOT}/${dir}")"
		cp -a "${SNAPSHOT}/${dir}" "${ROOT}/${dir}"
	done
	rm -rf "${SNAPSHOT}"
}
for dir in "${GENERATED[@]}"; do
	mkdir -p "$(dirname "${SNAPSHOT}/${dir}")"
	cp -a "${ROOT}/${dir}" "${SNAPSHOT}/${dir}"
done
trap restore EXIT

"${ROOT}/hack/update-codegen.sh" >/dev/null

status=0
for dir in "${GENERATED[@]}"; do
	if ! diff -Naupr "${SNAPSHOT}/${dir}" "${ROOT}/${dir}"; then
		status=1
	fi
done
if [[ ${status} -ne 0 ]]; then
	echo "Generated code is out of date: run hack/update-codegen.sh and commit the result." >&2
	exit 1
fi
echo "Generated code is up to date."
