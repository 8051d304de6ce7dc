#!/usr/bin/env bash
# Runs the parts of `make test` side by side: each is a make target with
# local clusters of its own, if any, and its output in _output/test/PART.log.
# It prints a line as each part starts and ends, then a summary of every
# part, its time and its result; it fails if any part failed, and prints the
# end of each failed part's log.
#
# Usage: hack/test.sh [PART...]     the parts (default: all those of make test)
#
# When every part passed, it removes the clusters of e2e, e2e-oldest and
# chart-e2e (TEST_KEEP_CLUSTERS=1 keeps them); when one failed, it leaves
# them up for a look.
#
# First, with nothing else running, it builds what the parts share: the
# tools (hack/tools.sh), the operator and the e2e test binary, once for all.
# Then it starts the parts in the order of SCHEDULE: a part named PART:AFTER
# starts once the part AFTER has ended (so that the parts that compile much
# do not all compete at once for the CPU with those whose checks measure
# time). A part left out of the run frees those that wait for it.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
OUT="${ROOT}/_output/test"
mkdir -p "${OUT}"

SCHEDULE=${TEST_SCHEDULE:-"unit chaos-short chart-e2e image-test:unit e2e:unit bench-smoke:chart-e2e flood:bench-smoke e2e-oldest:image-test chart-test:image-test release-test:chart-test monitoring-test:chart-test"}

log() { echo "test: $(date +%H:%M:%S) $*"; }

duration() {
	if (($1 >= 60)); then
		printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
	else
		printf '%ds' "$1"
	fi
}

# The parts to run, in the order of the schedule.
declare -A wanted=() after=()
order=()
for entry in ${SCHEDULE}; do
	order+=("${entry%%:*}")
	[[ "${entry}" != *:* ]] || after[${entry%%:*}]=${entry#*:}
done
if [[ $# -gt 0 ]]; then
	for part in "$@"; do
		[[ " ${order[*]} " == *" ${part} "* ]] || { echo "test: no part ${part}; the parts are: ${order[*]}" >&2; exit 2; }
		wanted[${part}]=1
	done
else
	for part in "${order[@]}"; do wanted[${part}]=1; done
fi

started=${SECONDS}
log "building what the parts share (log: _output/test/prepare.log)"
# prepare runs where errexit does not hold (a condition): each step says
# whether to go on.
prepare() {
	local tools=(cluster)
	[[ -z "${wanted[monitoring-test]:-}" ]] || tools+=(promtool)
	[[ -z "${wanted[chart-test]:-}${wanted[chart-e2e]:-}${wanted[release-test]:-}" ]] || tools+=(helm)
	hack/tools.sh "${tools[@]}" || return
	if [[ -n "${wanted[e2e-oldest]:-}" ]]; then
		K8S_VERSION=oldest hack/tools.sh cluster || return
	fi
	make --no-print-directory build BIN="${OUT}/robot-operator" || return
	if [[ -n "${wanted[e2e]:-}${wanted[e2e-oldest]:-}" ]]; then
		make --no-print-directory plugin PLUGIN_BIN="${OUT}/plugin/kubectl-robot" || return
		go test -c -tags e2e -o "${OUT}/e2e.test" ./test/e2e/ || return
	fi
}
# Its output goes to the terminal too: on a fresh machine the tools take
# half an hour to build, and say how far they are.
if ! prepare 2>&1 | tee "${OUT}/prepare.log" | { grep --line-buffered -v '^go: downloading' || true; }; then
	log "FAILED to build what the parts share"
	exit 1
fi
log "built it in $(duration $((SECONDS - started)))"

# What the parts share, for the make targets that take it.
export E2E_OPERATOR_BIN="${OUT}/robot-operator" E2E_TEST_BIN="${OUT}/e2e.test" OPERATOR_BIN="${OUT}/robot-operator" \
	E2E_PLUGIN_BIN="${OUT}/plugin/kubectl-robot"

declare -A pid=() begun=() took=() result=()
start_part() {
	local part=$1
	log "${part}: started (log: _output/test/${part}.log)"
	begun[${part}]=${SECONDS}
	make --no-print-directory "${part}" >"${OUT}/${part}.log" 2>&1 &
	pid[${part}]=$!
}

# ready PART: PART waits for nothing, or for a part that has ended or does
# not run.
ready() {
	local before=${after[$1]:-}
	[[ -z "${before}" || -z "${wanted[${before}]:-}" || -n "${result[${before}]:-}" ]]
}

pending=()
for part in "${order[@]}"; do
	[[ -n "${wanted[${part}]:-}" ]] && pending+=("${part}")
done
while :; do
	rest=()
	for part in "${pending[@]}"; do
		if ready "${part}"; then
			start_part "${part}"
		else
			rest+=("${part}")
		fi
	done
	pending=("${rest[@]}")
	running=0
	for part in "${!pid[@]}"; do
		[[ -n "${result[${part}]:-}" ]] && continue
		if kill -0 "${pid[${part}]}" 2>/dev/null; then
			running=$((running + 1))
			continue
		fi
		if wait "${pid[${part}]}"; then
			result[${part}]=ok
		else
			result[${part}]=FAILED
		fi
		took[${part}]=$((SECONDS - begun[${part}]))
		log "${part}: ${result[${part}]} in $(duration "${took[${part}]}")"
	done
	[[ ${running} -gt 0 || ${#pending[@]} -gt 0 ]] || break
	sleep 1
done

failed=()
echo
printf '%-16s %-7s %8s\n' part result time
for part in "${order[@]}"; do
	[[ -n "${wanted[${part}]:-}" ]] || continue
	printf '%-16s %-7s %8s\n' "${part}" "${result[${part}]}" "$(duration "${took[${part}]}")"
	[[ "${result[${part}]}" == ok ]] || failed+=("${part}")
done
printf '%-16s %-7s %8s\n' total "$([[ ${#failed[@]} -eq 0 ]] && echo ok || echo FAILED)" "$(duration $((SECONDS - started)))"
for part in "${failed[@]}"; do
	echo
	echo "--- the end of _output/test/${part}.log:"
	tail -n 60 "${OUT}/${part}.log"
done
if [[ ${#failed[@]} -gt 0 ]]; then
	# What failed, last, where a reader of only the end of the output sees
	# it: the failed tests and their last messages.
	echo
	for part in "${failed[@]}"; do
		grep -h -E '^e2e: .*test failed: |^e2e:   |^--- FAIL: |^FAIL	' "${OUT}/${part}.log" | head -n 24 | sed "s/^/${part}: /" || true
	done
	echo
	log "FAILED: ${failed[*]}; their clusters are left up for a look (make cluster-down removes them)"
	exit 1
fi
# Idle clusters still cost CPU: remove those of the parts, all passed.
if [[ -z "${TEST_KEEP_CLUSTERS:-}" && -n "${wanted[e2e]:-}${wanted[e2e-oldest]:-}${wanted[chart-e2e]:-}" ]]; then
	make --no-print-directory test-clusters-down >"${OUT}/clusters-down.log" 2>&1 || log "removing the clusters failed: see _output/test/clusters-down.log"
fi
