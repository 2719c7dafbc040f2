"""CapacityAvailable: what fits and, when it does not, exactly what is missing (pure)."""

from __future__ import annotations

from nemotron_operator.status import check_capacity
from tests.unit.status.helpers import gpu_pod, inventory, node, plan, with_replicas


def test_one_pod_that_does_not_fit_names_the_largest_free_slot() -> None:
    inv = inventory([node("h1")], [gpu_pod("h1", 6)])
    found = check_capacity(inv, plan(inv, gpu={"count": 4}))
    assert not found.available
    assert found.message.startswith(
        "needs 1 node with 4 free NVIDIA-H200; the largest free slot is 2"
    )
    assert "spec.nodePool.provisioner: Karpenter" in found.message


def test_free_slots_are_counted_per_node() -> None:
    inv = inventory([node("h1"), node("h2")], [gpu_pod("h1", 5)])
    p = plan(inv, gpu={"count": 4})
    # h1 has 3 free (no slot of 4), h2 has 8 (two slots).
    assert check_capacity(inv, with_replicas(p, 2)).available
    short = check_capacity(inv, with_replicas(p, 3))
    assert not short.available
    assert short.slots_free == 2
    assert "needs room for 3 pods with 4 free NVIDIA-H200 each; the cluster has room for 2" in (
        short.message
    )


def test_missing_product_and_karpenter_advice() -> None:
    h200 = inventory([node("h1")])
    p = plan(h200, gpu={"count": 1, "products": ["NVIDIA-H200"]})
    b200 = inventory([node("b1", "NVIDIA-B200")])
    found = check_capacity(b200, p, karpenter=True)
    assert not found.available
    assert found.message == (
        "needs 1 node with 1 free NVIDIA-H200; the cluster has none: the Karpenter NodePool "
        "should add the nodes"
    )


def test_unready_and_cordoned_nodes_do_not_count() -> None:
    cordoned = node("h1")
    cordoned["spec"] = {"unschedulable": True}
    notready = node("h2")
    notready["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    inv = inventory([cordoned, notready])
    found = check_capacity(inv, plan(inv, gpu={"count": 1}))
    assert not found.available
    assert found.slots_free == 0
    # The product is there but no node can take a pod: the largest free slot is nothing.
    assert found.message.startswith(
        "needs 1 node with 1 free NVIDIA-H200; the largest free slot is 0"
    )


def test_zero_replicas_always_fit() -> None:
    inv = inventory([node("h1")], [gpu_pod("h1", 8)])
    assert check_capacity(inv, with_replicas(plan(inv, gpu={"count": 1}), 0)).available
