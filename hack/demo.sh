#!/usr/bin/env bash
# The README's main job (`make demo`): plan and deploy a Nemotron model on a SIMULATED GPU
# cluster on this machine, then ask it for a chat completion through its Service.
#
# Starts the simulated cluster (python -m nemotron_sim: API stand-in, GPU nodes,
# scheduler, StatefulSet controller, kubelet running stand-in vLLM servers on loopback), prints
# the plan of an example, applies its rendered objects with kubectl, waits (bounded) for the
# serving pods to become Ready, shows the workload and a completion, and stops everything it
# started. Nothing leaves this machine; no GPU, container or real cluster is involved.
#
# Environment: DEMO_EXAMPLE (default examples/nano-bf16.yaml), DEMO_NODES (simulated nodes,
# default NVIDIA-H200:8x2,NVIDIA-B200:8x1), DEMO_LOAD_SECONDS (simulated model load, default 3),
# DEMO_TIMEOUT (seconds to wait for Ready, default 120), DEMO_KEEP=1 (keep the cluster running
# until Ctrl-C, to explore it with kubectl).
source "$(dirname "$0")/lib.sh"
ensure_venv
cd "$ROOT"

EXAMPLE="${DEMO_EXAMPLE:-examples/nano-bf16.yaml}"
NODES="${DEMO_NODES:-NVIDIA-H200:8x2,NVIDIA-B200:8x1}"
LOAD_SECONDS="${DEMO_LOAD_SECONDS:-3}"
TIMEOUT="${DEMO_TIMEOUT:-120}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/nemotron-demo.XXXXXX")"
SIM_PID=""

