#!/usr/bin/env bash
# Runs the end-to-end tests (test/e2e) against local clusters of their own.
#
# Each test says how it shares a cluster (test/e2e/group.go). The parallel
# ones run side by side, against one operator, on the cluster E2E_CLUSTER;
# the exclusive ones (they stop or restart the operator, run their own,
# change the CRD, or count writes on a quiet cluster) run one at a time on a
# second cluster, E2E_CLUSTER-exclusive, with an operator of its own, at the
# same time. With E2E_SPLIT=0 both groups run on E2E_CLUSTER, the exclusive
# tests first.
#
# Usage: hack/e2e.sh [go test flags]      e.g. hack/e2e.sh -run 'TestCreateRobot|TestScaleRobot'
#
# Environment:
#   E2E_CLUSTER       the cluster's name (robot-operator-e2e)
#   E2E_KUBECONFIG    its kubeconfig (_output/e2e-kubeconfig); the second
#                     cluster's is next to it, with -exclusive added
#   K8S_VERSION       the clusters' Kubernetes (hack/tools.sh; default the newest)
#   E2E_PARALLEL      how many parallel tests run at once (16)
#   E2E_SPLIT         1: a cluster for each group, both at once (default);
#                     0: one cluster, one run
#   E2E_OPERATOR_BIN  the operator, built from this tree (default: built here)
#   E2E_PLUGIN_BIN    the kubectl robot plugin, kubectl-robot, built from this
#                     tree (default: built here)
#   E2E_TEST_BIN      the test binary, go test -c -tags e2e ./test/e2e
#                     (default: built here)
#
# Each group's output is in _output/CLUSTER.log, and goes to the standard
# output as it comes, each line prefixed with the group. It fails if a group
# fails, or if a test ran in neither group.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
OUT="${ROOT}/_output"
CLUSTER=${E2E_CLUSTER:-robot-operator-e2e}
KUBECONFIG_PATH=${E2E_KUBECONFIG:-${OUT}/e2e-kubeconfig}
PARALLEL=${E2E_PARALLEL:-16}
SPLIT=${E2E_SPLIT:-1}
WORK="${OUT}/e2e-${CLUSTER}"
mkdir -p "${WORK}"

log() { echo "e2e: $*" >&2; }

# The flags of go test, as the test binary takes them: -run X is -test.run X.
flags=()
for arg in "$@"; do
	if [[ "${arg}" =~ ^-[a-z] && "${arg}" != -test.* ]]; then
		arg="-test.${arg#-}"
	fi
	flags+=("${arg}")
done

started=${SECONDS}
bin=${E2E_OPERATOR_BIN:-}
if [[ -z "${bin}" ]]; then
	log "building the operator"
	bin="${WORK}/robot-operator"
	CGO_ENABLED=0 go build -trimpath -o "${bin}" .
fi
plugin_bin=${E2E_PLUGIN_BIN:-}
if [[ -z "${plugin_bin}" ]]; then
	log "building the kubectl robot plugin"
	plugin_bin="${WORK}/plugin/kubectl-robot"
	CGO_ENABLED=0 go build -trimpath -o "${plugin_bin}" ./internal/robotctl/kubectl-robot
fi
test_bin=${E2E_TEST_BIN:-}
if [[ -z "${test_bin}" ]]; then
	log "building the tests"
	test_bin="${WORK}/e2e.test"
	go test -c -tags e2e -o "${test_bin}" ./test/e2e/
fi

# runs holds one "GROUP CLUSTER KUBECONFIG" per run.
runs=()
if [[ "${SPLIT}" == 1 ]]; then
	runs+=("parallel ${CLUSTER} ${KUBECONFIG_PATH}")
	runs+=("exclusive ${CLUSTER}-exclusive ${KUBECONFIG_PATH%-kubeconfig}-exclusive-kubeconfig")
else
	runs+=("all ${CLUSTER} ${KUBECONFIG_PATH}")
fi

