"""The pure status function: conditions, reasons, phases and lastTransitionTime (pure)."""

from __future__ import annotations

from typing import Any

from nemotron_operator.api import Condition, Throughput
from nemotron_operator.status import (
    Blocker,
    Capacity,
    Problem,
    Readiness,
    StatusInputs,
    assess_readiness,
    compute_status,
)
from tests.unit.status.helpers import inventory, node, plan

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"
PLAN = plan(inventory([node("h1")]), gpu={"count": 1})
FITS = Capacity(True, "room", 1, 8)
SHORT = Capacity(False, "needs 1 node with 1 free NVIDIA-H200; the largest free slot is 0", 1, 0)


def inputs(**changes: Any) -> StatusInputs:
    base: dict[str, Any] = {
        "generation": 3,
        "replicas": 1,
        "selector": "app=x",
        "endpoint": "http://nano.ai.svc:8000/v1",
        "plan": PLAN,
        "capacity": FITS,
        "readiness": Readiness(1, None),
    }
    return StatusInputs(**{**base, **changes})


def conditions(status: Any) -> dict[str, Any]:
    return {c.type: c for c in status.conditions}


def test_ready_deployment() -> None:
    status = compute_status(inputs(), None, now=T0)
    found = conditions(status)
    assert status.phase == "Ready"
    assert status.ready == "1/1"
    assert status.observed_generation == 3
    assert status.endpoint == "http://nano.ai.svc:8000/v1"
    assert [c.type for c in status.conditions] == [
        "Feasible",
        "CapacityAvailable",
        "Progressing",
        "Ready",
        "Degraded",
    ]
    assert found["Ready"].status == "True"
    assert found["Ready"].reason == "AllReplicasReady"
    assert found["Feasible"].reason == "Planned"
    assert found["Progressing"].status == "False"
    assert found["Degraded"].status == "False"
    assert all(c.observed_generation == 3 for c in status.conditions)


def test_last_transition_time_moves_only_when_status_flips() -> None:
    loading = Readiness(0, Blocker("LoadingModel", "pod x is loading"))
    first = compute_status(inputs(readiness=loading), None, now=T0)
    # Same status, new message: the time stays.
    other = Readiness(0, Blocker("WaitingForPods", "pod x is Pending"))
    second = compute_status(inputs(readiness=other), first, now=T1)
    assert conditions(second)["Ready"].last_transition_time == T0
    assert conditions(second)["Ready"].reason == "WaitingForPods"
    # Ready flips: its time moves; Feasible did not flip and keeps T0.
    third = compute_status(inputs(), second, now=T2)
    assert conditions(third)["Ready"].last_transition_time == T2
    assert conditions(third)["Feasible"].last_transition_time == T0
    # Nothing changed: the status is identical (so the controller writes nothing).
    assert compute_status(inputs(), third, now="2026-01-01T09:00:00Z") == third


def test_infeasible_spec_says_why_and_has_no_endpoint() -> None:
    problem = Problem("InsufficientGPUMemory", "no layout holds minConcurrency; add GPUs")
    status = compute_status(inputs(plan=None, problem=problem, readiness=None), None, now=T0)
    found = conditions(status)
    assert status.phase == "Infeasible"
    assert found["Feasible"].status == "False"
    assert found["Feasible"].reason == "InsufficientGPUMemory"
    assert found["Ready"].reason == "InsufficientGPUMemory"
    assert found["CapacityAvailable"].status == "Unknown"
    assert status.plan is None
    assert status.endpoint is None


def test_missing_capacity_and_karpenter() -> None:
    waiting = Readiness(0, Blocker("Unschedulable", "pod x cannot be scheduled"))
    status = compute_status(inputs(capacity=SHORT, readiness=waiting), None, now=T0)
    found = conditions(status)
    assert status.phase == "WaitingForCapacity"
    assert found["CapacityAvailable"].reason == "InsufficientGPUs"
    assert "largest free slot is 0" in found["CapacityAvailable"].message
    pooled = compute_status(inputs(capacity=SHORT, karpenter=True, readiness=waiting), None, now=T0)
    assert conditions(pooled)["CapacityAvailable"].reason == "WaitingForNodes"


def test_a_claim_binding_is_not_a_capacity_wait() -> None:
    storage = Readiness(0, Blocker("WaitingForStorage", "pod x waits for its volume claims"))
    status = compute_status(inputs(readiness=storage), None, now=T0)
    assert status.phase == "Deploying"
    assert conditions(status)["Progressing"].reason == "WaitingForStorage"
    short = compute_status(inputs(capacity=SHORT, readiness=storage), None, now=T0)
    assert short.phase == "WaitingForCapacity"  # a GPU shortage still is


def test_stuck_pods_degrade_and_stop_progress() -> None:
    crash = Readiness(0, Blocker("CrashLoop", "pod x keeps crashing"))
    status = compute_status(inputs(readiness=crash), None, now=T0)
    found = conditions(status)
    assert status.phase == "Degraded"
    assert found["Degraded"].status == "True"
    assert found["Degraded"].reason == "CrashLoop"
    assert found["Progressing"].status == "False"
    assert found["Ready"].reason == "CrashLoop"


def test_lost_replicas_degrade_but_a_rollout_does_not() -> None:
    lost = compute_status(inputs(replicas=2, readiness=Readiness(1, None)), None, now=T0)
    assert conditions(lost)["Degraded"].reason == "ReplicasUnavailable"
    rolling = Readiness(1, Blocker("RolloutInProgress", "1 of 2 updated"))
    status = compute_status(inputs(replicas=2, readiness=rolling), None, now=T0)
    assert conditions(status)["Degraded"].status == "False"
    assert conditions(status)["Progressing"].status == "True"
    assert status.phase == "Deploying"


