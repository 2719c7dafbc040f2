"""CapacityAvailable's message when there is room must not carry cluster-wide counts: they change
whenever another deployment starts or stops, and each change would rewrite this status."""

from __future__ import annotations

from nemotron_operator.api import NemotronDeploymentSpec
from nemotron_operator.sizing import GpuInventory, GpuNode, plan_deployment
from nemotron_operator.status.capacity import check_capacity

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def inventory(free: int) -> GpuInventory:
    return GpuInventory(
        nodes=(GpuNode("gpu-0", "NVIDIA-H200", gpus=8, free_gpus=free, memory_mib=None,
                       compute_capability=None),)
    )  # fmt: skip


def test_the_message_with_room_does_not_depend_on_how_much_is_free() -> None:
    spec = NemotronDeploymentSpec.model_validate({"model": {"id": NANO}})
    plan = plan_deployment(spec, inventory=inventory(8)).plan
    roomy, tight = check_capacity(inventory(8), plan), check_capacity(inventory(1), plan)
    assert roomy.available
    assert tight.available
    assert roomy.message == tight.message
    assert (roomy.slots_free, tight.slots_free) == (8, 1)  # the count is still there for metrics


def test_the_message_without_room_says_what_is_missing() -> None:
    spec = NemotronDeploymentSpec.model_validate({"model": {"id": NANO}})
    plan = plan_deployment(spec, inventory=inventory(8)).plan
    capacity = check_capacity(inventory(0), plan)
    assert not capacity.available
    assert "needs 1 node with 1 free NVIDIA-H200" in capacity.message
