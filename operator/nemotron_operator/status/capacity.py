"""Whether the cluster has room for a plan right now, and if not, exactly what is missing. Pure.

The inventory's free GPUs must already exclude what this deployment's own pods use (the
controller leaves them out), so that a running deployment does not count against itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nemotron_operator.api import Plan
from nemotron_operator.sizing.inventory import GpuInventory

GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True)
class Capacity:
    """``available`` with a message saying what fits, or what is missing and what to change."""

    available: bool
    message: str
    pods_needed: int
    slots_free: int


def _nodes(count: int) -> str:
    return "1 node" if count == 1 else f"{count} nodes"


def check_capacity(inventory: GpuInventory, plan: Plan, *, karpenter: bool = False) -> Capacity:
    """One serving pod per node of a replica, each needing ``gpus_per_replica /
    nodes_per_replica`` GPUs of ``plan.gpu_product`` on one ready, schedulable node."""
    product = plan.gpu_product
    per_pod = plan.gpus_per_replica // max(1, plan.nodes_per_replica)
    pods_needed = plan.replicas * plan.nodes_per_replica
    usable = [n for n in inventory.nodes_of(product) if n.ready and n.schedulable]
    slots = sum(n.free_gpus // per_pod for n in usable) if per_pod else 0
    if pods_needed == 0 or slots >= pods_needed:
        # No cluster-wide count in the message: it would change whenever any other deployment
        # starts or stops, and rewrite this status (hack/bench-operator.py measured the churn).
        return Capacity(
            True,
            f"room for {pods_needed} serving pod(s) of {per_pod} {product} GPU(s)",
            pods_needed,
            slots,
        )
    largest = max((n.free_gpus for n in usable), default=0)
    if not inventory.nodes_of(product):
        need = f"needs {_nodes(pods_needed)} with {per_pod} free {product}; the cluster has none"
    elif pods_needed == 1:
        need = f"needs 1 node with {per_pod} free {product}; the largest free slot is {largest}"
    else:
        need = (
            f"needs room for {pods_needed} pods with {per_pod} free {product} each; the cluster "
            f"has room for {slots} (the largest free slot is {largest})"
        )
    if karpenter:
        advice = "the Karpenter NodePool should add the nodes"
    else:
        advice = (
            f"free {product} GPUs, add {product} nodes, lower spec.replicas, or set "
            "spec.nodePool.provisioner: Karpenter"
        )
    return Capacity(False, f"{need}: {advice}", pods_needed, slots)


NODE_POOL_NOT_READY = "NodePoolNotReady"
NODE_POOL_LIMIT = "NodePoolLimitReached"


@dataclass(frozen=True)
class NodePoolProblem:
    reason: str
    message: str


def _gpus(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def node_pool_problem(
    desired: Mapping[str, Any], live: Mapping[str, Any] | None, gpus_per_node: int
) -> NodePoolProblem | None:
    """Why Karpenter will add no node to the deployment's NodePool, from what Karpenter wrote on
    the live one: not Ready (its node class missing or not ready), or its nodes' GPUs
    (``status.resources``) plus one more node beyond the ``limits`` the operator rendered —
    Karpenter's own test ("all available instance types exceed limits for nodepool"). Pods of
    another deployment of the same product on this pool's nodes are how the latter happens.
    None: nothing Karpenter wrote says it will not provision."""
    if live is None:
        return None
    name = str(desired.get("metadata", {}).get("name", ""))
    status = live.get("status") or {}
    conditions = status.get("conditions") or []
    if any(c.get("type") == "Ready" and c.get("status") == "False" for c in conditions):
        # Ready's own reason is only "UnhealthyDependents": say which, and why.
        why = "; ".join(
            f"{c.get('type')} {c.get('reason', '')}: {c.get('message', '')}"
            for c in conditions
            if c.get("type") != "Ready" and c.get("status") == "False"
        )
        return NodePoolProblem(
            NODE_POOL_NOT_READY,
            f"Karpenter reports NodePool {name} not Ready ({why or 'no reason given'}): check "
            "spec.nodePool.karpenter.nodeClassRef",
        )
    limit = _gpus((desired.get("spec", {}).get("limits") or {}).get(GPU_RESOURCE))
    used = _gpus((status.get("resources") or {}).get(GPU_RESOURCE, "0"))
    if limit is None or used is None or used + gpus_per_node <= limit:
        return None
    return NodePoolProblem(
        NODE_POOL_LIMIT,
        f"NodePool {name} is at its limit: its nodes have {used} of {GPU_RESOURCE} {limit} and "
        f"a new node would add {gpus_per_node}, so Karpenter launches none; pods of other "
        f"deployments may be using this pool's nodes: free them, or give those deployments "
        f"their own node pool",
    )
