#!/usr/bin/env bash
# Copies into the Helm chart (artifacts/chart) the files it shares with the
# kustomize manifests: the CRD into crds/, the monitoring objects into
# files/. A chart cannot read files outside its directory, so it carries
# copies; make chart-test fails when they differ from the originals.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHART="${ROOT}/artifacts/chart"

mkdir -p "${CHART}/crds" "${CHART}/files"
cp "${ROOT}/artifacts/crd/robot.dev_robots.yaml" "${CHART}/crds/"
for f in service.yaml servicemonitor.yaml prometheusrule.yaml; do
	cp "${ROOT}/artifacts/monitoring/${f}" "${CHART}/files/"
done
for f in aggregate-roles.yaml size-policy.yaml annotation-policy.yaml; do
	cp "${ROOT}/artifacts/deploy/${f}" "${CHART}/files/"
done
echo "chart: copied the CRD, the monitoring objects, the aggregated roles and the admission policies into ${CHART#"${ROOT}"/}"
