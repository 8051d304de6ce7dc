#!/usr/bin/env bash
# Checks the in-cluster deployment (artifacts/deploy) against a real API
# server, and proves that the RBAC it grants is enough for the operator:
#
#   1. the manifests apply with no warning: a server-side dry run, a real
#      apply, and a second apply that changes nothing;
#   2. Pod Security "restricted" is enforced in the operator's namespace, and
#      the operator's pods are admitted under it and become Running;
#   3. what the ServiceAccount may do matches artifacts/deploy/testdata/
#      can-i.golden (cluster-scoped variant only), each verb the operator
#      needs is allowed and a sample of others is denied;
#   4. the operator binary, run with a token of the ServiceAccount (pods do
#      not really run on a kwok cluster), takes the leader election Lease,
#      makes the example Robot Ready, scales it and sees it deleted, and
#      stops cleanly; the API server's audit log has not a single 403 for
#      the ServiceAccount (and does record one that the script provokes,
#      which shows the log is read right), and the operator's log says
#      nothing of "forbidden".
#
# Usage: hack/deploy-check.sh [--namespaced] [--undeploy]
#   --namespaced   check artifacts/deploy-namespaced instead: the Robot goes
#                  into the watched namespace (created if missing), the
#                  operator runs with -namespace, no golden file
#   --undeploy     at the end, delete the manifests twice (both must succeed)
#                  and check that they are gone; this deletes the CRD, so
#                  every Robot in the cluster
#
# Environment:
#   KUBECONFIG  the cluster's admin kubeconfig (required). Use a cluster of
#               its own (make deploy-check does): it applies the manifests,
#               and runs a second operator that would fight any other one.
#   AUDIT_LOG   the API server's audit log, JSON lines, recording at least
#               writes at level Metadata (required; hack/cluster.sh's
#               clusters: ~/.kwok/clusters/NAME/logs/audit.log)
#   KUBECTL     default: the cluster's kubectl from hack/tools.sh
#   BIN         the operator binary (default: `make build`, bin/robot-operator)
#   TIMEOUT     how long to wait for each step (default 120s)
#
# Prints one line per check and a summary; on a failure, what went wrong and
# the logs, and exits 1.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

NAMESPACED=false
UNDEPLOY=false
for arg in "$@"; do
	case "${arg}" in
	--namespaced) NAMESPACED=true ;;
	--undeploy) UNDEPLOY=true ;;
	*)
		echo "usage: $0 [--namespaced] [--undeploy]" >&2
		exit 2
		;;
	esac
done
: "${KUBECONFIG:?set KUBECONFIG to the admin kubeconfig of the cluster}"
: "${AUDIT_LOG:?set AUDIT_LOG to the audit log of the API server}"
export KUBECONFIG
if [[ -z "${KUBECTL:-}" ]]; then
	eval "$(hack/tools.sh env)"
fi
TIMEOUT=${TIMEOUT:-120s}

DEPLOY_DIR=artifacts/deploy
if ${NAMESPACED}; then
	DEPLOY_DIR=artifacts/deploy-namespaced
fi
GOLDEN=artifacts/deploy/testdata/can-i.golden
OP_NS=robot-operator
SA=robot-operator
SA_USER="system:serviceaccount:${OP_NS}:${SA}"
LEASE=robot-operator

WORK=$(mktemp -d "${TMPDIR:-/tmp}/deploy-check.XXXXXX")
OPERATOR_PID=
# TEST_NS is deleted at exit when TEST_NS_OWNED (the script created it).
TEST_NS=
TEST_NS_OWNED=false
CHECKS=0

cleanup() {
	local status=$?
	if [[ -n "${OPERATOR_PID}" ]] && kill -0 "${OPERATOR_PID}" 2>/dev/null; then
		kill -TERM "${OPERATOR_PID}" 2>/dev/null || true
		wait "${OPERATOR_PID}" 2>/dev/null || true
	fi
	if [[ -n "${TEST_NS}" ]] && ${TEST_NS_OWNED}; then
		"${KUBECTL}" delete namespace "${TEST_NS}" --ignore-not-found --wait=false >/dev/null 2>&1 || true
	fi
	if [[ ${status} -eq 0 ]]; then
		rm -rf "${WORK}"
	else
		echo "deploy-check: FAILED; files kept in ${WORK}" >&2
	fi
}
trap cleanup EXIT

