"""Steps of progress before the first Ready wait up to ``--progress-hold-seconds`` and are written
together; everything else is written at once; the first Ready is in status, not an Event
(``controller/reconcile/progress_hold.py``, ``event_types.worth_an_event``)."""

from __future__ import annotations

import copy
from typing import Any

from nemotron_operator.api import NemotronDeploymentStatus
from nemotron_operator.controller.reconcile.progress_hold import ProgressHold, progress_only
from nemotron_operator.kube.resources import NEMOTRON_DEPLOYMENTS, PODS
from nemotron_operator.status.verification import GATE
from tests.unit.controller.world import (
    CHILDREN,
    NAME,
    NS,
    STATUS,
    World,
    deployment,
    rolled_out,
    world,
)
from tests.unit.controller.world import serving_pod as bare_serving_pod

HOLD = 5.0
CREATED = "2026-01-01T00:00:00Z"


def serving_pod(*, ready: bool, at: str = "2026-01-01T00:01:00Z") -> dict[str, Any]:
    """The leader pod with the times a real pod has (its start is then in status.startup)."""
    pod = bare_serving_pod(ready=ready)
    pod["metadata"]["creationTimestamp"] = CREATED
    flag = "True" if ready else "False"
    pod["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": CREATED},
        {"type": "ContainersReady", "status": flag, "lastTransitionTime": at},
        {"type": "Ready", "status": flag, "lastTransitionTime": at},
    ]
    pod["status"]["containerStatuses"][0]["state"] = {"running": {"startedAt": CREATED}}
    return pod


def ready_reason(w: World) -> tuple[str, str]:
    stored = NemotronDeploymentStatus.model_validate(
        w.kube.stored(NEMOTRON_DEPLOYMENTS, NS, NAME)["status"]
    )
    ready = next(c for c in stored.conditions if c.type == "Ready")
    return ready.status, ready.reason


async def created() -> World:
    w = world(progress_hold=HOLD)
    w.kube.put(NEMOTRON_DEPLOYMENTS, deployment())
    outcome, writes = await w.reconcile()
    assert writes == [*CHILDREN, STATUS]  # the plan at create is never held
    assert outcome.retry_after is None
    return w


