"""spec.gateway on the real control plane, with the projects' own InferencePool and HTTPRoute
CRDs: the pool selects exactly the ready serving pods, scaling leaves it alone, the picker's
configuration follows the plan's block size, switching off deletes everything it created, and
an infeasible spec creates none of it; status.endpoint is the Gateway's address while routed."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from nemotron_sim.kubeapi.resources import ResourceKey
from tests.integration.operator.helpers import (
    NAMESPACE,
    PODS,
    apply,
    condition,
    deployment,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace
from tests.kube import KubeHandle

POOLS = ResourceKey("inference.networking.k8s.io", "v1", "inferencepools")
ROUTES = ResourceKey("gateway.networking.k8s.io", "v1", "httproutes")
GATEWAY_KINDS = {
    "inferencepools": POOLS,
    "httproutes": ROUTES,
    "deployments": ResourceKey("apps", "v1", "deployments"),
    "configmaps": ResourceKey("", "v1", "configmaps"),
    "serviceaccounts": ResourceKey("", "v1", "serviceaccounts"),
    "roles": ResourceKey("rbac.authorization.k8s.io", "v1", "roles"),
    "rolebindings": ResourceKey("rbac.authorization.k8s.io", "v1", "rolebindings"),
    "services": ResourceKey("", "v1", "services"),
}
GATEWAY = {"enabled": True, "httpRoute": {"parentRefs": [{"name": "gw"}]}}
GATEWAY_OBJECT = {
    "apiVersion": "gateway.networking.k8s.io/v1",
    "kind": "Gateway",
    "metadata": {"name": "gw", "namespace": NAMESPACE},
    "spec": {
        "gatewayClassName": "example",
        "listeners": [{"name": "http", "protocol": "HTTP", "port": 8080}],
    },
}
GATEWAY_ON = pytest.mark.parametrize("operator_process", [["--inference-gateway"]], indirect=True)


def gateway_objects(cluster: KubeHandle, name: str) -> dict[str, list[str]]:
    found = {}
    for plural, key in GATEWAY_KINDS.items():
        names = [
            o["metadata"]["name"]
            for o in cluster.list(key, NAMESPACE, f"app.kubernetes.io/instance={name}")
            if plural != "services" or o["metadata"]["name"].endswith("-epp")
        ]
        if names:
            found[plural] = names
    return found


def selected(cluster: KubeHandle, pool: dict[str, Any]) -> set[str]:
    labels = pool["spec"]["selector"]["matchLabels"]
    selector = ",".join(f"{k}={v}" for k, v in labels.items())
    return {p["metadata"]["name"] for p in cluster.list(PODS, NAMESPACE, selector)}


def ready_serving_pods(cluster: KubeHandle, name: str) -> set[str]:
    pods = cluster.list(
        PODS, NAMESPACE, f"app.kubernetes.io/instance={name},app.kubernetes.io/component=serving"
    )
    return {
        p["metadata"]["name"]
        for p in pods
        if any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in (p.get("status") or {}).get("conditions") or []
        )
    }


def block_size(cluster: KubeHandle, name: str) -> int:
    config_map = cluster.get(GATEWAY_KINDS["configmaps"], NAMESPACE, f"{name}-epp") or {}
    config = yaml.safe_load(config_map["data"]["epp-config.yaml"])
    producer = next(p for p in config["plugins"] if p["type"] == "approx-prefix-cache-producer")
    return int(producer["parameters"]["blockSizeTokens"])


@GATEWAY_ON
def test_the_pool_follows_the_serving_pods_and_the_picker_follows_the_plan(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    # The Gateway the route attaches to, with the address its implementation would publish.
    apply(cluster, GATEWAY_OBJECT)
    cluster.kubectl(
        "patch", "gateway", "gw", "-n", NAMESPACE, "--subresource=status", "--type=merge",
        "-p", '{"status":{"addresses":[{"type":"IPAddress","value":"10.1.2.3"}]}}',
    )  # fmt: skip
    # 128 sequences on H200 with vLLM 0.31's pool: TP 2 at 131072 tokens; 262144 needs TP 4
    # (below). (0.34's extensible KV cache holds them at TP 2 at both lengths.)
    capacity = {"gpu": {"products": ["NVIDIA-H200"]}, "minConcurrency": 128}
    engine = {"image": "vllm/vllm-openai:v0.31.0"}
    apply(cluster, deployment(replicas=2, capacity=capacity, gateway=GATEWAY, engine=engine))
    wait_ready(cluster)
    # Applied, and the picker's Deployment available (its pod runs on the system node).
    cluster.wait_until(
        lambda: condition(cluster, "InferenceGateway").get("reason") == "Applied",
        what="InferenceGateway=True",
    )
    assert status(cluster)["endpoint"] == "http://10.1.2.3:8080/v1"
    assert gateway_objects(cluster, "nano") == {
        "inferencepools": ["nano"],
        "httproutes": ["nano"],
        "deployments": ["nano-epp"],
        "configmaps": ["nano-epp"],
        "serviceaccounts": ["nano-epp"],
        "roles": ["nano-epp"],
        "rolebindings": ["nano-epp"],
        "services": ["nano-epp"],
    }
    pool = cluster.get(POOLS, NAMESPACE, "nano") or {}
    assert selected(cluster, pool) == ready_serving_pods(cluster, "nano") == {"nano-0", "nano-1"}

    # Converged: kube-apiserver's defaults in the gateway's objects are no drift; several
    # resyncs (and the Gateway's read on each) write nothing.
    mark = operator_process.mark()
    operator_process.wait_reconciles(10)
    assert [w["path"] for w in operator_process.writes(mark) if "/events" not in w["path"]] == []

    # Scaling: more pods selected, the pool object untouched.
    before = pool["metadata"]["resourceVersion"]
    cluster.kubectl(
        "patch", "nemotrondeployment", "nano", "-n", NAMESPACE, "--type=merge",
        "-p", '{"spec":{"replicas":3}}',
    )  # fmt: skip
    wait_ready(cluster)
    pool = cluster.get(POOLS, NAMESPACE, "nano") or {}
    assert pool["metadata"]["resourceVersion"] == before
    cluster.wait_until(
        lambda: selected(cluster, pool) == ready_serving_pods(cluster, "nano"),
        what="the pool's selector selects the three ready serving pods",
    )
    assert len(selected(cluster, pool)) == 3

    # A longer maxModelLen needs a wider layout, whose block is smaller: the picker's
    # configuration follows the plan.
    first = block_size(cluster, "nano")
    assert first == status(cluster)["plan"]["blockSizeTokens"]
    assert status(cluster)["plan"]["tensorParallel"] == 2
    cluster.kubectl(
        "patch", "nemotrondeployment", "nano", "-n", NAMESPACE, "--type=merge",
        "-p", '{"spec":{"replicas":1,"engine":{"maxModelLen":262144}}}',
    )  # fmt: skip
    cluster.wait_until(
        lambda: (status(cluster).get("plan") or {}).get("tensorParallel") == 4,
        what="the plan at TP 4",
    )
    planned = status(cluster)["plan"]["blockSizeTokens"]
    assert planned != first
    cluster.wait_until(lambda: block_size(cluster, "nano") == planned, what="the new block size")

    # Switched off: everything the gateway created goes, and its condition.
    cluster.kubectl(
        "patch", "nemotrondeployment", "nano", "-n", NAMESPACE, "--type=merge",
        "-p", '{"spec":{"gateway":{"enabled":false,"httpRoute":null}}}',
    )  # fmt: skip
    cluster.wait_until(
        lambda: not gateway_objects(cluster, "nano"), what="every gateway object deleted"
    )
    cluster.wait_until(
        lambda: not condition(cluster, "InferenceGateway"), what="the condition removed"
    )
    assert status(cluster)["endpoint"] == "http://nano.ai.svc:8000/v1"


@GATEWAY_ON
def test_an_infeasible_spec_creates_none_of_the_gateway(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, deployment(capacity={"minConcurrency": 100000}, gateway=GATEWAY))
    cluster.wait_until(
        lambda: condition(cluster, "Feasible").get("status") == "False", what="Feasible=False"
    )
    assert gateway_objects(cluster, "nano") == {}
