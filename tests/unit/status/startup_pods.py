"""Serving pods at each start-up phase (scheduled, downloading, loading, ready), shared by the
start-up tests and the metrics tests."""

from __future__ import annotations

from typing import Any

from nemotron_operator.render import names as n

T0 = "2026-05-01T12:00:00Z"


def at(seconds: int) -> str:
    minutes, secs = divmod(seconds, 60)
    return f"2026-05-01T12:{minutes:02d}:{secs:02d}Z"


def serving_pod(name: str = "nano-0", uid: str = "u0", **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "uid": uid,
            "creationTimestamp": T0,
            "labels": {n.COMPONENT: n.COMPONENT_SERVING},
        },
        "spec": {},
        "status": {"phase": "Pending", "conditions": [], **status},
    }


def cond(type_: str, seconds: int, status: str = "True") -> dict[str, str]:
    return {"type": type_, "status": status, "lastTransitionTime": at(seconds)}


def downloading(name: str = "nano-0") -> dict[str, Any]:
    return serving_pod(
        name,
        conditions=[cond("PodScheduled", 2)],
        initContainerStatuses=[{"name": "download", "state": {"running": {"startedAt": at(3)}}}],
    )


def loading() -> dict[str, Any]:
    return serving_pod(
        phase="Running",
        conditions=[cond("PodScheduled", 2), cond("ContainersReady", 40, "False")],
        initContainerStatuses=[
            {
                "name": "download",
                "state": {"terminated": {"startedAt": at(3), "finishedAt": at(33)}},
            }
        ],
        containerStatuses=[
            {"name": "vllm", "ready": False, "state": {"running": {"startedAt": at(34)}}}
        ],
    )


def ready(name: str = "nano-0", uid: str = "u0", *, gate: bool = False) -> dict[str, Any]:
    pod = loading()
    pod["metadata"].update(name=name, uid=uid)
    pod["status"]["conditions"] = [
        cond("PodScheduled", 2),
        cond("ContainersReady", 94),
        cond("Ready", 100 if gate else 94),
    ]
    pod["status"]["containerStatuses"][0]["ready"] = True
    if gate:
        pod["spec"]["readinessGates"] = [{"conditionType": n.VERIFIED_CONDITION}]
    return pod