async def test_the_status_at_create_says_what_was_just_created() -> None:
    """Computed from the children as the server answered their applies, not as read before
    them: a message that changed only because the StatefulSet now exists would be a write of
    its own (a progress step, at the hold's end)."""
    w = await created()
    stored = w.kube.stored(NEMOTRON_DEPLOYMENTS, NS, NAME)["status"]
    ready = next(c for c in stored["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "WaitingForPods")
    assert "not created yet" not in ready["message"]
    outcome, writes = await w.reconcile()  # the children's watch events: nothing new
    assert (writes, outcome.retry_after) == ([], None)


async def test_a_step_of_progress_waits_then_is_written_with_the_latest_state() -> None:
    w = await created()
    assert ready_reason(w) == ("False", "WaitingForPods")
    w.kube.put(PODS, serving_pod(ready=False))
    outcome, writes = await w.reconcile()
    assert outcome.status is not None
    computed = next(c for c in outcome.status.conditions if c.type == "Ready")
    assert (computed.status, computed.reason) != ("False", "WaitingForPods")  # a new step
    assert writes == []  # held
    assert outcome.retry_after == HOLD
    w.clock.now += 2.0
    outcome, writes = await w.reconcile()
    assert writes == []
    assert outcome.retry_after == HOLD - 2.0  # counted from the first unwritten change
    w.clock.now += 3.0
    outcome, writes = await w.reconcile()
    assert writes == [STATUS]  # the step stood: written, no Event for progress
    assert ready_reason(w) == ("False", computed.reason)
    assert outcome.retry_after is None


async def test_ready_is_written_at_once_with_what_waited_and_the_first_ready_posts_no_event() -> (
    None
):
    w = await created()
    w.kube.put(PODS, serving_pod(ready=False))
    outcome, writes = await w.reconcile()
    assert writes == []
    assert outcome.retry_after == HOLD
    rolled_out(w)
    w.kube.put(PODS, serving_pod(ready=True))
    outcome, writes = await w.reconcile()  # no time passed: Ready is never held
    assert writes == [STATUS]  # and no Event: the first Ready is in status
    assert ready_reason(w)[0] == "True"
    stored = w.kube.stored(NEMOTRON_DEPLOYMENTS, NS, NAME)["status"]
    assert stored["startup"]["lastObserved"]["pod"] == f"{NAME}-0"
    assert len(w.reconciler.parts.progress) == 0  # nothing left waiting


async def test_a_warning_is_written_at_once_and_ready_regained_after_it_is_an_event() -> None:
    w = await created()
    rolled_out(w)
    w.kube.put(PODS, serving_pod(ready=True))
    _, writes = await w.reconcile()
    assert writes == [STATUS]
    crashing = copy.deepcopy(serving_pod(ready=False, at="2026-01-01T00:02:00Z"))
    crashing["status"]["containerStatuses"][0].update(
        state={"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}}, restartCount=5
    )
    w.kube.put(PODS, crashing)
    _, writes = await w.reconcile()
    assert writes[0] == STATUS  # not held: a warning
    assert "create Event Warning CrashLoop" in writes
    w.kube.put(PODS, serving_pod(ready=True, at="2026-01-01T00:03:00Z"))
    _, writes = await w.reconcile()
    assert writes[0] == STATUS
    assert any(wr.startswith("create Event Normal") for wr in writes)  # Ready again: news


async def test_a_passed_check_waits_for_ready_and_keeps_its_moment() -> None:
    """The operator set the pod's gate (the check passed); the kubelet has not marked the pod
    Ready yet. Verified's pass waits with the progress and is written with Ready, its time the
    gate's."""
    w = await created()
    passed_at = "2026-01-01T00:01:05Z"
    pod = serving_pod(ready=True, at="2026-01-01T00:01:00Z")
    pod["spec"]["readinessGates"] = [{"conditionType": GATE}]
    gate = {"type": GATE, "status": "True", "reason": "Passed", "message": "all checks passed",
            "lastTransitionTime": passed_at}  # fmt: skip
    ready = pod["status"]["conditions"][2]
    ready["status"] = "False"
    pod["status"]["conditions"].append(gate)
    w.kube.put(PODS, pod)
    outcome, writes = await w.reconcile()
    assert writes == []  # Verified Unknown → True alone: held
    assert outcome.retry_after == HOLD
    rolled_out(w)
    ready.update(status="True", lastTransitionTime="2026-01-01T00:01:06Z")
    w.kube.put(PODS, pod)
    outcome, writes = await w.reconcile()
    assert writes == [STATUS]
    stored = w.kube.stored(NEMOTRON_DEPLOYMENTS, NS, NAME)["status"]
    verified = next(c for c in stored["conditions"] if c["type"] == "Verified")
    assert (verified["status"], verified["lastTransitionTime"]) == ("True", passed_at)
    assert ready_reason(w)[0] == "True"


async def test_no_hold_writes_every_step_at_once() -> None:
    w = world(progress_hold=0.0)
    w.kube.put(NEMOTRON_DEPLOYMENTS, deployment())
    await w.reconcile()
    w.kube.put(PODS, serving_pod(ready=False))
    outcome, writes = await w.reconcile()
    assert writes == [STATUS]
    assert outcome.retry_after is None


def status(
    condition: tuple[str, str], verified: str | None = None, **extra: Any
) -> NemotronDeploymentStatus:
    conditions = [
        {"type": "Feasible", "status": "True", "reason": "Planned", "message": "",
         "lastTransitionTime": CREATED},
        {"type": "Ready", "status": condition[0], "reason": condition[1], "message": "",
         "lastTransitionTime": CREATED},
    ]  # fmt: skip
    if verified is not None:
        conditions.append({"type": "Verified", "status": verified, "reason": "Checks",
                           "message": "", "lastTransitionTime": CREATED})  # fmt: skip
    return NemotronDeploymentStatus.model_validate(
        {"observedGeneration": 1, "phase": "Deploying", "conditions": conditions, **extra}
    )


def test_what_counts_as_progress_only() -> None:
    waiting = status(("False", "WaitingForPods"))
    loading = status(("False", "LoadingModel"))
    assert progress_only(waiting, loading)
    assert progress_only(waiting, status(("False", "Verifying"), ready="0/1", readyReplicas=0))
    assert not progress_only(None, loading)  # the first status (the plan) is written at once
    assert not progress_only(loading, status(("True", "AllReplicasReady")))  # Ready
    assert not progress_only(loading, status(("False", "CrashLoop")))  # a warning
    assert not progress_only(status(("False", "CrashLoop")), loading)  # a recovery
    assert not progress_only(waiting, status(("False", "LoadingModel"), observedGeneration=2))
    assert not progress_only(waiting, status(("False", "LoadingModel"), endpoint="http://x:8000"))
    verifying = status(("False", "Verifying"), verified="Unknown")
    assert progress_only(verifying, status(("False", "Verifying"), verified="True"))  # passed
    assert not progress_only(verifying, status(("False", "Verifying"), verified="False"))
    assert not progress_only(
        status(("False", "Verifying"), verified="True"),  # a pass lost is never held
        verifying,
    )
    hold = ProgressHold(HOLD, clock=lambda: 0.0)
    assert hold.wait(("ns", "a"), waiting, status(("True", "AllReplicasReady"))) is None
    assert hold.wait(("ns", "a"), waiting, loading) == HOLD
    hold.forget(("ns", "a"))
    assert len(hold) == 0
