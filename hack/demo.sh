#!/usr/bin/env bash
# The README's main job (`make demo`): run the operator on a simulated GPU cluster on this
# machine, apply one NemotronDeployment, and ask the model for a chat completion.
#
# Starts the simulated cluster (python -m sim_cluster): a REAL control plane — etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, built from Kubernetes' Go modules by
# hack/build-controlplane.sh on first use (8-9 minutes on 2 cores) — with SIMULATED GPU nodes
# whose kubelets run the operator's image as a local process under its ServiceAccount and
# stand-in vLLM servers. It installs the operator with its Helm chart (helm install: the CRD,
# the Deployment, least-privilege RBAC that kube-apiserver enforces), applies an example with
# kubectl, watches `kubectl get nd` go from planning to Ready (bounded), prints status.plan and
# the conditions, sends a chat completion to status.endpoint, and stops everything it started.
# Everything runs in a network namespace of the demo's own: nothing leaves this machine, no GPU
# or container is involved, and your own kubectl context and helm configuration are never
# touched.
#
# Environment: DEMO_EXAMPLE (default examples/nano-bf16.yaml), DEMO_NODES (simulated nodes,
# default NVIDIA-H200:8x2,NVIDIA-B200:8x1), DEMO_LOAD_SECONDS (simulated model load, default 3),
# DEMO_TIMEOUT (seconds to wait for Ready, default 120), DEMO_KEEP=1 (keep the cluster running
# until Ctrl-C, to explore it with kubectl).
#
# DEMO_ENGINE=vllm: a REAL vLLM instead of the stand-in -- vLLM's CPU build (installed by
# hack/build-vllm-cpu.sh on first use) serving a tiny Nemotron-H with MTP and random weights
# (sim_cluster.checkpoints, written onto the deployment's claim):
# examples/tiny-nemotron-h-cpu.yaml on one NVIDIA-L40S node; Ready takes minutes on 2 cores
# (DEMO_TIMEOUT default 900).
#
# DEMO_NODES=none DEMO_KARPENTER=1: no GPU node at first; Karpenter (its kwok cloud provider, built
# by hack/build-karpenter.sh) runs beside the cluster, the example gets a Karpenter node pool
# (nodeClassRef KWOKNodeClass "default", instance type sim-8x-<DEMO_GPU, default NVIDIA-H200>),
# and the screen shows the NodePool, the NodeClaim and the node appearing, with their times.
#
# DEMO_REAL_NODES=N (root): the first N nodes (the system node first) run a real kubelet and
# containerd; the operator and serving pods on them are real containers (docs/simulated-cluster.md
# "Real nodes"). The screen shows each node's container runtime and which node each pod runs on.
source "$(dirname "$0")/lib.sh"
ensure_venv
"$ROOT/hack/build-controlplane.sh"
if [ "${DEMO_REAL_NODES:-0}" != 0 ] && [ "$(id -u)" = 0 ]; then
  # Real nodes run what is built now: the kubelet, and images of this checkout's code.
  "$ROOT/hack/build-nodes.sh" --install-packages
  "$ROOT/hack/build-images.sh"
fi
KARPENTER="${DEMO_KARPENTER:-}"
GPU="${DEMO_GPU:-NVIDIA-H200}"
if [ "$KARPENTER" = "1" ]; then "$ROOT/hack/build-karpenter.sh"; fi
cd "$ROOT"
ENGINE="${DEMO_ENGINE:-stand-in}"
case "$ENGINE" in
  stand-in|vllm) ;;
  *) echo "demo: DEMO_ENGINE must be stand-in or vllm, not '$ENGINE'" >&2; exit 2 ;;
esac
# Installed before entering the namespace (nothing is downloaded inside it).
if [ "$ENGINE" = "vllm" ]; then "$ROOT/hack/build-vllm-cpu.sh"; fi
# The rest runs inside a network namespace of its own, where the cluster's 10.x addresses are
# local (python -m sim_cluster.netns; the shell is re-run there).
if [ "${NEMOTRON_SIM_NETNS:-}" != "1" ]; then
  exec "$PY" -m sim_cluster.netns -- bash "$0" "$@"
