"""GPU node pools for real: Karpenter (its kwok cloud provider: Karpenter's own scheduler,
provisioner, limits, registration and disruption; Node objects instead of instances) provisions
the NodePool the operator renders, on a cluster that starts with no GPU node at all. The
simulator plays each new node's kubelet and GPU Feature Discovery (sim_cluster/karpenter)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from nemotron_sim.kubeapi.kinds import NODES
from nemotron_sim.kubeapi.resources import ResourceKey
from sim_cluster.karpenter.running import KarpenterOptions
from tests.integration.operator.helpers import (
    NAMESPACE,
    NDS,
    NODE_POOLS,
    PODS,
    apply,
    condition,
    deployment,
    status,
    wait_ready,
)
from tests.integration.operator_process import OperatorProcess, ensure_namespace
from tests.kube import KubeHandle

NODE_CLAIMS = ResourceKey("karpenter.sh", "v1", "nodeclaims")
KWOK = {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"}
H200 = "sim-8x-nvidia-h200"
PROVISION_SECONDS = 240.0  # Karpenter's batching (1-10 s) + launch + registration, on a busy CI

pytestmark = pytest.mark.parametrize(
    "sim_cluster", [{"nodes": "none", "karpenter": KarpenterOptions()}], indirect=True
)


def node_pool(*instance_types: str) -> dict[str, Any]:
    karpenter = {"nodeClassRef": KWOK, "instanceTypes": list(instance_types)}
    return {"provisioner": "Karpenter", "karpenter": karpenter}


def h200(name: str = "nano", count: int | None = None, **spec: Any) -> dict[str, Any]:
    gpu: dict[str, Any] = {"products": ["NVIDIA-H200"]}
    if count is not None:
        gpu["count"] = count
    return deployment(name, capacity={"gpu": gpu}, nodePool=node_pool(H200), **spec)


def karpenter_nodes(cluster: KubeHandle) -> list[dict[str, Any]]:
    return [
        n
        for n in cluster.list(NODES)
        if str(n["spec"].get("providerID", "")).startswith("kwok://")
        and not n["metadata"].get("deletionTimestamp")
    ]


def claims(cluster: KubeHandle, name: str = "nano") -> list[dict[str, Any]]:
    (pool,) = cluster.list(NODE_POOLS, None, f"app.kubernetes.io/instance={name}")
    pool_name = pool["metadata"]["name"]
    return [
        c
        for c in cluster.list(NODE_CLAIMS)
        if c["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == pool_name
    ]


def delete_and_wait_for_the_nodes_to_go(cluster: KubeHandle, *names: str) -> None:
    for name in names:
        cluster.kubectl("delete", "nd", name, "-n", NAMESPACE, "--wait=false")
    cluster.wait_until(
        lambda: (
            all(cluster.get(NDS, NAMESPACE, n) is None for n in names)
            and not cluster.list(NODE_POOLS)
        ),
        what="the deployments and their NodePools deleted",
        seconds=60,
    )
    # The NodeClaims belong to the NodePool: Karpenter drains and deletes their nodes.
    cluster.wait_until(
        lambda: not cluster.list(NODE_CLAIMS) and not karpenter_nodes(cluster),
        what="Karpenter's NodeClaims and nodes removed",
        seconds=PROVISION_SECONDS,
    )


def test_from_zero_gpu_nodes_to_serving_on_the_node_karpenter_launches(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    assert not karpenter_nodes(cluster)
    assert not [n for n in cluster.list(NODES) if "nvidia.com/gpu" in n["status"]["capacity"]]
    apply(cluster, h200())
    # While Karpenter provisions, capacity says so (not a silent wait, not a GPU shortage).
    seen: list[tuple[str, str]] = []

    def ready_or_record() -> bool:
        found = condition(cluster, "CapacityAvailable")
        if found and (found["status"], found["reason"]) not in seen:
            seen.append((found["status"], found["reason"]))
        return status(cluster).get("phase") == "Ready"

    started = time.monotonic()
    cluster.wait_until(ready_or_record, what="Ready on a new node", seconds=PROVISION_SECONDS)
    took = time.monotonic() - started
    assert ("False", "WaitingForNodes") in seen, seen
    assert seen[-1] == ("True", "GPUsAvailable"), seen
    wait_ready(cluster)
    print(f"zero GPU nodes to Ready: {took:.1f} s")

    (claim,) = claims(cluster)
    (node,) = karpenter_nodes(cluster)
    assert claim["status"]["nodeName"] == node["metadata"]["name"]
    labels = node["metadata"]["labels"]
    assert labels["node.kubernetes.io/instance-type"] == H200
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200"  # the pool's label, then GFD's
    assert labels["karpenter.sh/registered"] == "true"
    assert labels["karpenter.sh/capacity-type"] == "on-demand"
    taints = {(t["key"], t["effect"]) for t in node["spec"].get("taints") or []}
    assert ("nvidia.com/gpu", "NoSchedule") in taints  # synced from the NodePool
    assert ("karpenter.sh/unregistered", "NoExecute") not in taints  # removed at registration
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "8"
    pods = [p for p in cluster.list(PODS, NAMESPACE) if p["metadata"]["name"].startswith("nano-")]
    assert pods
    assert {p["spec"]["nodeName"] for p in pods} == {node["metadata"]["name"]}

    # The operator restarted meanwhile changes nothing: no write to the NodePool, no new claim.
    mark = operator_process.mark()
    operator_process.restart()
    operator_process.wait_reconciles(3)
    pool_writes = [w for w in operator_process.writes(mark) if "nodepools" in str(w["path"])]
    assert pool_writes == []
    assert [c["metadata"]["name"] for c in claims(cluster)] == [claim["metadata"]["name"]]

    delete_and_wait_for_the_nodes_to_go(cluster, "nano")


def test_scaling_out_launches_a_second_node_and_a_two_node_replica_gets_two_claims(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    # 8 GPUs per replica: one node each.
    apply(cluster, h200(count=8))
    wait_ready(cluster, seconds=PROVISION_SECONDS)
    assert len(claims(cluster)) == 1
    apply(cluster, h200(count=8, replicas=2))
    cluster.wait_until(
        lambda: status(cluster).get("readyReplicas") == 2,
        what="two replicas Ready",
        seconds=PROVISION_SECONDS,
    )
    assert len(claims(cluster)) == 2
    assert len(karpenter_nodes(cluster)) == 2
    pool = cluster.list(NODE_POOLS, None, "app.kubernetes.io/instance=nano")[0]
    assert pool["spec"]["limits"] == {"nvidia.com/gpu": "16"}

    # 16 GPUs per replica: two nodes of 8 for one replica, one NodeClaim each.
    apply(cluster, h200(name="wide", count=16))
    wait_ready(cluster, "wide", seconds=PROVISION_SECONDS)
    assert status(cluster, "wide")["plan"]["nodesPerReplica"] == 2
    assert len(claims(cluster, "wide")) == 2

    delete_and_wait_for_the_nodes_to_go(cluster, "nano", "wide")


def capacity_reason(cluster: KubeHandle, name: str) -> str:
    return str(condition(cluster, "CapacityAvailable", name).get("reason", ""))


def test_another_deployment_on_the_pools_node_is_reported_as_the_pools_limit(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    apply(cluster, h200(count=4))  # one 8-GPU node; the pool's limit is 8
    wait_ready(cluster, seconds=PROVISION_SECONDS)
    # A deployment without a node pool of its own: its pod takes the other 4 GPUs of that node.
    apply(cluster, deployment("other", capacity={"gpu": {"products": ["NVIDIA-H200"], "count": 4}}))
    wait_ready(cluster, "other", seconds=PROVISION_SECONDS)
    # Two replicas of 4 still plan one node (limit 8), but the node is full and the pool at its
    # limit: Karpenter launches nothing, and status says so instead of WaitingForNodes.
    apply(cluster, h200(count=4, replicas=2))
    cluster.wait_until(
        lambda: capacity_reason(cluster, "nano") == "NodePoolLimitReached",
        what="CapacityAvailable=False NodePoolLimitReached",
        seconds=PROVISION_SECONDS,
    )
    message = condition(cluster, "CapacityAvailable")["message"]
    assert "NodePool nd-ai-nano is at its limit" in message
    assert "8 of nvidia.com/gpu 8" in message
    assert len(claims(cluster)) == 1
    # The other deployment gone, the second replica fits on the node.
    cluster.kubectl("delete", "nd", "other", "-n", NAMESPACE, "--wait=false")
    cluster.wait_until(
        lambda: status(cluster).get("readyReplicas") == 2,
        what="two replicas Ready",
        seconds=PROVISION_SECONDS,
    )
    delete_and_wait_for_the_nodes_to_go(cluster, "nano")


def test_a_missing_node_class_is_reported_not_waited_for(
    operator_process: OperatorProcess,
) -> None:
    cluster = operator_process.cluster
    ensure_namespace(cluster, NAMESPACE)
    spec = h200()
    spec["spec"]["nodePool"]["karpenter"]["nodeClassRef"] = {**KWOK, "name": "missing"}
    apply(cluster, spec)
    cluster.wait_until(
        lambda: capacity_reason(cluster, "nano") == "NodePoolNotReady",
        what="CapacityAvailable=False NodePoolNotReady",
        seconds=PROVISION_SECONDS,
    )
    message = condition(cluster, "CapacityAvailable")["message"]
    assert "NodeClassReady NodeClassNotFound" in message  # Karpenter's words
    assert "nodeClassRef" in message
    assert not cluster.list(NODE_CLAIMS)
    delete_and_wait_for_the_nodes_to_go(cluster, "nano")
