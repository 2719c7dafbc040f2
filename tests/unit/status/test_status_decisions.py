"""One test per status decision that a plausible one-line bug would get wrong (issue 26's review:
each of these mutants survived every unit and operator test before). Pure."""

from __future__ import annotations

from typing import Any

from nemotron_operator.api import NemotronDeploymentStatus
from nemotron_operator.status import (
    Blocker,
    Capacity,
    Problem,
    Readiness,
    StatusInputs,
    check_capacity,
    compute_status,
    flipped,
    transition,
)
from nemotron_operator.status.conditions import ordered
from tests.unit.status.helpers import gpu_pod, inventory, node, plan, plan_check, with_replicas

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"
H200 = "NVIDIA-H200"
SHORT = Capacity(False, "needs 1 node with 1 free NVIDIA-H200; the largest free slot is 0", 1, 0)
FITS = Capacity(True, "room for 1 serving pod(s) of 1 NVIDIA-H200 GPU(s)", 1, 8)


def _two_node_plan() -> Any:
    """8 GPUs per node × 2 nodes per replica (TP 8, PP 2): the multi-node layout."""
    inv = inventory([node("h1"), node("h2")])
    found = plan(inv, gpu={"count": 16, "products": [H200]})
    assert (found.gpus_per_replica, found.nodes_per_replica) == (16, 2)
    return found


def _inputs(**changes: Any) -> StatusInputs:
    inv = inventory([node("h1")])
    base: dict[str, Any] = {
        "generation": 1,
        "replicas": 1,
        "selector": "app=x",
        "endpoint": "http://x.ai.svc:8000/v1",
        "plan": plan(inv, gpu={"count": 1}),
        "capacity": FITS,
        "readiness": Readiness(1, None),
    }
    return StatusInputs(**{**base, **changes})


def _conditions(status: NemotronDeploymentStatus) -> dict[str, Any]:
    return {c.type: c for c in status.conditions}


# capacity.py: a pod per node, each needing gpus_per_replica / nodes_per_replica GPUs.


def test_a_two_node_replica_fits_on_two_free_nodes() -> None:
    two_nodes = _two_node_plan()
    found = check_capacity(inventory([node("h1"), node("h2")]), two_nodes)
    assert found.available, found.message
    assert found.pods_needed == 2
    assert found.slots_free == 2  # one 8-GPU slot per node, not a 16-GPU slot anywhere
    assert found.message == "room for 2 serving pod(s) of 8 NVIDIA-H200 GPU(s)"


def test_a_two_node_replica_does_not_fit_on_one_node_and_says_so_per_pod() -> None:
    two_nodes = _two_node_plan()
    found = check_capacity(inventory([node("h1"), node("h2")], [gpu_pod("h2", 1)]), two_nodes)
    assert not found.available
    assert found.slots_free == 1
    assert found.message.startswith(
        "needs room for 2 pods with 8 free NVIDIA-H200 each; the cluster has room for 1 "
        "(the largest free slot is 8)"
    )


def test_capacity_counts_nodes_of_the_planned_product_only() -> None:
    one_gpu = plan(inventory([node("h1")]), gpu={"count": 1, "products": [H200]})
    others = inventory([node("b1", "NVIDIA-B200"), node("h1")], [gpu_pod("h1", 8)])
    found = check_capacity(others, one_gpu)
    assert not found.available  # the B200 node's 8 free GPUs are not H200s
    assert found.slots_free == 0
    assert "the largest free slot is 0" in found.message


def test_capacity_message_words_for_one_and_many_nodes_when_the_product_is_absent() -> None:
    one_gpu = plan(inventory([node("h1")]), gpu={"count": 1, "products": [H200]})
    b200 = inventory([node("b1", "NVIDIA-B200")])
    single = check_capacity(b200, one_gpu)
    assert single.message.startswith("needs 1 node with 1 free NVIDIA-H200; the cluster has none")
    many = check_capacity(b200, with_replicas(one_gpu, 3))
    assert many.message.startswith("needs 3 nodes with 1 free NVIDIA-H200; the cluster has none")
    assert many.message.endswith(
        ": free NVIDIA-H200 GPUs, add NVIDIA-H200 nodes, lower spec.replicas, or set "
        "spec.nodePool.provisioner: Karpenter"
    )
    assert (many.available, many.pods_needed, many.slots_free) == (False, 3, 0)


def test_a_slot_is_exactly_enough_free_gpus() -> None:
    four = plan(inventory([node("h1")]), gpu={"count": 4, "products": [H200]})
    exact = check_capacity(inventory([node("h1")], [gpu_pod("h1", 4)]), four)
    assert exact.available  # 4 free, 4 needed
    short = check_capacity(inventory([node("h1")], [gpu_pod("h1", 5)]), four)
    assert not short.available  # 3 free
    assert short.message.startswith("needs 1 node with 4 free NVIDIA-H200; the largest free slot")