fi
DEMO_START=$SECONDS

SIM_ENGINE=()
if [ "$ENGINE" = "vllm" ]; then
  EXAMPLE="${DEMO_EXAMPLE:-examples/tiny-nemotron-h-cpu.yaml}"
  NODES="${DEMO_NODES:-NVIDIA-L40S:1x1}"
  TIMEOUT="${DEMO_TIMEOUT:-900}"
  VLLM_PY="$("$ROOT/hack/build-vllm-cpu.sh" --print-dir)/bin/python"
  SIM_ENGINE=(--engine vllm --vllm-python "$VLLM_PY")
else
  EXAMPLE="${DEMO_EXAMPLE:-examples/nano-bf16.yaml}"
  NODES="${DEMO_NODES:-NVIDIA-H200:8x2,NVIDIA-B200:8x1}"
  TIMEOUT="${DEMO_TIMEOUT:-120}"
fi
LOAD_SECONDS="${DEMO_LOAD_SECONDS:-3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/nemotron-demo.XXXXXX")"
SIM_PID=""
RELEASE="nemotron-operator"
OPERATOR_NAMESPACE="nemotron-system"

cleanup() {
  local rc=$?
  # The operator runs as a pod of the simulated cluster: stopping the cluster stops it.
  if [ -n "$SIM_PID" ] && kill -0 "$SIM_PID" 2>/dev/null; then
    kill -INT "$SIM_PID" 2>/dev/null || true
    # Bounded: the cluster stops its servers within a few seconds; then it is killed.
    for _ in $(seq 1 300); do kill -0 "$SIM_PID" 2>/dev/null || break; sleep 0.1; done
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
 nemotron-operator demo -- a REAL control plane, SIMULATED GPU nodes
 Real: etcd, kube-apiserver, kube-controller-manager, kube-scheduler (Kubernetes'
 own code), so RBAC, server-side apply, admission, scheduling and the StatefulSet
 controller are Kubernetes'. Simulated: the NVIDIA GPU nodes and their kubelets (the
 operator runs as a local process). No GPU or container is involved.
EOF
if [ "$ENGINE" != "vllm" ]; then
  echo " vLLM is simulated too (a stand-in: deterministic text, real vLLM metric names); no model."
  echo "================================================================================"
else
  echo "================================================================================"
  VLLM_RELEASE="$("$VLLM_PY" -c 'import vllm; print(vllm.__version__)')"
  echo " ENGINE: a REAL vLLM (vLLM's CPU build, $VLLM_RELEASE) serving a TINY Nemotron-H"
  echo " with RANDOM weights (4 MB, made on this machine) on the CPU: the parsers, metrics,"
  echo " KV-cache allocation and MTP are vLLM's own; the words are not a trained model's."
  echo "================================================================================"
fi

step "Start the cluster: real control plane, SIMULATED nodes ($NODES)"
# DEMO_REAL_NODES=N (root): N nodes run a real kubelet and containerd (hack/build-nodes.sh
# --install-packages and hack/build-images.sh first); elsewhere the simulator says why not.
"$PY" -m sim_cluster --nodes "$NODES" --system-nodes 1 --kubeconfig "$WORK/kubeconfig" \
  --load-seconds "$LOAD_SECONDS" "${SIM_ENGINE[@]}" --real-nodes "${DEMO_REAL_NODES:-0}" \
  $([ "$KARPENTER" = "1" ] && echo --karpenter) >"$WORK/sim.log" 2>&1 &
SIM_PID=$!
for _ in $(seq 1 1200); do  # up to 120 s
  grep -q "SIMULATED cluster ready" "$WORK/sim.log" 2>/dev/null && break
  kill -0 "$SIM_PID" 2>/dev/null || { cat "$WORK/sim.log" >&2; exit 1; }
  sleep 0.1
