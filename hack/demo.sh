#!/usr/bin/env bash
# The main job, end to end, on a local cluster it brings up itself: build the
# cluster tools (once), start the cluster, install the CRD, run the operator,
# apply the example Robots, wait until they are Ready, and show what runs.
#
# Usage: hack/demo.sh         run the demo (again: it restarts the operator)
#        hack/demo.sh stop    stop the operator the demo started
#        hack/demo.sh crd     only install (or update) the Robot CRD, its
#                             conversion at the operator on this host
#        hack/demo.sh examples  only apply artifacts/examples/, make the
#                             Gateway site names and accept site's route,
#                             replace hello through v1alpha1 (the operator
#                             running, the Gateway API installed)
#
# Environment: CLUSTER_NAME and KUBECONFIG_OUT, as hack/cluster.sh reads them
# (robot-operator, _output/kubeconfig); WEBHOOK_PORT, where the operator
# serves the conversion webhook on 127.0.0.1 (9443).
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
OUT="${ROOT}/_output"
PIDFILE="${OUT}/operator.pid"
LOG="${OUT}/operator.log"
export KUBECONFIG_OUT="${KUBECONFIG_OUT:-${OUT}/kubeconfig}"
export KUBECONFIG="${KUBECONFIG_OUT}"
WEBHOOK_PORT=${WEBHOOK_PORT:-9443}

step() { printf '\n==> %s\n' "$*"; }

stop_operator() {
	if [[ -f "${PIDFILE}" ]]; then
		local pid
		pid=$(cat "${PIDFILE}")
		if kill -0 "${pid}" 2>/dev/null; then
			echo "Stopping the operator (pid ${pid})"
			kill -TERM "${pid}"
			for _ in $(seq 50); do kill -0 "${pid}" 2>/dev/null || break; sleep 0.2; done
		fi
		rm -f "${PIDFILE}"
	fi
}

# install_crd installs (or updates) the Robot CRD, its conversion at the
# operator on this host, in one apply: it can run again. It prints the
# operator's webhook flags.
install_crd() {
	step "Installing the Robot CRD, its conversion at the operator on this host (127.0.0.1:${WEBHOOK_PORT})" >&2
	KUBECTL="${KUBECTL}" KUBECONFIG="${KUBECONFIG}" hack/local-webhook.sh "${WEBHOOK_PORT}"
}

apply_examples() {
	step "Applying artifacts/examples/"
	# An earlier demo replaced hello with kubectl replace, which made the
	# whole object, resourceVersion included, its last-applied configuration:
	# kubectl apply would ask to remove the resourceVersion. Drop it; the
	# apply writes it again.
	if "${KUBECTL}" get robot hello -o jsonpath='{.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}' 2>/dev/null |
		grep -q '"resourceVersion"'; then
		"${KUBECTL}" annotate robot hello kubectl.kubernetes.io/last-applied-configuration- >/dev/null
	fi
	"${KUBECTL}" apply -f artifacts/examples/
}

# site_ready_reason waits up to 120 s for site's Ready to be True or to have
# one of the reasons given, and sets ready and reason.
site_ready_reason() {
	for _ in $(seq 120); do
		ready=$("${KUBECTL}" get robot site -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')
		reason=$("${KUBECTL}" get robot site -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}')
		[[ "${ready}" == True ]] && return
		for want in "$@"; do
			[[ "${reason}" == "${want}" ]] && return
		done
		sleep 1
	done
}

accept_site_route() {
	local ready reason generation now
	step "site waits for its Gateway: no Gateway controller runs on this local cluster"
	site_ready_reason GatewayNotFound RouteNotAccepted
	"${KUBECTL}" get robot site -o jsonpath='Ready={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}{"\n"}'
	# An earlier run of the demo accepted site's route, and the route keeps
	# what its Gateway said.
	if [[ "${ready}" == True ]]; then
		echo "site is Ready already: an earlier run accepted its HTTPRoute"
		return
	fi
	# The operator says GatewayNotFound once it has found the Gateway API's
	# Gateways; until then it waits for an answer that will not come.
	if "${KUBECTL}" get crd gateways.gateway.networking.k8s.io >/dev/null 2>&1 &&
		! "${KUBECTL}" get gateway public >/dev/null 2>&1; then
		step "Making the Gateway public that site names (of a GatewayClass no controller runs here)"
		"${KUBECTL}" apply -f - <<GATEWAY
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: demo
spec:
  controllerName: demo.robot.dev/gateway-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: public
spec:
  gatewayClassName: demo
  listeners:
  - name: http
    protocol: HTTP
    port: 80
GATEWAY
		site_ready_reason RouteNotAccepted
		"${KUBECTL}" get robot site -o jsonpath='Ready={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}{"\n"}'
	fi
	[[ "${reason}" == RouteNotAccepted ]] || { echo "site does not wait for its Gateway; the operator's log is ${LOG}" >&2; exit 1; }

	step "Playing the Gateway controller's part: the Gateway public accepts site's HTTPRoute"
	generation=$("${KUBECTL}" get httproute site -o jsonpath='{.metadata.generation}')
	now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	"${KUBECTL}" patch httproute site --subresource=status --type=merge -p "{\"status\":{\"parents\":[{\"parentRef\":{\"name\":\"public\"},
		\"controllerName\":\"demo.robot.dev/gateway-controller\",\"conditions\":[{\"type\":\"Accepted\",\"status\":\"True\",
		\"reason\":\"Accepted\",\"message\":\"\",\"observedGeneration\":${generation},\"lastTransitionTime\":\"${now}\"}]}]}}" >/dev/null
	if ! "${KUBECTL}" wait --for=condition=Ready robot/site --timeout=120s; then
		"${KUBECTL}" describe robot site
		echo "site did not become Ready; the operator's log is ${LOG}" >&2
		exit 1
	fi
}

replace_through_v1alpha1() {
	step "hello, written as v1beta1 with two ports, replaced through v1alpha1, keeps both"
	# A PUT of what the GET returned, as a client of v1alpha1 does: kubectl
	# replace -f would also make the object its last-applied configuration,
	# and break the next kubectl apply of the examples. The operator may
	# write hello's status between the two: then get it again.
	local namespace attempt out
	namespace=$("${KUBECTL}" get robot hello -o jsonpath='{.metadata.namespace}')
	for attempt in $(seq 5); do
		if out=$("${KUBECTL}" get robots.v1alpha1.robot.dev hello -o json |
			"${KUBECTL}" replace --raw "/apis/robot.dev/v1alpha1/namespaces/${namespace}/robots/hello" -f - 2>&1 >/dev/null); then
			break
		fi
		[[ "${out}" == *Conflict* && ${attempt} -lt 5 ]] || { echo "${out}" >&2; exit 1; }
		sleep 1
	done
	local ports
	ports=$("${KUBECTL}" get robots.v1beta1.robot.dev hello -o jsonpath='{range .spec.ports[*]}{.name}:{.containerPort}/{.protocol} {end}')
	echo "hello's ports as v1beta1 after the replace: ${ports}"
	[[ "${ports}" == "http:8080/TCP echo:8081/UDP " ]] || { echo "hello lost a port through v1alpha1" >&2; exit 1; }
}

case "${1:-}" in
stop)
	stop_operator
	exit 0
	;;