def test_conditions_of_other_types_and_throughput_are_kept() -> None:
    first = compute_status(inputs(), None, now=T0)
    # A condition another part of the operator adds (e.g. PlanAccurate, not yet in the API).
    foreign = Condition.model_construct(
        type="PlanAccurate", status="True", reason="Measured", message="", last_transition_time=T0
    )
    previous = first.model_copy(
        update={
            "conditions": [*first.conditions, foreign],
            "throughput": Throughput(generation_tokens_per_second=12.5),
        }
    )
    status = compute_status(inputs(), previous, now=T1)
    assert [c.type for c in status.conditions][-1] == "PlanAccurate"
    assert status.throughput is not None
    assert status.throughput.generation_tokens_per_second == 12.5


def _pod(name: str, *, ready: bool = False, **status: Any) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {
        "metadata": {
            "name": name,
            "labels": {
                "app.kubernetes.io/component": "serving",
                "serving.nemotron.io/replica": name[-1],
            },
        },
        "status": {"conditions": conditions, **status},
    }


def _sts(name: str, replicas: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "generation": 1},
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": 1,
            "updatedReplicas": replicas,
            "currentRevision": "a",
            "updateRevision": "a",
        },
    }


def _readiness(pods: list[dict[str, Any]], **kw: Any) -> Readiness:
    args: dict[str, Any] = {
        "desired_replicas": 1,
        "nodes_per_replica": 1,
        "expected_statefulsets": ["nano"],
        "statefulsets": [_sts("nano")],
        "pods": pods,
    }
    return assess_readiness(**{**args, **kw})


def test_readiness_reasons() -> None:
    missing = {
        "initContainerStatuses": [
            {
                "name": "download",
                "state": {
                    "waiting": {
                        "reason": "CreateContainerConfigError",
                        "message": 'secret "hf-token" not found',
                    }
                },
            }
        ]
    }
    found = _readiness([_pod("nano-0", **missing)])
    assert found.blocker is not None
    assert found.blocker.reason == "SecretNotFound"
    assert "tokenSecretRef" in found.blocker.message
    crash = {
        "containerStatuses": [
            {
                "name": "vllm",
                "restartCount": 3,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"message": "error: unrecognized arguments: --x"}},
            }
        ]
    }
    crashed = _readiness([_pod("nano-0", **crash)]).blocker
    assert crashed is not None
    assert crashed.reason == "CrashLoop"
    assert "unrecognized arguments" in crashed.message
    unscheduled = _pod("nano-0")
    unscheduled["status"]["conditions"].append(
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/2 nodes",
        }
    )
    blocked = _readiness([unscheduled]).blocker
    assert blocked is not None
    assert blocked.reason == "Unschedulable"
    loading = _readiness([_pod("nano-0", phase="Running")]).blocker
    assert loading is not None
    assert loading.reason == "LoadingModel"
    none_yet = _readiness([], statefulsets=[]).blocker
    assert none_yet is not None
    assert none_yet.reason == "WaitingForPods"


def test_readiness_multi_node_replicas_need_every_pod_ready() -> None:
    pods = [_pod("a-0", ready=True), _pod("b-0", ready=True), _pod("c-1", ready=True)]
    for pod, replica in zip(pods, ("0", "0", "1"), strict=True):
        pod["metadata"]["labels"]["serving.nemotron.io/replica"] = replica
    found = _readiness(
        pods, desired_replicas=2, nodes_per_replica=2, expected_statefulsets=[], statefulsets=[]
    )
    assert found.ready_replicas == 1  # replica 1 has one of its two pods
    ready = _readiness([_pod("nano-0", ready=True)])
    assert ready == Readiness(1, None)


def test_a_refused_apply_degrades_with_the_server_message() -> None:
    refused = "PATCH /apis/apps/v1/namespaces/ai/statefulsets/nano: 422 Invalid: spec: Forbidden"
    status = compute_status(inputs(apply_error=refused), None, now=T0)
    found = conditions(status)
    assert status.phase == "Degraded"
    assert found["Degraded"].reason == "ApplyRejected"
    assert "422 Invalid: spec: Forbidden" in found["Degraded"].message
    assert found["Progressing"].status == "False"
    assert found["Ready"].status == "True"  # the pods of the earlier spec still serve


def test_adapters_each_pod_serves_and_why_not() -> None:
    served = (("nano-0", ("law", "sql"), None), ("nano-1", (), "sql: 400 No adapter found"))
    status = compute_status(inputs(adapters=served), None, now=T0)
    assert status.to_wire()["adapters"] == [
        {"pod": "nano-0", "adapters": ["law", "sql"]},
        {"pod": "nano-1", "adapters": [], "message": "sql: 400 No adapter found"},
    ]
    assert "adapters" not in compute_status(inputs(), None, now=T0).to_wire()  # LoRA off


def test_zero_replicas_is_idle_not_ready_and_keeps_the_plan() -> None:
    status = compute_status(inputs(replicas=0, readiness=Readiness(0, None)), None, now=T0)
    assert status.phase == "Idle"
    ready = conditions(status)["Ready"]
    assert (ready.status, ready.reason) == ("False", "ScaledToZero")
    assert "kubectl scale" in ready.message
    assert conditions(status)["Degraded"].status == "False"
    assert status.plan == PLAN
    # Woken: one replica loading is Deploying again, not Idle.
    loading = Readiness(0, Blocker("LoadingModel", "pod nano-0 is downloading or loading"))
    assert compute_status(inputs(readiness=loading), status, now=T1).phase == "Deploying"