ok() {
	CHECKS=$((CHECKS + 1))
	echo "ok   $*"
}

# fail MESSAGE [FILE...] explains, shows the files, and exits.
fail() {
	local message=$1
	shift
	echo "FAIL ${message}" >&2
	local f
	for f in "$@"; do
		if [[ -s "${f}" ]]; then
			echo "---- ${f##*/}" >&2
			tail -n 60 "${f}" >&2
		fi
	done
	if [[ -s "${WORK}/operator.log" ]]; then
		echo "---- operator.log (last 40 lines)" >&2
		tail -n 40 "${WORK}/operator.log" >&2
	fi
	exit 1
}

# run NAME CMD... runs CMD with its stdout and stderr in WORK/NAME.out and
# WORK/NAME.err; fails unless it succeeds.
run() {
	local name=$1
	shift
	if ! "$@" >"${WORK}/${name}.out" 2>"${WORK}/${name}.err"; then
		fail "${name}: $* exited non-zero" "${WORK}/${name}.out" "${WORK}/${name}.err"
	fi
}

# no_stderr NAME fails if the command NAME printed anything on stderr: a
# warning (Pod Security's among them) is a failure.
no_stderr() {
	if [[ -s "${WORK}/$1.err" ]]; then
		fail "$1 printed on stderr (a warning is a failure)" "${WORK}/$1.err"
	fi
}

# audit_lines FROM prints the complete audit events of the ServiceAccount
# itself (not of someone impersonating it) written after byte offset FROM.
audit_lines() {
	tail -c +"$(($1 + 1))" "${AUDIT_LOG}" |
		grep -F "\"user\":{\"username\":\"${SA_USER}\"" |
		grep -E '"stage":"(ResponseComplete|Panic)"' || true
}