crd)
	eval "$(hack/tools.sh env)"
	install_crd >/dev/null
	exit 0
	;;
examples)
	eval "$(hack/tools.sh env)"
	apply_examples
	accept_site_route
	replace_through_v1alpha1
	exit 0
	;;
esac

step "Building the cluster tools (cached after the first run, which takes about 10 minutes)"
hack/tools.sh cluster
eval "$(hack/tools.sh env)"

step "Starting the local cluster"
hack/cluster.sh up

flags=$(install_crd)
read -r -a webhook_flags <<<"${flags}"

step "Building and starting the operator (log: _output/operator.log)"
make --no-print-directory build
stop_operator
mkdir -p "${OUT}"
# One replica, so no leader election; probes and metrics on loopback only,
# metrics over plain HTTP so that curl needs no token; the conversion
# webhook on 127.0.0.1:WEBHOOK_PORT, where the CRD now sends the API server.
nohup bin/robot-operator -kubeconfig "${KUBECONFIG}" -v=2 -leader-elect=false \
	-metrics-bind-address=127.0.0.1:8080 -metrics-secure=false -health-probe-bind-address=127.0.0.1:8081 \
	"${webhook_flags[@]}" >"${LOG}" 2>&1 &
echo $! >"${PIDFILE}"
for _ in $(seq 150); do
	grep -q '"Started workers"' "${LOG}" && break
	if ! kill -0 "$(cat "${PIDFILE}")" 2>/dev/null; then
		echo "The operator exited:" >&2
		cat "${LOG}" >&2
		exit 1
	fi
	sleep 0.2
done
grep -q '"Started workers"' "${LOG}" || { echo "The operator did not start within 30s; see ${LOG}" >&2; exit 1; }

step "Installing the Gateway API's CRDs, from the Go module cache (the operator finds them with no restart)"
gateway_api=$(go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api)
for crd in gatewayclasses gateways httproutes; do
	"${KUBECTL}" apply --server-side -f "${gateway_api}/config/crd/standard/gateway.networking.k8s.io_${crd}.yaml" >/dev/null
done
"${KUBECTL}" wait --for=condition=Established crd/httproutes.gateway.networking.k8s.io --timeout=60s

apply_examples

step "Waiting for the Robots hello and web to be Ready"
if ! "${KUBECTL}" wait --for=condition=Ready robot/hello robot/web --timeout=120s; then
	"${KUBECTL}" describe robots
	echo "The Robots did not become Ready; the operator's log is ${LOG}" >&2
	exit 1
fi

accept_site_route

step "kubectl get robots,deployments,services,poddisruptionbudgets,httproutes,pods"
"${KUBECTL}" get robots,deployments,services,poddisruptionbudgets,httproutes,pods -o wide

step "Both versions: robots.v1beta1.robot.dev (stored) and robots.v1alpha1.robot.dev (converted by the operator)"
"${KUBECTL}" get robots.v1beta1.robot.dev
"${KUBECTL}" get robots.v1alpha1.robot.dev

replace_through_v1alpha1

cat <<MSG

The operator is running in the background (pid $(cat "${PIDFILE}"), log ${LOG#"${ROOT}"/}).
Look around:
  export KUBECONFIG=${KUBECONFIG}
  alias kubectl=${KUBECTL}     # a kubectl of the cluster's version
  kubectl get robots                        # or: kubectl get rb
  kubectl describe robot hello
  kubectl get robot web -o yaml             # probes, a ConfigMap mounted, securityProfile restricted
  kubectl get robot site -o yaml            # a sidecar, an init container, a preStop hook, an HTTPRoute
  kubectl get pdb,httproutes                # site's PodDisruptionBudget and HTTPRoute
  kubectl scale robot hello --replicas=3    # through the scale subresource
  kubectl explain robot.spec
  tail -f ${LOG#"${ROOT}"/}
  curl -s 127.0.0.1:8080/metrics | grep ^robot_operator_
  curl -s 127.0.0.1:8081/readyz
Stop:
  make demo-stop       # stop the operator
  make cluster-down    # stop the operator and remove the cluster
MSG