done
grep -q "SIMULATED cluster ready" "$WORK/sim.log" || { cat "$WORK/sim.log" >&2; exit 1; }
grep -v "WARNING" "$WORK/sim.log" | sed 's/; stop with.*//'
export KUBECONFIG="$WORK/kubeconfig"
export KUBECACHEDIR="$WORK/kubecache"  # never mix this cluster's discovery into ~/.kube
# helm's repositories, plugins and caches stay in the demo's directory, not in ~/.
export HELM_CACHE_HOME="$WORK/helm/cache" HELM_CONFIG_HOME="$WORK/helm/config" \
  HELM_DATA_HOME="$WORK/helm/data"
# CONTAINER-RUNTIME tells the nodes apart: containerd:// on a real node, sim:// on a simulated one.
show kubectl get nodes -o wide -L nvidia.com/gpu.product,nvidia.com/gpu.count

step "Install the operator with Helm (the CRD, the operator's Deployment, ServiceAccount, RBAC)"
show helm install "$RELEASE" charts/nemotron-operator --namespace "$OPERATOR_NAMESPACE" \
  --create-namespace --wait --timeout "${TIMEOUT}s" --set operator.resyncSeconds=10 \
  --set operator.scrapeSeconds=1 --set "rbac.karpenterNodePools=$([ "$KARPENTER" = "1" ] \
  && echo true || echo false)"
show kubectl get deployments,pods -n "$OPERATOR_NAMESPACE" -o wide

step "Apply $EXAMPLE"
printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n' "$NAMESPACE" \
  | kubectl apply -f -
if [ "$ENGINE" = "vllm" ]; then
  step "The tiny checkpoint onto the claim the deployment names (spec.model.source.pvc)"
  CLAIM="$("$PY" -c '
