"""The pods' readiness-gate conditions → the deployment's Verified condition, and the Ready
blockers a gated pod gives."""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.status.readiness import assess_readiness
from nemotron_operator.status.verification import (
    GATE,
    restarted_since_check,
    verified_condition,
)


def pod(
    name: str,
    *,
    containers: bool = True,
    gate: tuple[str, str, str] | None = None,
    role: str = "leader",
    gated: bool = True,
) -> dict[str, Any]:
    conditions = [{"type": "ContainersReady", "status": "True" if containers else "False"}]
    ready = containers and gate is not None and gate[0] == "True"
    conditions.append({"type": "Ready", "status": "True" if ready else "False"})
    if gate is not None:
        conditions.append({"type": GATE, "status": gate[0], "reason": gate[1],
                           "message": gate[2]})  # fmt: skip
    labels = {"app.kubernetes.io/component": "serving", "serving.nemotron.io/role": role}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"readinessGates": [{"conditionType": GATE}]} if gated else {},
        "status": {"phase": "Running", "conditions": conditions},
    }


PASSED = ("True", "Passed", "all checks passed")
FAILED = ("False", "CheckFailed", "check reasoning failed: thinking text is left in the content")
CASES = [
    ([pod("a-0", gate=PASSED), pod("a-1", gate=PASSED)],
     ("True", "Passed", "2 serving pod(s) passed the behavioural check")),
    ([pod("a-0", gate=PASSED), pod("a-1", gate=FAILED), pod("a-2", gate=FAILED)],
     ("False", "CheckFailed", f"pod a-1: {FAILED[2]} (1 more pod(s) failed)")),
    ([pod("a-0", gate=PASSED), pod("a-1")],
     ("Unknown", "Verifying", "checking pod(s) a-1 before they take traffic")),
    ([pod("a-0", containers=False)],
     ("Unknown", "WaitingForPods", "no serving pod has reported ready yet")),
    ([pod("a-0", gate=PASSED), pod("a-0-w-1", role="worker")],  # workers are not checked
     ("True", "Passed", "1 serving pod(s) passed the behavioural check")),
]  # fmt: skip


@pytest.mark.parametrize(("pods", "expected"), CASES)
def test_verified_condition(pods: list[dict[str, Any]], expected: tuple[str, str, str]) -> None:
    assert verified_condition(pods, enabled=True)[:3] == expected


def test_verified_since_the_last_leader_passed_as_its_gate_says() -> None:
    """Status may write the pass later (with Ready, in one patch): its transition time is the
    pods', not the write's."""
    pods = [pod("a-0", gate=PASSED), pod("a-1", gate=PASSED)]
    times = ["2026-12-06T19:00:09Z", "2026-12-06T19:00:10Z"]
    for one, at in zip(pods, times, strict=True):
        one["status"]["conditions"][-1]["lastTransitionTime"] = at
    assert verified_condition(pods, enabled=True).since == "2026-12-06T19:00:10Z"
    pods.append(pod("a-2"))  # checking: Unknown, no time
    assert verified_condition(pods, enabled=True).since is None


def test_disabled() -> None:
    status, reason, *_ = verified_condition([pod("a-0", gated=False)], enabled=False)
    assert (status, reason) == ("Unknown", "CheckDisabled")


def readiness(*pods: dict[str, Any]) -> Any:
    return assess_readiness(
        desired_replicas=len(pods),
        nodes_per_replica=1,
        expected_statefulsets=[],
        statefulsets=[],
        pods=list(pods),
    )


def test_a_failed_pod_is_a_stuck_blocker_and_a_checked_one_is_progress() -> None:
    failed = readiness(pod("a-0", gate=FAILED), pod("a-1"))
    assert failed.ready_replicas == 0
    assert failed.blocker is not None
    assert failed.blocker.reason == "VerificationFailed"
    assert failed.blocker.message == (
        f"pod a-0 failed the behavioural check and takes no traffic: {FAILED[2]}"
    )
    checking = readiness(pod("a-0", gate=PASSED), pod("a-1"))
    assert checking.ready_replicas == 1
    assert checking.blocker is not None
    assert checking.blocker.reason == "Verifying"
    loading = readiness(pod("a-0", containers=False), pod("a-1"))
    assert loading.blocker is not None
    assert loading.blocker.reason == "LoadingModel"


def test_a_vllm_restarted_after_the_check_is_checked_again() -> None:
    checked = pod("a-0", gate=PASSED)
    checked["status"]["conditions"][-1]["lastTransitionTime"] = "2026-05-01T12:00:05Z"

    def started(at: str) -> dict[str, Any]:
        checked["status"]["containerStatuses"] = [{"name": "vllm", "state": {"running": {
            "startedAt": at}}}]  # fmt: skip
        return checked

    assert not restarted_since_check(started("2026-05-01T12:00:00Z"))  # the process checked
    assert restarted_since_check(started("2026-05-01T12:03:00Z"))  # a later one
    assert not restarted_since_check(pod("a-1", gate=FAILED))  # failed pods back off instead


def test_a_leader_worker_set_pod_belongs_to_its_group() -> None:
    """LWS labels a group's pods with their group index, not with the StatefulSet layout's
    replica label: a worker must follow its own group's leader (seen on the real LWS
    controller: with one shared key, a new leader's pending check took another group's worker
    out of its endpoints during a rollout)."""
    from nemotron_operator.status.verification import replica

    def pod(labels: dict[str, str]) -> dict[str, Any]:
        return {"metadata": {"labels": labels}}

    assert replica(pod({"leaderworkerset.sigs.k8s.io/group-index": "1"})) == "1"
    assert replica(pod({"serving.nemotron.io/replica": "0"})) == "0"
    assert replica(pod({})) is None
