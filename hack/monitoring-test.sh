#!/usr/bin/env bash
# Tests artifacts/monitoring without a cluster:
#
#   1. `promtool check rules` on the PrometheusRule's rules;
#   2. `promtool test rules` with the unit tests in artifacts/monitoring/tests,
#      which make each alert fire on synthetic series and stay silent on a
#      healthy operator;
#   3. the Go tests of test/monitoring: every query of the dashboard and the
#      alerts parses, names the series listed in
#      artifacts/monitoring/testdata/series.txt (which the e2e test finds in
#      the operator's /metrics), and every alert has a runbook section.
#
# promtool is built from hack/tools/promtool into the tool cache on first
# use (hack/tools.sh promtool).
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MONITORING="${ROOT}/artifacts/monitoring"
WORK="${ROOT}/_output/monitoring"

"${ROOT}/hack/tools.sh" promtool
eval "$("${ROOT}/hack/tools.sh" env)"

rm -rf "${WORK}"
mkdir -p "${WORK}"
# The PrometheusRule's spec is a Prometheus rules file: what follows
# "spec:", two spaces less indented. spec is its last top-level field.
sed -n '/^spec:$/,$p' "${MONITORING}/prometheusrule.yaml" | tail -n +2 | sed 's/^  //' >"${WORK}/rules.yaml"
if grep -v '^groups:$' "${WORK}/rules.yaml" | grep -q '^[^ #-]'; then
	echo "monitoring-test: prometheusrule.yaml has a top-level field after spec:" >&2
	exit 1
fi
cp "${MONITORING}"/tests/*.yaml "${WORK}/"

"${PROMTOOL}" check rules "${WORK}/rules.yaml"
(cd "${WORK}" && "${PROMTOOL}" test rules ./*_test.yaml)
(cd "${ROOT}/test/monitoring" && go test -count=1 ./...)
echo "monitoring-test: the rules check, their unit tests pass, and the queries name the listed series"
