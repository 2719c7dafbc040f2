"""Node, Pod and StatefulSet objects for the status tests."""

from __future__ import annotations

from typing import Any

from nemotron_operator.api import Plan, PlanCheck
from nemotron_operator.sizing import GpuInventory, inventory_from_nodes, plan_deployment
from tests.unit.sizing.helpers import spec

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def node(name: str, product: str = "NVIDIA-H200", gpus: int = 8) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.product": product}},
        "status": {
            "allocatable": {"nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def gpu_pod(node_name: str, gpus: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"other-{node_name}-{gpus}", "namespace": "default"},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}],
        },
        "status": {"phase": "Running"},
    }


def inventory(nodes: list[dict[str, Any]], pods: list[dict[str, Any]] = ()) -> GpuInventory:  # type: ignore[assignment]
    return inventory_from_nodes(nodes, pods)


def plan(inv: GpuInventory, **capacity: Any) -> Plan:
    return plan_deployment(
        spec(NANO, engine={"maxModelLen": 131072}, capacity=capacity), inventory=inv
    ).plan


def with_replicas(p: Plan, replicas: int) -> Plan:
    nodes = replicas * p.nodes_per_replica
    return p.model_copy(
        update={"replicas": replicas, "nodes": nodes, "total_gpus": replicas * p.gpus_per_replica}
    )


def plan_check(blocks: int, checked_at: str = "2026-01-01T00:00:00Z") -> PlanCheck:
    """A plan check of ``blocks`` 16-token blocks, exactly as planned (no deviation)."""
    return PlanCheck.model_validate(
        {
            "kvCacheBlocks": blocks,
            "kvCacheTokens": blocks * 16,
            "maxConcurrency": 1.0,
            "blockSizeTokens": 16,
            "blocksDeviation": 0.0,
            "tokensDeviation": 0.0,
            "concurrencyDeviation": 0.0,
            "pod": "x-0",
            "podsChecked": 1,
            "checkedAt": checked_at,
        }
    )
