#!/usr/bin/env bash
# Run the simulated GPU cluster on a REAL control plane until Ctrl-C, for kubectl, helm or the
# operator:
#   hack/sim-cluster.sh [--nodes NVIDIA-H200:8x2,NVIDIA-B200:8x1] [--system-nodes 1] \
#                       [--load-seconds 5] ...
# etcd, kube-apiserver, kube-controller-manager and kube-scheduler are real (built from
# Kubernetes' Go modules by hack/build-controlplane.sh on first use: 8-9 minutes on 2 cores);
# the GPU nodes, their kubelets, containers and vLLM are simulated. The cluster lives in a
# network namespace of its own: its addresses (10.x) are reachable only from inside, so run
# your commands there with
#   hack/sim-exec.sh kubectl get nodes     # one command (KUBECONFIG set)
#   hack/sim-exec.sh                       # a shell inside the cluster's namespace
# The kubeconfig goes to $SIM_KUBECONFIG (default .cache/sim/kubeconfig), the cluster's PID
# beside it (kubeconfig.pid). All arguments go to `python -m sim_cluster` (see --help), e.g.
# `--image REPO=PROGRAM` (containers of that image run as local processes; the operator's image
# is mapped by default).
source "$(dirname "$0")/lib.sh"
ensure_venv
"$ROOT/hack/build-controlplane.sh"
cd "$ROOT"
# `--engine vllm`: containers of the vLLM image run vLLM's CPU build (docs/simulated-cluster.md,
# "The real engine"), installed by hack/build-vllm-cpu.sh on first use.
if [[ " $* " == *" --engine vllm "* || " $* " == *" --engine=vllm "* ]]; then
  "$ROOT/hack/build-vllm-cpu.sh"
  set -- "$@" --vllm-python "$("$ROOT/hack/build-vllm-cpu.sh" --print-dir)/bin/python"
fi
KUBECONFIG_PATH="${SIM_KUBECONFIG:-$ROOT/.cache/sim/kubeconfig}"
mkdir -p "$(dirname "$KUBECONFIG_PATH")"
exec "$PY" -m sim_cluster --kubeconfig "$KUBECONFIG_PATH" "$@"
