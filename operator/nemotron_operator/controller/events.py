"""Kubernetes Events on a NemotronDeployment when a condition changes (status or reason).

Messages come from the status computation, which never reads a Secret: at most a Secret's name
appears (``secret "hf-token" not found``), never a value.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from nemotron_operator.api import Condition
from nemotron_operator.kube import KubeClient
from nemotron_operator.kube.resources import EVENTS, NEMOTRON_DEPLOYMENTS

# A condition in this state is bad news: a Warning Event; anything else is Normal.
_WARNING = {
    ("Feasible", "False"),
    ("CapacityAvailable", "False"),
    ("Degraded", "True"),
    ("PlanAccurate", "False"),  # vLLM got materially less KV cache than planned
}
_COMPONENT = "nemotron-operator"


# Ready=False for these reasons is progress, not trouble: a Normal Event.
_PROGRESS = frozenset({"LoadingModel", "WaitingForPods", "RolloutInProgress", "NotPlanned"})


def event_type(condition: Condition) -> str:
    if (condition.type, condition.status) in _WARNING:
        return "Warning"
    if condition.type == "Ready" and condition.status == "False":
        return "Normal" if condition.reason in _PROGRESS else "Warning"
    return "Normal"


def event_body(
    involved: Mapping[str, Any], type_: str, reason: str, message: str, now: datetime
) -> dict[str, Any]:
    """An Event about a NemotronDeployment (``involved``: its metadata)."""
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{involved['name']}.{secrets.token_hex(8)}",
            "namespace": involved["namespace"],
        },
        "involvedObject": {
            "apiVersion": NEMOTRON_DEPLOYMENTS.api_version,
            "kind": NEMOTRON_DEPLOYMENTS.kind,
            "name": involved["name"],
            "namespace": involved["namespace"],
            "uid": involved.get("uid"),
            "resourceVersion": involved.get("resourceVersion"),
        },
        "type": type_,
        "reason": reason,
        "message": message[:1024],
        "source": {"component": _COMPONENT},
        "reportingComponent": _COMPONENT,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def build_event(owner: dict[str, Any], condition: Condition, now: datetime) -> dict[str, Any]:
    message = f"{condition.type}={condition.status}: {condition.message}"
    return event_body(owner["metadata"], event_type(condition), condition.reason, message, now)


def worth_an_event(before: Condition | None, after: Condition) -> bool:
    """Warnings, every change of Ready, and recoveries from a warning: not every condition's
    first value (a healthy create posts two Events, not five)."""
    if event_type(after) == "Warning" or after.type == "Ready":
        return True
    return before is not None and event_type(before) == "Warning"


async def post_events(
    kube: KubeClient,
    owner: dict[str, Any],
    before: list[Condition],
    changed: list[Condition],
    now: datetime,
) -> None:
    previous = {c.type: c for c in before}
    for condition in changed:
        if not worth_an_event(previous.get(condition.type), condition):
            continue
        event = build_event(owner, condition, now)
        await kube.create(EVENTS, owner["metadata"]["namespace"], event)