cleanup() {
  local rc=$?
  if [ -n "$SIM_PID" ] && kill -0 "$SIM_PID" 2>/dev/null; then
    kill -INT "$SIM_PID" 2>/dev/null || true
    # Bounded: the cluster stops its servers within a few seconds; then it is killed.
    for _ in $(seq 1 50); do kill -0 "$SIM_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SIM_PID" 2>/dev/null || true
    wait "$SIM_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -t 1 ]; then BOLD=$'\033[1m' PLAIN=$'\033[0m'; else BOLD="" PLAIN=""; fi
step() { printf '\n%s== %s%s\n' "$BOLD" "$*" "$PLAIN"; }
show() { printf '$ %s\n' "$*"; "$@"; }

[ -f "$EXAMPLE" ] || { echo "demo: no such example: $EXAMPLE" >&2; exit 2; }
read -r NAMESPACE NAME < <("$PY" -c '
import sys, yaml
meta = yaml.safe_load(open(sys.argv[1]))["metadata"]
print(meta.get("namespace", "default"), meta["name"])' "$EXAMPLE")

cat <<EOF
================================================================================
 nemotron-operator demo -- SIMULATION
 A simulated Kubernetes cluster with simulated NVIDIA GPU nodes runs on loopback in
 this process tree. Pods run a stand-in vLLM (deterministic text, real vLLM metric
 names); no model, GPU, container or real cluster is involved.
================================================================================
EOF

step "Start the SIMULATED cluster ($NODES)"
"$PY" -m nemotron_sim --nodes "$NODES" --kubeconfig "$WORK/kubeconfig" \
  --load-seconds "$LOAD_SECONDS" >"$WORK/sim.log" 2>&1 &
SIM_PID=$!
for _ in $(seq 1 300); do  # up to 30 s
  grep -q "SIMULATED cluster ready" "$WORK/sim.log" 2>/dev/null && break
  kill -0 "$SIM_PID" 2>/dev/null || { cat "$WORK/sim.log" >&2; exit 1; }
  sleep 0.1
done
grep -q "SIMULATED cluster ready" "$WORK/sim.log" || { cat "$WORK/sim.log" >&2; exit 1; }
grep -v "WARNING" "$WORK/sim.log" | sed 's/; stop with.*//'
export KUBECONFIG="$WORK/kubeconfig"
export KUBECACHEDIR="$WORK/kubecache"  # never mix this cluster's discovery into ~/.kube
show kubectl get nodes -L nvidia.com/gpu.product,nvidia.com/gpu.count,nvidia.com/gpu.memory

step "Plan $EXAMPLE against these nodes (the memory model; no cluster writes)"
echo "$ kubectl get nodes -o yaml > nodes.yaml"
kubectl get nodes -o yaml >"$WORK/nodes.yaml"
echo "$ nemotron-operator plan -f $EXAMPLE --gpu-inventory nodes.yaml"
nemotron-operator plan -f "$EXAMPLE" --gpu-inventory "$WORK/nodes.yaml"

step "Render the Kubernetes objects and apply them"
echo "$ nemotron-operator render -f $EXAMPLE --gpu-inventory nodes.yaml > objects.yaml"
nemotron-operator render -f "$EXAMPLE" --gpu-inventory "$WORK/nodes.yaml" >"$WORK/objects.yaml"
grep -E '^kind:' "$WORK/objects.yaml" | sed 's/^/  rendered /'
printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n' "$NAMESPACE" \
  | kubectl apply -f -
echo "$ kubectl apply -f objects.yaml"
kubectl apply -f "$WORK/objects.yaml"

step "Wait (at most ${TIMEOUT}s) for the serving pods to become Ready"
SELECTOR="app.kubernetes.io/instance=$NAME"
# kubectl wait fails at once when no pod exists yet; give the StatefulSet a moment (bounded).
for _ in $(seq 1 100); do
  [ -n "$(kubectl get pods -n "$NAMESPACE" -l "$SELECTOR" -o name)" ] && break
  sleep 0.1
done
show kubectl wait --for=condition=Ready pod -l "$SELECTOR" -n "$NAMESPACE" \
  --timeout="${TIMEOUT}s"

step "The workload"
show kubectl get statefulsets,pods,services,persistentvolumeclaims -n "$NAMESPACE" -o wide
show kubectl get events -n "$NAMESPACE" --sort-by=.lastTimestamp \
  -o custom-columns=OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message

step "A chat completion through the Service (ClusterIP on loopback -> stand-in vLLM)"
CLUSTER_IP="$(kubectl get service "$NAME" -n "$NAMESPACE" -o jsonpath='{.spec.clusterIP}')"
PORT="$(kubectl get service "$NAME" -n "$NAMESPACE" -o jsonpath='{.spec.ports[0].port}')"
"$PY" - "http://$CLUSTER_IP:$PORT" <<'EOF'
import json, sys, urllib.request

base = sys.argv[1]
with urllib.request.urlopen(f"{base}/v1/models", timeout=10) as response:
    model = json.load(response)["data"][0]["id"]
body = {
    "model": model,
    "messages": [{"role": "user", "content": "In one sentence: what is a Mamba layer?"}],
    "max_tokens": 40,
}
print(f"$ curl {base}/v1/chat/completions -H 'Content-Type: application/json' \\")
print(f"    -d '{json.dumps(body)}'")
request = urllib.request.Request(
    f"{base}/v1/chat/completions", json.dumps(body).encode(),
    {"Content-Type": "application/json"},
)
with urllib.request.urlopen(request, timeout=10) as response:
    answer = json.load(response)
    simulated = response.headers.get("X-Simulated", "")
message = answer["choices"][0]["message"]
print(f"model:     {answer['model']}")
if message.get("reasoning"):
    print(f"reasoning: {message['reasoning']}")
print(f"content:   {message['content']}")
print(f"usage:     {answer['usage']}")
if simulated:
    print(f"(X-Simulated: {simulated})")
with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
    metrics = response.read().decode()
print("vLLM metrics after the request (stand-in):")
for line in metrics.splitlines():
    if line.startswith(("vllm:generation_tokens_total", "vllm:prompt_tokens_total",
                        "vllm:num_requests_running")):
        print(f"  {line}")
EOF

if [ "${DEMO_KEEP:-0}" = "1" ]; then
  step "The SIMULATED cluster keeps running: export KUBECONFIG=$KUBECONFIG; Ctrl-C stops it"
  wait "$SIM_PID" || true
fi
step "Done: stopping the SIMULATED cluster"
