"""decide/ranks.py: on the StatefulSet layout, a worker that died after its leader started takes
the leader down (and only that replica's)."""

from __future__ import annotations

from typing import Any

from nemotron_operator.controller.decide.ranks import leaders_to_restart

STARTED = "2026-01-01T10:00:00Z"


def pod(
    name: str, role: str, replica: str | None, *, died: str = "", started: str = STARTED
) -> dict[str, Any]:
    labels = {"serving.nemotron.io/role": role}
    if replica is not None:
        labels["serving.nemotron.io/replica"] = replica
    status: dict[str, Any] = {"name": "vllm", "state": {"running": {"startedAt": started}}}
    status["lastState"] = {"terminated": {"finishedAt": died}} if died else {}
    return {"metadata": {"name": name, "labels": labels}, "status": {"containerStatuses": [status]}}


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in leaders_to_restart(pods)]


def test_a_worker_that_died_after_its_leader_started_restarts_that_leader_only() -> None:
    pods = [
        pod("s-0-0", "leader", "0"),
        pod("s-0-w-1", "worker", "0"),
        pod("s-1-0", "leader", "1"),
        pod("s-1-w-1", "worker", "1", died="2026-01-01T10:05:00Z"),
    ]
    assert names(pods) == ["s-1-0"]


def test_a_death_before_the_leader_started_is_already_handled() -> None:
    # The leader started again after the worker died (the operator restarted it, or both
    # started late): nothing to do, no restart loop.
    pods = [
        pod("s-0-0", "leader", "0", started="2026-01-01T10:06:00Z"),
        pod("s-0-w-1", "worker", "0", died="2026-01-01T10:05:00Z"),
    ]
    assert names(pods) == []


def test_a_leader_not_running_yet_and_lws_pods_are_left_alone() -> None:
    waiting = pod("s-0-0", "leader", "0")
    waiting["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "PodInitializing"}}
    died = "2026-01-01T10:05:00Z"
    assert names([waiting, pod("s-0-w-1", "worker", "0", died=died)]) == []
    # A LeaderWorkerSet's pods carry no replica label: LWS recreates its groups itself.
    assert names([pod("l-0", "leader", None), pod("l-0-1", "worker", None, died=died)]) == []