# audit_summary reads audit events and prints "verb resource[/subresource]
# code" with a count, one a line.
audit_summary() {
	awk '{
		verb = res = sub_ = code = "?"
		if (match($0, /"verb":"[^"]*"/)) verb = substr($0, RSTART + 8, RLENGTH - 9)
		if (match($0, /"objectRef":\{"resource":"[^"]*"/)) res = substr($0, RSTART + 25, RLENGTH - 26)
		if (match($0, /"subresource":"[^"]*"/)) res = res "/" substr($0, RSTART + 15, RLENGTH - 16)
		# At level Metadata, only responseStatus has a "code".
		if (match($0, /"code":[0-9]+/)) code = substr($0, RSTART + 7, RLENGTH - 7)
		print verb, res, code
	}' | sort | uniq -c | sort -k2
}

audit_offset() { stat -c %s "${AUDIT_LOG}"; }

# wait_for DESCRIPTION SECONDS CMD... retries CMD once a second.
wait_for() {
	local what=$1 seconds=$2
	shift 2
	local i
	for ((i = 0; i < seconds; i++)); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 1
	done
	fail "timed out after ${seconds}s waiting for ${what}"
}

# ---- 0. The cluster, the audit log, the binary.

run version "${KUBECTL}" version
[[ -r "${AUDIT_LOG}" ]] || fail "no readable audit log at ${AUDIT_LOG}"
if [[ -z "${BIN:-}" ]]; then
	run build make --no-print-directory build
	BIN=bin/robot-operator
fi
[[ -x "${BIN}" ]] || fail "no operator binary at ${BIN}"
ok "cluster $("${KUBECTL}" config view --minify -o jsonpath='{.clusters[0].cluster.server}') answers; audit log ${AUDIT_LOG}; binary ${BIN}"

WATCH_NS=
if ${NAMESPACED}; then
	WATCH_NS=$(sed -n 's/^  namespace: *//p' "${DEPLOY_DIR}/watch-namespace.yaml")
	[[ -n "${WATCH_NS}" ]] || fail "no namespace in ${DEPLOY_DIR}/watch-namespace.yaml"
	# The watched namespace is the user's: the manifests do not create it.
	"${KUBECTL}" get namespace "${WATCH_NS}" >/dev/null 2>&1 || run create-watch-ns "${KUBECTL}" create namespace "${WATCH_NS}"
fi

# ---- 1. Render, dry-run, apply, apply again.

run render "${KUBECTL}" kustomize "${DEPLOY_DIR}"
no_stderr render
grep -qx 'kind: CustomResourceDefinition' "${WORK}/render.out" || fail "the kustomization does not include the CRD"
if ${NAMESPACED}; then
	# Only the metrics reviews (metrics-rbac.yaml) are cluster-wide.
	cluster_rbac=$(grep -A3 -E '^kind: Cluster(Role|RoleBinding)$' "${WORK}/render.out" | sed -n 's/^  name: //p' | sort -u | tr '\n' ' ')
	[[ "${cluster_rbac}" == "robot-operator-metrics-auth robot-operator-metrics-reader " ]] ||
		fail "the namespaced variant has ClusterRoles or ClusterRoleBindings other than those of metrics-rbac.yaml: ${cluster_rbac}"
fi
ok "kubectl kustomize ${DEPLOY_DIR}: $(grep -c '^kind:' "${WORK}/render.out") objects, the CRD included"

# A server-side dry run of objects in a namespace that does not exist yet
# fails (the dry run creates nothing), so the Namespace goes first, as it is
# in the manifests: then the dry run sees its Pod Security labels too.
if ! "${KUBECTL}" get namespace "${OP_NS}" >/dev/null 2>&1; then
	awk 'BEGIN { RS = "\n---\n" } /(^|\n)kind: Namespace\n/ { print "---"; print }' "${WORK}/render.out" >"${WORK}/namespace.yaml"
	run create-namespace "${KUBECTL}" apply -f "${WORK}/namespace.yaml"
	no_stderr create-namespace
fi

run dry-run "${KUBECTL}" apply -k "${DEPLOY_DIR}" --dry-run=server
no_stderr dry-run
ok "kubectl apply -k ${DEPLOY_DIR} --dry-run=server: no error, no warning ($(wc -l <"${WORK}/dry-run.out") objects)"

run apply "${KUBECTL}" apply -k "${DEPLOY_DIR}"
no_stderr apply
ok "kubectl apply -k ${DEPLOY_DIR}: no error, no warning"

# Applying again must change nothing: no object gets a new resourceVersion.
# (kubectl still prints "configured" for the PodDisruptionBudget: its
# selector has patchStrategy replace, so client-side apply always sends it,
# in a patch that changes nothing.)
versions() {
	"${KUBECTL}" get -k "${DEPLOY_DIR}" \
		-o jsonpath='{range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name} {.metadata.resourceVersion}{"\n"}{end}'
}
run versions-before versions
run apply-again "${KUBECTL}" apply -k "${DEPLOY_DIR}"
no_stderr apply-again
run versions-after versions
if ! diff -u "${WORK}/versions-before.out" "${WORK}/versions-after.out" >"${WORK}/versions.diff"; then
	fail "applying twice changed objects (resourceVersions differ)" "${WORK}/versions.diff" "${WORK}/apply-again.out"
fi
ok "applying again changes nothing: the $(wc -l <"${WORK}/versions-after.out") objects keep their resourceVersions"

# ---- 2. Pod Security, and the operator's pods.

labels=$("${KUBECTL}" get namespace "${OP_NS}" -o jsonpath='{.metadata.labels}')
for mode in enforce audit warn; do
	[[ "${labels}" == *"\"pod-security.kubernetes.io/${mode}\":\"restricted\""* ]] ||
		fail "namespace ${OP_NS} is not labelled pod-security.kubernetes.io/${mode}=restricted: ${labels}"
done
# Pod Security admission must be on, or "no warning" proves nothing: a pod
# that breaks "restricted" is refused.
if "${KUBECTL}" run psa-probe -n "${OP_NS}" --image=registry.k8s.io/pause:3.10 --restart=Never --dry-run=server \
	>"${WORK}/psa-probe.out" 2>&1; then
	fail "a pod that breaks Pod Security restricted was admitted in ${OP_NS}" "${WORK}/psa-probe.out"
fi
grep -q 'violates PodSecurity "restricted' "${WORK}/psa-probe.out" ||
	fail "a non-compliant pod was refused, but not by Pod Security" "${WORK}/psa-probe.out"
# ... and a Deployment whose pods would break it draws a warning, which is
# what the "no warning" checks above would have caught.
if ! "${KUBECTL}" create deployment psa-probe -n "${OP_NS}" --image=registry.k8s.io/pause:3.10 --dry-run=server -o name \
	>"${WORK}/psa-probe-deployment.out" 2>"${WORK}/psa-probe-deployment.err"; then
	fail "a server-side dry run of a Deployment failed in ${OP_NS}" "${WORK}/psa-probe-deployment.err"
fi
grep -q 'Warning: would violate PodSecurity "restricted' "${WORK}/psa-probe-deployment.err" ||
	fail "a Deployment that breaks Pod Security restricted drew no warning in ${OP_NS}" "${WORK}/psa-probe-deployment.err"
ok "namespace ${OP_NS} enforces, audits and warns Pod Security restricted (a non-compliant pod is refused, a non-compliant Deployment warned about)"

if ! "${KUBECTL}" rollout status deployment/robot-operator -n "${OP_NS}" --timeout="${TIMEOUT}" \
	>"${WORK}/rollout.out" 2>&1; then
	"${KUBECTL}" get events -n "${OP_NS}" >"${WORK}/events.out" 2>&1 || true
	fail "the operator's Deployment did not roll out" "${WORK}/rollout.out" "${WORK}/events.out"
fi
replicas=$("${KUBECTL}" get deployment robot-operator -n "${OP_NS}" -o jsonpath='{.spec.replicas}')
pods=$("${KUBECTL}" get pods -n "${OP_NS}" -l app.kubernetes.io/name=robot-operator \
	-o jsonpath='{range .items[*]}{.metadata.name} {.status.phase} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}')
running=$(grep -c ' Running True$' <<<"${pods}" || true)
[[ "${running}" -ge "${replicas}" ]] || fail "expected ${replicas} Running and Ready operator pods, got: ${pods}"
"${KUBECTL}" get events -n "${OP_NS}" --field-selector reason=FailedCreate -o name >"${WORK}/failed-create.out"
[[ ! -s "${WORK}/failed-create.out" ]] || fail "pods were refused in ${OP_NS}" "${WORK}/failed-create.out"
ok "the operator's ${replicas} pods were admitted under restricted and are Running and Ready"

# ---- 3. What the ServiceAccount may do.

if ! ${NAMESPACED}; then
	run can-i "${KUBECTL}" auth can-i --list --as="${SA_USER}" -n "${OP_NS}"
	if ! diff -u "${GOLDEN}" "${WORK}/can-i.out" >"${WORK}/can-i.diff"; then
		fail "kubectl auth can-i --list differs from ${GOLDEN} (make rbac-golden regenerates it)" "${WORK}/can-i.diff"
	fi
	ok "kubectl auth can-i --list --as=${SA_USER} -n ${OP_NS} matches ${GOLDEN}"
fi

# Where Robots live: any namespace (checked in a fresh one), or the watched one.
if ${NAMESPACED}; then
	TEST_NS_CHECK=${WATCH_NS}
else
	TEST_NS_CHECK=deploy-check-rbac
fi
allowed=(
	"get robots.robot.dev" "list robots.robot.dev" "watch robots.robot.dev"
	"patch robots.robot.dev --subresource=status"
	"update robots.robot.dev --subresource=finalizers"
	"get deployments.apps" "list deployments.apps" "watch deployments.apps"
	"create deployments.apps" "patch deployments.apps"
	"get services" "list services" "watch services" "create services" "patch services" "delete services"
	"create events" "patch events"
)
denied=(
	"delete deployments.apps" "delete robots.robot.dev" "create robots.robot.dev" "update robots.robot.dev"
	"update services" "create services --subresource=proxy"
	"get secrets" "list configmaps" "create pods" "create pods --subresource=exec"
	"create serviceaccounts --subresource=token" "delete events" "create events.events.k8s.io"
)
for check in "${allowed[@]}"; do
	# shellcheck disable=SC2086 # check is a verb, a resource and maybe a flag
	"${KUBECTL}" auth can-i ${check} -n "${TEST_NS_CHECK}" --as="${SA_USER}" >/dev/null 2>&1 ||
		fail "the ServiceAccount may not: ${check} in ${TEST_NS_CHECK}"
done
for check in "${denied[@]}"; do
	# shellcheck disable=SC2086
	! "${KUBECTL}" auth can-i ${check} -n "${TEST_NS_CHECK}" --as="${SA_USER}" >/dev/null 2>&1 ||
		fail "the ServiceAccount may, but should not: ${check} in ${TEST_NS_CHECK}"
done
"${KUBECTL}" auth can-i create leases.coordination.k8s.io -n "${OP_NS}" --as="${SA_USER}" >/dev/null 2>&1 ||
	fail "the ServiceAccount may not create Leases in ${OP_NS}"
for verb in get update; do
	"${KUBECTL}" auth can-i "${verb}" "leases.coordination.k8s.io/${LEASE}" -n "${OP_NS}" --as="${SA_USER}" >/dev/null 2>&1 ||
		fail "the ServiceAccount may not ${verb} the Lease ${OP_NS}/${LEASE}"
done
for check in "update leases.coordination.k8s.io/other" "delete leases.coordination.k8s.io/${LEASE}" "list leases.coordination.k8s.io" "watch leases.coordination.k8s.io"; do
	# shellcheck disable=SC2086
	! "${KUBECTL}" auth can-i ${check} -n "${OP_NS}" --as="${SA_USER}" >/dev/null 2>&1 ||
		fail "the ServiceAccount may, but should not: ${check} in ${OP_NS}"
done
! "${KUBECTL}" auth can-i create leases.coordination.k8s.io -n kube-system --as="${SA_USER}" >/dev/null 2>&1 ||
	fail "the ServiceAccount may create Leases outside ${OP_NS}"
if ${NAMESPACED}; then
	! "${KUBECTL}" auth can-i list robots.robot.dev --all-namespaces --as="${SA_USER}" >/dev/null 2>&1 ||
		fail "the namespaced variant may list Robots in every namespace"
	! "${KUBECTL}" auth can-i patch deployments.apps -n default --as="${SA_USER}" >/dev/null 2>&1 ||
		fail "the namespaced variant may patch Deployments outside ${WATCH_NS}"
fi
ok "the ServiceAccount may do the ${#allowed[@]} things the operator needs, and use its Lease; $((${#denied[@]} + 5)) others are denied"

# ---- 4. The operator, run with the ServiceAccount's token.

# A kubeconfig with the admin kubeconfig's server and CA, and the token.
server=$("${KUBECTL}" config view --minify -o jsonpath='{.clusters[0].cluster.server}')
"${KUBECTL}" config view --minify --raw --flatten \
	-o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"${WORK}/ca.crt"
tls=(--certificate-authority="${WORK}/ca.crt" --embed-certs=true)
if [[ ! -s "${WORK}/ca.crt" ]]; then
	tls=(--insecure-skip-tls-verify=true)
fi
TOKEN_KUBECONFIG="${WORK}/token-kubeconfig"
(
	umask 077
	token=$("${KUBECTL}" create token "${SA}" -n "${OP_NS}" --duration=1h)
	k() { "${KUBECTL}" config --kubeconfig="${TOKEN_KUBECONFIG}" "$@" >/dev/null; }
	k set-cluster cluster --server="${server}" "${tls[@]}"
	k set-credentials "${SA}" --token="${token}"
	k set-context "${SA}" --cluster=cluster --user="${SA}"
	k use-context "${SA}"
) || fail "could not write a kubeconfig with a token of ${OP_NS}/${SA}"
whoami=$("${KUBECTL}" --kubeconfig="${TOKEN_KUBECONFIG}" auth whoami -o jsonpath='{.status.userInfo.username}' 2>&1) ||
	fail "the token does not authenticate: ${whoami}"
[[ "${whoami}" == "${SA_USER}" ]] || fail "the token authenticates as ${whoami}, not ${SA_USER}"
ok "a token of ${OP_NS}/${SA} authenticates as ${SA_USER}"

# The Robot goes into a namespace of its own, or into the watched namespace,
# which the script leaves in place.
if ${NAMESPACED}; then
	TEST_NS=${WATCH_NS}
else
	TEST_NS=deploy-check-$(date +%s)
	TEST_NS_OWNED=true
	run test-ns "${KUBECTL}" create namespace "${TEST_NS}"
fi

OFFSET=$(audit_offset)
operator_args=(-kubeconfig "${TOKEN_KUBECONFIG}" -leader-elect -leader-elect-namespace "${OP_NS}"
	-metrics-bind-address 127.0.0.1:0 -health-probe-bind-address 127.0.0.1:0 -logging-format json)
if ${NAMESPACED}; then
	operator_args+=(-namespace "${WATCH_NS}")
fi
"${BIN}" "${operator_args[@]}" >"${WORK}/operator.log" 2>&1 &
OPERATOR_PID=$!
wait_for "the operator to become the leader and start its workers" 60 grep -q '"Started workers"' "${WORK}/operator.log"
holder=$("${KUBECTL}" get lease "${LEASE}" -n "${OP_NS}" -o jsonpath='{.spec.holderIdentity}')
[[ -n "${holder}" ]] || fail "the Lease ${OP_NS}/${LEASE} has no holder"
ok "the operator started with the token and holds the Lease ${OP_NS}/${LEASE}"

run robot "${KUBECTL}" apply -n "${TEST_NS}" -f artifacts/examples/robot.yaml
if ! "${KUBECTL}" wait -n "${TEST_NS}" --for=condition=Ready robot/hello --timeout="${TIMEOUT}" >"${WORK}/ready.out" 2>&1; then
	"${KUBECTL}" get robot hello -n "${TEST_NS}" -o yaml >"${WORK}/robot.yaml" 2>&1 || true
	fail "the Robot did not become Ready" "${WORK}/ready.out" "${WORK}/robot.yaml"
fi
ok "Robot ${TEST_NS}/hello is Ready"

run scale "${KUBECTL}" scale -n "${TEST_NS}" robot hello --replicas=3
if ! "${KUBECTL}" wait -n "${TEST_NS}" --for=jsonpath='{.status.readyReplicas}'=3 robot/hello --timeout="${TIMEOUT}" >"${WORK}/scaled.out" 2>&1 ||
	! "${KUBECTL}" wait -n "${TEST_NS}" --for=condition=Ready robot/hello --timeout="${TIMEOUT}" >>"${WORK}/scaled.out" 2>&1; then
	fail "the Robot did not scale to 3 Ready replicas" "${WORK}/scaled.out"
fi
# A change made behind the operator's back is reverted (an update of the
# Deployment, as opposed to its creation).
run drift "${KUBECTL}" scale -n "${TEST_NS}" deployment hello --replicas=1
wait_for "the operator to put the Deployment back to 3 replicas" 60 \
	bash -c "[[ \$('${KUBECTL}' get deployment hello -n '${TEST_NS}' -o jsonpath='{.spec.replicas}') == 3 ]]"
ok "scaled to 3 Ready replicas; a hand-made change to the Deployment was reverted"

run delete-robot "${KUBECTL}" delete -n "${TEST_NS}" robot hello --timeout="${TIMEOUT}"
if ! "${KUBECTL}" wait -n "${TEST_NS}" --for=delete deployment/hello --timeout="${TIMEOUT}" >"${WORK}/gc.out" 2>&1; then
	fail "the Robot's Deployment was not garbage collected" "${WORK}/gc.out"
fi
ok "Robot deleted; its Deployment was garbage collected"

kill -TERM "${OPERATOR_PID}"
status=0
wait "${OPERATOR_PID}" || status=$?
OPERATOR_PID=
[[ ${status} -eq 0 ]] || fail "the operator exited with status ${status} on SIGTERM"
grep -q '"Released the leader election Lease"' "${WORK}/operator.log" ||
	fail "the operator did not release the Lease"
ok "the operator stopped cleanly on SIGTERM and released the Lease"

# The audit log, after the writes above have settled.
sleep 1
audit_lines "${OFFSET}" >"${WORK}/audit.sa"
writes=$(wc -l <"${WORK}/audit.sa")
forbidden=$(grep -c '"code":403[,}]' "${WORK}/audit.sa" || true)
audit_summary <"${WORK}/audit.sa" >"${WORK}/audit.summary"
if [[ ${forbidden} -ne 0 ]]; then
	grep '"code":403[,}]' "${WORK}/audit.sa" >"${WORK}/audit.403"
	fail "${forbidden} of the ServiceAccount's requests were forbidden (403)" "${WORK}/audit.summary" "${WORK}/audit.403"
fi
# A Lease left by an earlier run is updated rather than created.
for need in "(create|update) leases" "patch deployments" "create services" "patch robots/status" "create events"; do
	grep -qE " ${need} 20[01]\$" "${WORK}/audit.summary" ||
		fail "the audit log has no successful '${need}' by the ServiceAccount: is ${AUDIT_LOG} this cluster's?" "${WORK}/audit.summary"
done
if grep -qi 'forbidden' "${WORK}/operator.log"; then
	grep -i 'forbidden' "${WORK}/operator.log" >"${WORK}/operator.forbidden"
	fail "the operator's log mentions \"forbidden\"" "${WORK}/operator.forbidden"
fi
ok "audit log: ${writes} writes by ${SA_USER}, 0 answered 403; the operator's log never says \"forbidden\""
sed 's/^/       /' "${WORK}/audit.summary"

# The 403 check would pass on a log it cannot read: provoke one and find it.
OFFSET=$(audit_offset)
if "${KUBECTL}" --kubeconfig="${TOKEN_KUBECONFIG}" delete deployment deploy-check-probe -n "${TEST_NS}" >"${WORK}/probe.out" 2>&1; then
	fail "the ServiceAccount may delete Deployments" "${WORK}/probe.out"
fi
grep -q 'Forbidden' "${WORK}/probe.out" || fail "deleting a Deployment with the token failed, but not as forbidden" "${WORK}/probe.out"
wait_for "the provoked 403 to appear in the audit log" 10 \
	bash -c "tail -c +$((OFFSET + 1)) '${AUDIT_LOG}' | grep -F '\"user\":{\"username\":\"${SA_USER}\"' | grep -q '\"code\":403[,}]'"
ok "a provoked 403 (delete deployments) is found in the audit log, so the count above is meaningful"

if ${TEST_NS_OWNED}; then
	"${KUBECTL}" delete namespace "${TEST_NS}" --wait=false >/dev/null
fi
TEST_NS=

# ---- 5. Undeploy, twice.

if ${UNDEPLOY}; then
	run undeploy "${KUBECTL}" delete -k "${DEPLOY_DIR}" --ignore-not-found --timeout="${TIMEOUT}"
	run undeploy-again "${KUBECTL}" delete -k "${DEPLOY_DIR}" --ignore-not-found --timeout="${TIMEOUT}"
	! "${KUBECTL}" get namespace "${OP_NS}" >/dev/null 2>&1 || fail "namespace ${OP_NS} is still there"
	! "${KUBECTL}" get crd robots.robot.dev >/dev/null 2>&1 || fail "the CRD is still there"
	! "${KUBECTL}" get clusterrole robot-operator >/dev/null 2>&1 || fail "the ClusterRole is still there"
	ok "kubectl delete -k ${DEPLOY_DIR} --ignore-not-found, twice: both succeed and everything is gone"
fi

echo "deploy-check: ${CHECKS} checks passed (${DEPLOY_DIR}, ${writes} operator writes, 0 forbidden)"