# compute.py: CapacityAvailable, the phase, Pending vs Infeasible, carried-over figures.


def test_a_ready_deployment_is_not_short_of_gpus_when_its_node_is_cordoned() -> None:
    # The inventory no longer counts the cordoned node, but every replica is serving on it.
    status = compute_status(_inputs(capacity=SHORT), None, now=T0)
    found = _conditions(status)
    assert status.phase == "Ready"
    assert found["CapacityAvailable"].status == "True"
    assert found["CapacityAvailable"].reason == "GPUsAvailable"


def test_missing_capacity_alone_means_waiting_for_capacity() -> None:
    loading = Readiness(0, Blocker("LoadingModel", "pod x is loading"))
    status = compute_status(_inputs(capacity=SHORT, readiness=loading), None, now=T0)
    assert status.phase == "WaitingForCapacity"
    assert _conditions(status)["CapacityAvailable"].status == "False"


def test_an_unschedulable_pod_alone_means_waiting_for_capacity() -> None:
    # The inventory says there is room, the scheduler disagrees (taints, another product...).
    stuck = Readiness(0, Blocker("Unschedulable", "pod x cannot be scheduled: 0/2 nodes"))
    status = compute_status(_inputs(capacity=FITS, readiness=stuck), None, now=T0)
    assert status.phase == "WaitingForCapacity"
    assert _conditions(status)["CapacityAvailable"].status == "True"
    assert _conditions(status)["Progressing"].reason == "Unschedulable"


def test_pods_that_are_loading_with_room_are_deploying() -> None:
    loading = Readiness(0, Blocker("LoadingModel", "pod x is loading"))
    status = compute_status(_inputs(readiness=loading), None, now=T0)
    assert status.phase == "Deploying"
    assert _conditions(status)["Ready"].message == "0/1 replica(s) ready: pod x is loading"
    assert _conditions(status)["Progressing"].status == "True"
    assert _conditions(status)["Ready"].reason == "LoadingModel"


def test_not_yet_planned_is_pending_not_infeasible() -> None:
    status = compute_status(_inputs(plan=None, readiness=None), None, now=T0)
    found = _conditions(status)
    assert status.phase == "Pending"
    assert found["Feasible"].status == "False"
    assert found["Feasible"].reason == "NotPlanned"
    assert found["CapacityAvailable"].status == "Unknown"
    assert status.endpoint is None
    # What a user reads while the operator has not planned yet, condition by condition.
    assert [(c.type, c.status, c.reason, c.message) for c in status.conditions] == [
        ("Feasible", "False", "NotPlanned", "the operator has not planned this yet"),
        ("CapacityAvailable", "Unknown", "NotPlanned", "no plan to check capacity for"),
        (
            "Progressing",
            "False",
            "NotPlanned",
            "nothing is changed until the spec can be planned; pods of an earlier spec, if any, "
            "keep running",
        ),
        ("Ready", "False", "NotPlanned", "the operator has not planned this yet"),
        ("Degraded", "False", "NotPlanned", "not deployed"),
    ]
    infeasible = compute_status(
        _inputs(plan=None, problem=Problem("InsufficientGPUMemory", "add GPUs")), None, now=T0
    )
    assert infeasible.phase == "Infeasible"


def test_capacity_not_read_yet_is_unknown_and_karpenter_waits_for_nodes() -> None:
    unread = compute_status(_inputs(capacity=None, readiness=Readiness(0, None)), None, now=T0)
    found = _conditions(unread)["CapacityAvailable"]
    assert (found.status, found.reason, found.message) == (
        "Unknown",
        "NotPlanned",
        "GPU inventory not read",
    )
    assert unread.phase == "Deploying"
    pooled = compute_status(
        _inputs(capacity=SHORT, karpenter=True, readiness=Readiness(0, None)), None, now=T0
    )
    assert _conditions(pooled)["CapacityAvailable"].reason == "WaitingForNodes"
    assert pooled.phase == "WaitingForCapacity"


def test_the_autoscalers_capacity_problem_outranks_the_inventory() -> None:
    status = compute_status(
        _inputs(autoscale_capacity_problem="3 replicas wanted, room for 2"), None, now=T0
    )
    found = _conditions(status)["CapacityAvailable"]
    assert (found.status, found.reason, found.message) == (
        "False",
        "InsufficientGPUs",
        "3 replicas wanted, room for 2",
    )


