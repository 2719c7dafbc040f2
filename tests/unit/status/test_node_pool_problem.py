"""What Karpenter wrote on the deployment's NodePool, read as a reason it will add no node."""

from __future__ import annotations

from typing import Any

from nemotron_operator.status import StatusInputs, compute_status, node_pool_problem
from nemotron_operator.status.capacity import Capacity
from tests.unit.status.helpers import inventory, node, plan

SHORT = Capacity(False, "needs 1 node with 4 free NVIDIA-H200; the largest free slot is 0", 1, 0)
PLAN = plan(inventory([node("h1")]), gpu={"count": 1})
T0 = "2026-01-01T00:00:00Z"
DESIRED: dict[str, Any] = {
    "metadata": {"name": "nd-ai-nano"},
    "spec": {"limits": {"nvidia.com/gpu": "8"}},
}


def live(resources: dict[str, str] | None = None, **condition: str) -> dict[str, Any]:
    status: dict[str, Any] = {"resources": resources or {}}
    if condition:
        status["conditions"] = [
            {"type": "Ready", **condition},
            {"type": "ValidationSucceeded", "status": "True", "reason": "ValidationSucceeded"},
        ]
        if condition.get("status") == "False":  # what Karpenter v1.14 writes for a missing class
            status["conditions"].append(
                {
                    "type": "NodeClassReady",
                    "status": "False",
                    "reason": "NodeClassNotFound",
                    "message": "NodeClass not found on cluster",
                }
            )
    return {"metadata": {"name": "nd-ai-nano"}, "status": status}


def test_a_pool_with_room_or_not_seen_yet_says_nothing() -> None:
    assert node_pool_problem(DESIRED, None, 8) is None
    assert node_pool_problem(DESIRED, live(), 8) is None  # no node yet: 0 + 8 <= 8
    assert node_pool_problem(DESIRED, live({"nvidia.com/gpu": "4"}), 4) is None


def test_a_pool_whose_nodes_reach_the_limit_names_it() -> None:
    found = node_pool_problem(DESIRED, live({"nvidia.com/gpu": "8", "cpu": "224"}), 8)
    assert found is not None
    assert found.reason == "NodePoolLimitReached"
    assert found.message.startswith(
        "NodePool nd-ai-nano is at its limit: its nodes have 8 of nvidia.com/gpu 8 and a new "
        "node would add 8, so Karpenter launches none"
    )
    assert node_pool_problem(DESIRED, live({"nvidia.com/gpu": "4"}), 8) is not None


def test_a_pool_karpenter_calls_not_ready_says_why() -> None:
    found = node_pool_problem(
        DESIRED,
        live(status="False", reason="UnhealthyDependents", message="NodeClassReady=False"),
        8,
    )
    assert found is not None
    assert found.reason == "NodePoolNotReady"
    assert found.message.startswith(
        "Karpenter reports NodePool nd-ai-nano not Ready (NodeClassReady NodeClassNotFound: "
        "NodeClass not found on cluster): check"
    )
    assert "spec.nodePool.karpenter.nodeClassRef" in found.message
    assert node_pool_problem(DESIRED, live(status="True", reason="Ready"), 8) is None


def test_the_problem_replaces_waiting_for_nodes_only_with_karpenter() -> None:
    problem = node_pool_problem(DESIRED, live({"nvidia.com/gpu": "8"}), 8)
    base = {"generation": 1, "replicas": 1, "selector": "s", "endpoint": "e", "plan": PLAN}
    pooled = compute_status(
        StatusInputs(**base, capacity=SHORT, karpenter=True, node_pool_problem=problem),
        None,
        now=T0,
    )
    capacity = {c.type: c for c in pooled.conditions}["CapacityAvailable"]
    assert (capacity.status, capacity.reason) == ("False", "NodePoolLimitReached")
    assert pooled.phase == "WaitingForCapacity"
    waiting = compute_status(StatusInputs(**base, capacity=SHORT, karpenter=True), None, now=T0)
    assert {c.type: c for c in waiting.conditions}["CapacityAvailable"].reason == "WaitingForNodes"
