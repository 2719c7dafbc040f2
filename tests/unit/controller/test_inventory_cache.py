"""The GPU inventory shared by reconciles: one pod list read and summed per TTL, each
deployment's own pods added back, a fresh read once the TTL has passed or after invalidate."""

from __future__ import annotations

from typing import Any, cast

from nemotron_operator.controller.watch.inventory import InventoryReader
from nemotron_operator.kube import KubeClient
from nemotron_operator.kube.resources import NODES, PODS
from nemotron_operator.render import names as n
from nemotron_operator.sizing import inventory_from_nodes
from tests.unit.controller.fake_kube import FakeKube


def _node(name: str, gpus: int = 8) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.product": "NVIDIA-H200"}},
        "status": {
            "allocatable": {"nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(instance: str, node: str, gpus: int, namespace: str = "ai") -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{instance}-0",
            "namespace": namespace,
            "labels": {n.INSTANCE: instance, n.MANAGED_BY_LABEL: n.MANAGED_BY},
        },
        "spec": {
            "nodeName": node,
            "containers": [{"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
        "status": {"phase": "Running"},
    }


def cluster(*pods: dict[str, Any]) -> FakeKube:
    """Two H200 nodes of 8 GPUs, a and b, and ``pods``."""
    kube = FakeKube()
    for node in (_node("a"), _node("b")):
        kube.put(NODES, node)
    set_pods(kube, *pods)
    return kube


def set_pods(kube: FakeKube, *pods: dict[str, Any]) -> None:
    kube.clear(PODS)
    for pod in pods:
        kube.put(PODS, pod)


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def _free(inventory: Any) -> dict[str, int]:
    return {node.name: node.free_gpus for node in inventory.nodes}


async def test_one_read_serves_every_reconcile_within_the_ttl() -> None:
    kube, clock = cluster(_pod("x", "a", 4), _pod("y", "a", 2), _pod("z", "b", 8)), Clock()
    reader = InventoryReader(cast(KubeClient, kube), ttl=1.0, clock=clock)
    for instance in ("x", "y", "z", "new"):
        await reader.read("ai", instance)
    assert len(kube.lists) == 2  # nodes and pods, once


async def test_a_deployment_does_not_count_against_itself() -> None:
    pods = (_pod("x", "a", 4), _pod("y", "a", 2), _pod("z", "b", 8), _pod("x", "b", 1, "ml"))
    kube, clock = cluster(*pods), Clock()
    reader = InventoryReader(cast(KubeClient, kube), ttl=1.0, clock=clock)
    assert _free(await reader.read("ai", "x")) == {"a": 6, "b": 0}
    assert _free(await reader.read("ai", "z")) == {"a": 2, "b": 7}
    assert _free(await reader.read("ml", "x")) == {"a": 2, "b": 0}
    assert _free(await reader.read("ai", "new")) == {"a": 2, "b": 0}
    # The same figures as the uncached computation from the other pods.
    others = [p for p in kube.of_kind(PODS) if p["metadata"]["labels"][n.INSTANCE] != "z"]
    assert await reader.read("ai", "z") == inventory_from_nodes(kube.of_kind(NODES), others)


async def test_a_pod_bound_after_the_read_counts_once_the_ttl_has_passed() -> None:
    kube, clock = cluster(), Clock()
    reader = InventoryReader(cast(KubeClient, kube), ttl=1.0, clock=clock)
    assert _free(await reader.read("ai", "x")) == {"a": 8, "b": 8}
    set_pods(kube, _pod("y", "a", 8))
    clock.now += 0.5
    assert _free(await reader.read("ai", "x")) == {"a": 8, "b": 8}  # within the TTL
    clock.now += 0.6
    assert _free(await reader.read("ai", "x")) == {"a": 0, "b": 8}
    assert len(kube.lists) == 4


async def test_invalidate_forces_a_fresh_read() -> None:
    kube, clock = cluster(), Clock()
    reader = InventoryReader(cast(KubeClient, kube), ttl=60.0, clock=clock)
    await reader.read("ai", "x")
    set_pods(kube, _pod("y", "b", 3))
    reader.invalidate()
    assert _free(await reader.read("ai", "x")) == {"a": 8, "b": 5}