for run in "${runs[@]}"; do
	read -r group cluster kubeconfig <<<"${run}"
	CLUSTER_NAME=${cluster} KUBECONFIG_OUT=${kubeconfig} hack/cluster.sh up
done
log "clusters up $((SECONDS - started))s after the start"

pids=()
logs=()
for run in "${runs[@]}"; do
	read -r group cluster kubeconfig <<<"${run}"
	logfile="${OUT}/${cluster}.log"
	logs+=("${logfile}")
	e2e_group=${group}
	[[ "${group}" != all ]] || e2e_group=
	what="the ${group} tests"
	[[ "${group}" != all ]] || what="all the tests, the exclusive ones first,"
	log "${what} run on ${cluster}; their log is ${logfile#"${ROOT}"/}"
	(
		cd test/e2e
		set +o errexit
		E2E_GROUP=${e2e_group} CLUSTER_NAME=${cluster} KUBECONFIG=${kubeconfig} E2E_OPERATOR_BIN=${bin} E2E_PLUGIN_BIN=${plugin_bin} \
			"${test_bin}" -test.v -test.timeout=40m -test.parallel="${PARALLEL}" "${flags[@]}" 2>&1 |
			tee "${logfile}" | sed -u "s/^/[${group}] /"
		exit "${PIPESTATUS[0]}"
	) &
	pids+=($!)
done

failed=0
group_status=()
for i in "${!pids[@]}"; do
	read -r group cluster _ <<<"${runs[i]}"
	if wait "${pids[i]}"; then
		status=ok
	else
		status=FAILED
		failed=1
	fi
	group_status+=("${status}")
	log "${group} tests on ${cluster}: ${status} ($(grep -c '^--- PASS' "${logs[i]}" || true) passed, $(grep -c '^--- FAIL' "${logs[i]}" || true) failed, $(grep -c '^--- SKIP' "${logs[i]}" || true) skipped)"
done

# Each failed test with the last lines it logged, found by the === NAME line
# that go test -v prints whenever the output switches from one test to
# another: the parallel tests' lines are interleaved, and a failure's cause
# is otherwise far from the end of the output.
why_failed() {
	awk -v group="$1" '
		/^=== (RUN|CONT|NAME|PAUSE) / { current = $3; sub(/\/.*/, "", current); next }
		/^ +[^ -][^ ]*\.go:[0-9]+: / { n[current]++; line[current, n[current] % 4] = $0; next }
		/^--- FAIL: / { failed[++f] = $3 }
		END {
			for (i = 1; i <= f; i++) {
				test = failed[i]
				print "e2e: " group " test failed: " test
				start = n[test] > 4 ? n[test] - 3 : 1
				for (k = start; k <= n[test]; k++) print "e2e:   " substr(line[test, k % 4], 1, 400)
			}
		}' "$2"
}
for i in "${!logs[@]}"; do
	read -r group _ <<<"${runs[i]}"
	why_failed "${group}" "${logs[i]}" >&2
done

# Every test that started ran to an end in one group at least: none was
# skipped by both. A parallel test that ran (its === CONT line) in a group
# that passed counts too: go test -v now and then loses a parallel test's
# --- PASS line among the others' output.
passed_logs=()
for i in "${!logs[@]}"; do
	[[ "${group_status[i]}" == ok ]] && passed_logs+=("${logs[i]}")
done
missing=()
for test in $(cat "${logs[@]}" | sed -n 's/^=== RUN   \(Test[^/]*\)$/\1/p' | sort -u); do
	if ! grep -qE "^--- (PASS|FAIL): ${test} " "${logs[@]}" &&
		! { [[ ${#passed_logs[@]} -gt 0 ]] && grep -qxF "=== CONT  ${test}" "${passed_logs[@]}"; }; then
		missing+=("${test}")
	fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
	log "ran in no group (skipped in each): ${missing[*]}"
	failed=1
fi
log "done in $((SECONDS - started))s"
exit "${failed}"