import sys, yaml
print(yaml.safe_load(open(sys.argv[1]))["spec"]["model"]["source"]["pvc"]["claimName"])' "$EXAMPLE")"
  printf 'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: %s, namespace: %s}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n' \
    "$CLAIM" "$NAMESPACE" | kubectl apply -f -
  CLAIMS="$(sed -n 's/^  claims: *\([^ ]*\).*/\1/p' "$WORK/sim.log")"
  echo "$ python -m sim_cluster.checkpoints --deployment $EXAMPLE --mtp ...  (vLLM's Python)"
  PYTHONPATH="$ROOT/hack" "$VLLM_PY" -m sim_cluster.checkpoints --deployment "$EXAMPLE" \
    --claims-root "$CLAIMS" --mtp >/dev/null
  ls -l "$CLAIMS/$NAMESPACE/$CLAIM"/*/
fi
if [ "$KARPENTER" = "1" ]; then
  # The example as it is, plus a Karpenter node pool on the kwok provider's node class.
  "$PY" - "$EXAMPLE" "$GPU" >"$WORK/example.yaml" <<'EOF'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
gpu = sys.argv[2]
spec = doc["spec"]
spec.setdefault("capacity", {}).setdefault("gpu", {})["products"] = [gpu]
spec["nodePool"] = {"provisioner": "Karpenter", "karpenter": {
    "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
    "instanceTypes": [f"sim-8x-{gpu.lower()}"]}}
print(yaml.safe_dump(doc, sort_keys=False), end="")
EOF
  echo "$ kubectl apply -f $EXAMPLE  (with spec.nodePool and spec.capacity.gpu added:)"
  sed -n '/^spec:/,$p' "$WORK/example.yaml"
  EXAMPLE="$WORK/example.yaml"
fi
APPLIED=$SECONDS
show kubectl apply -f "$EXAMPLE"

step "Watch kubectl get nd until Ready (at most ${TIMEOUT}s)"
echo "$ kubectl get nd $NAME -n $NAMESPACE   (printed on every change)"
# (not "| head -1": kubectl could get SIGPIPE, which pipefail turns into a failed demo)
kubectl get nd "$NAME" -n "$NAMESPACE" | sed -n 1p
LAST="" PHASE=""
DEADLINE=$((SECONDS + TIMEOUT))
while [ "$SECONDS" -lt "$DEADLINE" ]; do
  ROW="$(kubectl get nd "$NAME" -n "$NAMESPACE" --no-headers 2>/dev/null || true)"
  # The AGE column changes every second; compare the rest.
  KEY="$(echo "$ROW" | awk '{$NF=""; print}')"
  if [ -n "$ROW" ] && [ "$KEY" != "$LAST" ]; then echo "$ROW"; LAST="$KEY"; fi
  if [ "$KARPENTER" = "1" ]; then  # Karpenter's objects as they appear, with the time each took
    for KIND in nodepools nodeclaims nodes; do
      case "$KIND" in  # the demo's cluster has one NodePool, the deployment's
        nodepools) SELECT=(-l "app.kubernetes.io/instance=$NAME") ;;
        nodeclaims) SELECT=() ;;
        nodes) SELECT=(-l karpenter.sh/nodepool) ;;
      esac
      SEEN_VAR="SEEN_${KIND}"
      if [ -z "${!SEEN_VAR:-}" ]; then
        OBJ="$(kubectl get "$KIND" "${SELECT[@]}" -o name 2>/dev/null | sed -n 1p || true)"
        if [ -n "$OBJ" ]; then
          printf -v "$SEEN_VAR" '%s' "$OBJ"
          echo "   + $OBJ after $((SECONDS - APPLIED)) s"
        fi
      fi
    done
    if [ -n "${SEEN_nodes:-}" ] && [ -z "${NODE_READY:-}" ] && [ "$(kubectl get "$SEEN_nodes" \
        -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]; then
      NODE_READY=1; echo "   + $SEEN_nodes Ready after $((SECONDS - APPLIED)) s"
    fi
  fi
  [ "$PHASE" = "Ready" ] && break  # the Ready row has been printed
  PHASE="$(kubectl get nd "$NAME" -n "$NAMESPACE" -o jsonpath='{.status.phase}' 2>/dev/null || true)"
  [ "$PHASE" = "Ready" ] || sleep 0.3
done
if [ "$PHASE" != "Ready" ]; then
  echo "demo: $NAME did not become Ready within ${TIMEOUT}s; the operator's log:" >&2
  kubectl logs "deployment/$RELEASE" -n "$OPERATOR_NAMESPACE" --tail=30 >&2 || true
  exit 1
fi

step "status.plan (the memory model's arithmetic) and the conditions"
kubectl get nd "$NAME" -n "$NAMESPACE" -o json >"$WORK/nd.json"
"$PY" - "$WORK/nd.json" <<'EOF'
import json, sys
status = json.load(open(sys.argv[1]))["status"]
plan = status["plan"]
gib = lambda b: f"{b / 2**30:.1f} GiB"
per = plan["perGPU"]
print(f"plan: {plan['gpusPerReplica']}x {plan['gpuProduct']} per replica "
      f"(TP {plan['tensorParallel']}, PP {plan['pipelineParallel']}, "
      f"{plan['nodesPerReplica']} node(s)), {plan['replicas']} replica(s), "
      f"{plan['totalGPUs']} GPU(s) in all")
print(f"per GPU: usable {gib(per['usableBytes'])} = weights {gib(per['weightsBytes'])} "
      f"+ reserve {gib(per['reserveBytes'])} + KV/Mamba pool {gib(per['kvPoolBytes'])}")
print(f"max concurrency at maxModelLen {plan['maxModelLen']}: {plan['maxConcurrency']}; "
      f"KV cache {plan['kvCacheTokens']} tokens per replica")
for rejected in plan.get("rejected", [])[:3]:
    print(f"rejected: {rejected['gpuProduct']} TP{rejected['tensorParallel']} "
          f"PP{rejected['pipelineParallel']}: {rejected['reason']}")
print()
print(f"{'CONDITION':<18} {'STATUS':<8} {'REASON':<18} MESSAGE")
for c in status["conditions"]:
    print(f"{c['type']:<18} {c['status']:<8} {c['reason']:<18} {c.get('message', '')}")
print()
print(f"endpoint: {status['endpoint']}")
EOF
echo
if [ "$KARPENTER" = "1" ]; then
  show kubectl get nodepools,nodeclaims
  show kubectl get nodes -L node.kubernetes.io/instance-type,nvidia.com/gpu.product,karpenter.sh/registered
fi
show kubectl get statefulsets,services -n "$NAMESPACE"
# Where each pod runs: its node (and, from the nodes above, whether that node is real).
show kubectl get pods -A -o wide
show kubectl get events -n "$NAMESPACE" --field-selector involvedObject.kind=NemotronDeployment \
  --sort-by=.lastTimestamp -o custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message

if [ "$ENGINE" = "vllm" ]; then SERVER="vLLM's CPU build"; else SERVER="stand-in vLLM"; fi
step "A chat completion through status.endpoint (its Service's ClusterIP -> $SERVER)"
ENDPOINT="$(kubectl get nd "$NAME" -n "$NAMESPACE" -o jsonpath='{.status.endpoint}')"
# http://<service>.<namespace>.svc:<port>/v1: the simulated cluster has no DNS, so resolve the
# Service name to its ClusterIP as cluster DNS would.
read -r SERVICE SERVICE_NS PORT < <("$PY" -c '
import sys, urllib.parse
url = urllib.parse.urlparse(sys.argv[1])
service, namespace = url.hostname.split(".")[:2]
print(service, namespace, url.port)' "$ENDPOINT")
CLUSTER_IP="$(kubectl get service "$SERVICE" -n "$SERVICE_NS" -o jsonpath='{.spec.clusterIP}')"
echo "status.endpoint = $ENDPOINT  ($SERVICE.$SERVICE_NS.svc -> ClusterIP $CLUSTER_IP)"
"$PY" - "http://$CLUSTER_IP:$PORT/v1" <<'EOF'
import json, sys, urllib.request

base = sys.argv[1].removesuffix("/v1")
with urllib.request.urlopen(f"{base}/v1/models", timeout=10) as response:
    model = json.load(response)["data"][0]["id"]
body = {
    "model": model,
    "messages": [{"role": "user", "content": "In one sentence: what is a Mamba layer?"}],
    "max_tokens": 40,
    "temperature": 0,
}
print(f"$ curl {base}/v1/chat/completions -H 'Content-Type: application/json' \\")
print(f"    -d '{json.dumps(body)}'")
request = urllib.request.Request(
    f"{base}/v1/chat/completions", json.dumps(body).encode(),
    {"Content-Type": "application/json"},
)
with urllib.request.urlopen(request, timeout=120) as response:
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
print("vLLM metrics after the request:")
for line in metrics.splitlines():
    if line.startswith(("vllm:generation_tokens_total", "vllm:prompt_tokens_total",
                        "vllm:num_requests_running")):
        print(f"  {line}")
EOF

step "Throughput in status and the plan checked against what vLLM allocated"
# The operator's /metrics through the chart's metrics Service (its ClusterIP, via the proxy).
METRICS_SERVICE="$(kubectl get service "$RELEASE-metrics" -n "$OPERATOR_NAMESPACE" \
  -o jsonpath='{.spec.clusterIP}:{.spec.ports[0].port}')"
METRICS_URL="http://$METRICS_SERVICE/metrics"
# /metrics answers only callers RBAC allows (the chart's metrics.auth): a ServiceAccount bound
# to the chart's metrics-reader ClusterRole, as Prometheus's would be, and its token.
kubectl create serviceaccount metrics-reader -n "$OPERATOR_NAMESPACE" >/dev/null
kubectl create clusterrolebinding "$RELEASE-demo-metrics-reader" \
  --clusterrole="$RELEASE-metrics-reader" \
  --serviceaccount="$OPERATOR_NAMESPACE:metrics-reader" >/dev/null
for _ in $(seq 50); do   # the authorizer sees a new binding a moment later
  [ "$(kubectl auth can-i get /metrics \
      --as="system:serviceaccount:$OPERATOR_NAMESPACE:metrics-reader")" = yes ] && break
  sleep 0.2
done
METRICS_TOKEN="$(kubectl create token metrics-reader -n "$OPERATOR_NAMESPACE")"
"$PY" - "http://$CLUSTER_IP:$PORT" "$NAME" "$NAMESPACE" "$METRICS_URL" "$METRICS_TOKEN" <<'EOF'
import json, subprocess, sys, threading, time, urllib.error, urllib.request

base, name, namespace, metrics_url, metrics_token = sys.argv[1:6]
model = json.load(urllib.request.urlopen(f"{base}/v1/models", timeout=10))["data"][0]["id"]
stop = threading.Event()


def chat(worker: int) -> None:
    for i in range(1000):
        if stop.is_set():
            return
        body = {"model": model, "max_tokens": 64, "ignore_eos": True, "temperature": 0,
                "messages": [{"role": "user", "content": f"request {worker}.{i}"}]}
        request = urllib.request.Request(f"{base}/v1/chat/completions", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=120).read()


def status() -> dict:
    out = subprocess.run(["kubectl", "get", "nd", name, "-n", namespace, "-o", "json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out).get("status", {})


print("4 clients send chat completions; the operator scrapes the serving pods every second")
workers = [threading.Thread(target=chat, args=(w,)) for w in range(4)]
for worker in workers:
    worker.start()
deadline = time.monotonic() + 60
shown = {}
while time.monotonic() < deadline:
    shown = status().get("throughput") or {}
    if shown.get("generationTokensPerSecond", 0) > 0:
        break
    time.sleep(0.3)
print("$ kubectl get nd " + name + " -n " + namespace)
print(subprocess.run(["kubectl", "get", "nd", name, "-n", namespace],
                     capture_output=True, text=True).stdout)
stop.set()
for worker in workers:
    worker.join()
keys = ("generationTokensPerSecond", "promptTokensPerSecond", "requestsRunning",
        "requestsWaiting", "kvCacheUsage", "mtpAcceptanceRate", "mtpMeanAcceptedLength",
        "ttftSecondsP50", "ttftSecondsP95", "podsSampled", "sampledAt")
print("status.throughput: " + ", ".join(f"{k}={shown[k]}" for k in keys if k in shown))
current = status()
plan, check = current["plan"], current.get("planCheck")
if check:
    print()
    print(f"{'capacity per replica':<22} {'planned':>12} {'vLLM':>12} {'deviation':>10}")
    rows = (("KV cache blocks", plan["kvCacheBlocks"], check["kvCacheBlocks"],
             check["blocksDeviation"]),
            ("KV cache tokens", plan["kvCacheTokens"], check["kvCacheTokens"],
             check["tokensDeviation"]),
            ("max concurrency", plan["maxConcurrency"], check["maxConcurrency"],
             check["concurrencyDeviation"]))
    for label, planned, observed, deviation in rows:
        print(f"{label:<22} {planned:>12,} {observed:>12,} {deviation:>+10.1%}")
    accurate = next(c for c in current["conditions"] if c["type"] == "PlanAccurate")
    print(f"PlanAccurate={accurate['status']} ({accurate['reason']}): {accurate['message']}")
print()
try:
    urllib.request.urlopen(metrics_url, timeout=10)
except urllib.error.HTTPError as refused:
    print(f"{metrics_url} without a token: {refused.code} {refused.reason}")
reader = urllib.request.Request(metrics_url, headers={"Authorization": f"Bearer {metrics_token}"})
text = urllib.request.urlopen(reader, timeout=10).read().decode()
print(f"some of the operator's series ({metrics_url}, with the metrics-reader's token):")
for line in text.splitlines():
    if line.startswith(("nemotron_deployment_generation_tokens_per_second",
                        "nemotron_deployment_mtp_acceptance_ratio",
                        "nemotron_deployment_planned_kv_cache_tokens",
                        "nemotron_deployment_observed_kv_cache_tokens",
                        "nemotron_deployment_ready{")):
        print(f"  {line}")
EOF

if [ "${DEMO_KEEP:-0}" = "1" ]; then
  step "The cluster keeps running; in another terminal: SIM_KUBECONFIG=$KUBECONFIG hack/sim-exec.sh"
  echo "(the demo's directory is removed when it stops; Ctrl-C stops it)"
  wait "$SIM_PID" || true
fi
step "Done in $((SECONDS - DEMO_START)) s: stopping the cluster (and the operator running in it)"
