#!/usr/bin/env bash
# The e2e suite (tests/e2e) on a real Kubernetes cluster made by kind, for anyone with Docker.
#
# NOT RUN IN CI, and never run where this project is developed: those machines have no Docker
# engine. It is written and reviewed there (bash -n and shellcheck in the test command), and the
# same tests/e2e suite runs in CI against the simulated cluster (hack/test.sh). Report what it
# does on your machine.
#
# What it does:
#   1. kind create cluster (one control-plane node, one worker that plays a GPU node);
#   2. advertises fake GPUs on the worker: GPU Feature Discovery's labels (nvidia.com/gpu.product,
#      .memory, .count, ...) and nvidia.com/gpu capacity patched onto the node's status through
#      the API (the kubelet then reports it as allocatable, as for any extended resource; there
#      is no device plugin and no GPU);
#   3. builds the operator image and the stand-in vLLM image and loads both into the cluster;
#   4. runs tests/e2e with KIND_E2E=1 and KUBECONFIG set: helm install of charts/nemotron-operator,
#      a NemotronDeployment served by the stand-in vLLM, a chat completion, helm upgrade, deletion,
#      helm uninstall, and the least-privilege checks;
#   5. deletes the cluster (KIND_KEEP=1 keeps it).
#
# Needs: docker, kind (https://kind.sigs.k8s.io), Python >= 3.11, and a Docker engine with at
# least 5 CPUs and 34 GiB of memory for the worker: the serving pod is rendered as for a real GPU
# (4 CPUs and 32 GiB requested for one GPU), and kind nodes report the host's CPUs and memory.
# kubectl and helm come from the project's .venv (pinned).
#
# Environment: KIND_CLUSTER (default nemotron-e2e), KIND_NODE_IMAGE (a kindest/node image, default:
# kind's own), KIND_GPU_PRODUCT (NVIDIA-H200), KIND_GPU_COUNT (8), KIND_GPU_MEMORY_MIB (143771,
# what nvidia-smi reports for an H200), KIND_KEEP=1, and arguments are passed to pytest.
# shellcheck source=hack/lib.sh
source "$(dirname "$0")/lib.sh"
ensure_venv
cd "$ROOT"

CLUSTER="${KIND_CLUSTER:-nemotron-e2e}"
GPU_PRODUCT="${KIND_GPU_PRODUCT:-NVIDIA-H200}"
GPU_COUNT="${KIND_GPU_COUNT:-8}"
GPU_MEMORY_MIB="${KIND_GPU_MEMORY_MIB:-143771}"
# Tags the e2e suite expects (tests/e2e/cluster.py): the chart's image.repository and the
# engine image of the e2e example.
OPERATOR_IMAGE="ghcr.io/nemotron-operator/nemotron-operator:e2e"
VLLM_IMAGE="nemotron-operator/vllm-stub:dev"

for tool in docker kind; do
  command -v "$tool" >/dev/null || { echo "kind-e2e: $tool is required" >&2; exit 2; }
done
docker info >/dev/null 2>&1 || { echo "kind-e2e: the Docker engine is not reachable" >&2; exit 2; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/nemotron-kind.XXXXXX")"
export KUBECONFIG="$WORK/kubeconfig"
export KUBECACHEDIR="$WORK/kubecache"

cleanup() {
  local rc=$?
  if [ "${KIND_KEEP:-0}" = "1" ]; then
    echo "kind-e2e: keeping cluster $CLUSTER (KUBECONFIG=$KUBECONFIG); kind delete cluster --name $CLUSTER"
  else
    kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== kind cluster $CLUSTER"
cat >"$WORK/kind.yaml" <<YAML
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
  - role: control-plane
  - role: worker
    labels:
      nemotron.io/e2e-gpu-node: "true"
YAML
kind create cluster --name "$CLUSTER" --config "$WORK/kind.yaml" --kubeconfig "$KUBECONFIG" \
  ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"} --wait 180s

echo "== fake GPUs on the worker: ${GPU_COUNT}x $GPU_PRODUCT"
node="$(kubectl get nodes -l nemotron.io/e2e-gpu-node=true -o jsonpath='{.items[0].metadata.name}')"
[ -n "$node" ] || { echo "kind-e2e: no worker node found" >&2; exit 1; }
kubectl label node "$node" --overwrite \
  nvidia.com/gpu.present=true \
  "nvidia.com/gpu.product=$GPU_PRODUCT" \
  "nvidia.com/gpu.count=$GPU_COUNT" \
  "nvidia.com/gpu.memory=$GPU_MEMORY_MIB" \
  nvidia.com/gpu.replicas=1 \
  nvidia.com/gpu.sharing-strategy=none
# No nvidia.com/gpu taint (GPU pools often have one, and the serving pods tolerate it): kind keeps
# its control-plane taint in a multi-node cluster, so the operator's pod needs this worker.
# Extended resources are advertised by patching the node's status (Kubernetes docs, "Advertise
# Extended Resources for a Node"); "~1" escapes the "/" of nvidia.com/gpu in a JSON pointer.
kubectl patch node "$node" --subresource=status --type=json \
  -p "[{\"op\": \"add\", \"path\": \"/status/capacity/nvidia.com~1gpu\", \"value\": \"$GPU_COUNT\"}]"
for _ in $(seq 1 60); do  # bounded: the kubelet copies capacity into allocatable on its next sync
  allocatable="$(kubectl get node "$node" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')"
  [ "$allocatable" = "$GPU_COUNT" ] && break
  sleep 1
done
[ "$allocatable" = "$GPU_COUNT" ] || { echo "kind-e2e: nvidia.com/gpu never became allocatable" >&2; exit 1; }
kubectl get nodes -L nvidia.com/gpu.product,nvidia.com/gpu.count,nvidia.com/gpu.memory
# Fail here, with the reason, rather than with a serving pod Pending for Insufficient memory.
"$PY" - "$(kubectl get node "$node" -o jsonpath='{.status.allocatable.cpu} {.status.allocatable.memory}')" <<'PYTHON'
import re, sys
cpu, memory = sys.argv[1].split()
cores = int(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)
number, unit = re.fullmatch(r"(\d+)([KMGT]i)?", memory).groups()
gib = int(number) * {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[unit] / 2**30
if cores < 5 or gib < 34:
    sys.exit(f"kind-e2e: the worker has {cores:g} CPUs and {gib:.1f} GiB allocatable; the serving "
             "pod needs 4 CPUs and 32 GiB (give Docker at least 5 CPUs and 34 GiB)")
PYTHON

echo "== build and load the images"
docker build -f hack/images/operator/Dockerfile -t "$OPERATOR_IMAGE" .
docker build -f hack/images/vllm-stub/Dockerfile -t "$VLLM_IMAGE" .
kind load docker-image --name "$CLUSTER" "$OPERATOR_IMAGE" "$VLLM_IMAGE"

echo "== tests/e2e against kind"
# (the real-engine tier runs on the simulated cluster only: it makes its own, hack/test.sh runs it)
KIND_E2E=1 pytest -p no:cacheprovider tests/e2e --ignore=tests/e2e/real_engine "$@"
