#!/usr/bin/env bash
# Run a SIMULATED GPU cluster on loopback until Ctrl-C, for kubectl, `kopf run` or the operator:
#   hack/sim-cluster.sh [--nodes NVIDIA-H200:8x2,NVIDIA-B200:8x1] [--load-seconds 5] ...
# The kubeconfig goes to $SIM_KUBECONFIG (default .cache/sim/kubeconfig); then
#   export KUBECONFIG=.cache/sim/kubeconfig KUBECACHEDIR=.cache/sim/kubecache
# All arguments go to `python -m nemotron_sim` (see --help), e.g. `--system-nodes 1` (a node
# the operator's own pod can be scheduled on) and `--image REPO=PROGRAM` (containers of that
# image run as local processes; the operator's image is mapped by default).
source "$(dirname "$0")/lib.sh"
ensure_venv
cd "$ROOT"
KUBECONFIG_PATH="${SIM_KUBECONFIG:-$ROOT/.cache/sim/kubeconfig}"
mkdir -p "$(dirname "$KUBECONFIG_PATH")"
exec "$PY" -m nemotron_sim --kubeconfig "$KUBECONFIG_PATH" "$@"
