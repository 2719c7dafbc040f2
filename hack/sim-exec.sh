#!/usr/bin/env bash
# Run a command (default: your shell) inside the network namespace of the simulated cluster that
# hack/sim-cluster.sh started, with KUBECONFIG and a private KUBECACHEDIR set, and the pinned
# kubectl and helm on PATH:
#   hack/sim-exec.sh kubectl get nodes -L nvidia.com/gpu.product
#   hack/sim-exec.sh helm install nemotron-operator charts/nemotron-operator \
#     --namespace nemotron-system --create-namespace --wait
# $SIM_KUBECONFIG names the cluster as for hack/sim-cluster.sh (default .cache/sim/kubeconfig).
source "$(dirname "$0")/lib.sh"
ensure_venv
KUBECONFIG_PATH="${SIM_KUBECONFIG:-$ROOT/.cache/sim/kubeconfig}"
PID_FILE="$KUBECONFIG_PATH.pid"
[ -f "$PID_FILE" ] || { echo "sim-exec: no running cluster ($PID_FILE is missing); start one with hack/sim-cluster.sh" >&2; exit 2; }
PID="$(cat "$PID_FILE")"
kill -0 "$PID" 2>/dev/null || { echo "sim-exec: the cluster (PID $PID) is not running" >&2; exit 2; }
[ "$#" -gt 0 ] || set -- "${SHELL:-bash}"
exec "$PY" -m sim_cluster.netns --join "$PID" -- env KUBECONFIG="$KUBECONFIG_PATH" \
  KUBECACHEDIR="$(dirname "$KUBECONFIG_PATH")/kubecache" \
  HELM_CACHE_HOME="$(dirname "$KUBECONFIG_PATH")/helm/cache" \
  HELM_CONFIG_HOME="$(dirname "$KUBECONFIG_PATH")/helm/config" \
  HELM_DATA_HOME="$(dirname "$KUBECONFIG_PATH")/helm/data" "$@"