def test_plan_check_is_carried_over_until_a_new_one_arrives() -> None:
    first = compute_status(_inputs(plan_check=plan_check(100)), None, now=T0)
    assert first.plan_check is not None
    kept = compute_status(_inputs(), first, now=T1)
    assert kept.plan_check == plan_check(100)
    replaced = compute_status(_inputs(plan_check=plan_check(90)), kept, now=T1)
    assert replaced.plan_check is not None
    assert replaced.plan_check.kv_cache_blocks == 90


def test_a_finished_rollout_is_up_to_date_and_the_plan_is_summarised() -> None:
    status = compute_status(_inputs(), None, now=T0)
    found = _conditions(status)
    assert (found["Progressing"].reason, found["Progressing"].message) == (
        "RolloutComplete",
        "up to date",
    )
    p = _inputs().plan
    assert p is not None
    assert found["Feasible"].message == (
        f"1x {p.gpu_product} per replica (TP 1, PP 1, 1 node(s)); max concurrency "
        f"{p.max_concurrency:.2f} at {p.max_model_len} tokens"
    )
    assert (found["Degraded"].reason, found["Degraded"].message) == (
        "AsExpected",
        "1/1 replica(s) ready",
    )


def test_plan_accurate_is_reported_only_with_a_plan() -> None:
    verdict = ("False", "FewerBlocksThanPlanned", "vLLM allocated 10 % fewer blocks")
    with_plan = _conditions(compute_status(_inputs(plan_accurate=verdict), None, now=T0))
    assert (with_plan["PlanAccurate"].status, with_plan["PlanAccurate"].reason) == verdict[:2]
    without = compute_status(_inputs(plan=None, plan_accurate=verdict), None, now=T0)
    assert "PlanAccurate" not in _conditions(without)


def test_lost_replicas_degrade_only_while_some_serve() -> None:
    none = compute_status(_inputs(replicas=2, readiness=Readiness(0, None)), None, now=T0)
    assert _conditions(none)["Degraded"].status == "False"  # nothing lost yet: still coming up
    half = compute_status(_inputs(replicas=2, readiness=Readiness(1, None)), None, now=T0)
    assert _conditions(half)["Degraded"].status == "True"
    assert half.phase == "Degraded"
    assert half.ready == "1/2"
    assert _conditions(half)["Ready"].reason == "WaitingForPods"
    # No pod-level reason: the count stands in for it.
    assert _conditions(half)["Ready"].message == "1/2 replica(s) ready: 1/2 replica(s) ready"


def test_a_lost_node_degrades_even_with_no_replica_serving() -> None:
    lost = Blocker("NodeLost", "1 node(s) not Ready ...: node h1: pod(s) x-0; ...")
    found = compute_status(_inputs(readiness=Readiness(0, lost)), None, now=T0)
    degraded = _conditions(found)["Degraded"]
    assert (degraded.status, degraded.reason) == ("True", "NodeLost")
    assert "node h1: pod(s) x-0" in degraded.message
    assert found.phase == "Degraded"
    assert _conditions(found)["Ready"].reason == "NodeLost"


def test_flipped_lists_only_conditions_whose_status_or_reason_changed() -> None:
    first = compute_status(
        _inputs(readiness=Readiness(0, Blocker("LoadingModel", "x"))), None, now=T0
    )
    again = compute_status(
        _inputs(readiness=Readiness(0, Blocker("LoadingModel", "y"))), first, now=T1
    )
    assert flipped(first.conditions, again.conditions) == []  # only a message changed
    ready = compute_status(_inputs(), again, now=T1)
    changed = {c.type for c in flipped(again.conditions, ready.conditions)}
    assert changed == {"Progressing", "Ready"}
    assert {c.type for c in flipped([], ready.conditions)} == {c.type for c in ready.conditions}


def test_ordered_puts_known_types_first_in_their_order_then_the_others_by_name() -> None:
    status = compute_status(_inputs(), None, now=T0)
    by_type = {c.type: c for c in status.conditions}
    custom = [
        c.model_copy(update={"type": name}) for name, c in (("Zeta", by_type["Ready"]),
                                                             ("Alpha", by_type["Feasible"]))
    ]  # fmt: skip
    shuffled = [custom[0], by_type["Ready"], custom[1], by_type["Feasible"], by_type["Degraded"]]
    assert [c.type for c in ordered(shuffled)] == ["Feasible", "Ready", "Degraded", "Alpha", "Zeta"]


def test_a_message_longer_than_the_api_allows_is_cut_to_its_limit() -> None:
    long = transition([], "Ready", "False", "X", "m" * 40000, generation=1, now=T0)
    assert len(long.message) == 32768
    exact = transition([], "Ready", "False", "X", "m" * 32768, generation=1, now=T0)
    assert len(exact.message) == 32768
