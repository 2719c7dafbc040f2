"""Which condition changes of a NemotronDeployment get a Kubernetes Event, and of which type.

The Events are posted through ``kube.writes.post_event``. Messages come from the status
computation, which never reads a Secret: at most a Secret's name appears
(``secret "hf-token" not found``), never a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from nemotron_operator.api import Condition
from nemotron_operator.kube import KubeClient, writes

# A condition in this state is bad news: a Warning Event; anything else is Normal.
_WARNING = {
    ("Feasible", "False"),
    ("CapacityAvailable", "False"),
    ("Degraded", "True"),
    ("PlanAccurate", "False"),  # vLLM got materially less KV cache than planned
    ("Verified", "False"),  # a serving pod failed the behavioural check: it takes no traffic
    ("Autoscaling", "False"),  # autoscaling.provider KEDA without KEDA: nothing scales it
}

# Ready=False for these reasons is progress, not trouble: a Normal Event.
_PROGRESS = frozenset(
    {
        "LoadingModel",
        "DownloadingWeights",  # a shared cache's download Job runs (status/download.py)
        "Verifying",
        "WaitingForPods",
        "RolloutInProgress",
        "NotPlanned",
        "ScaledToZero",  # scale to zero (autoscaling.minReplicas 0): idle, by design
    }
)


def event_type(condition: Condition) -> str:
    if (condition.type, condition.status) in _WARNING:
        return "Warning"
    if condition.type == "Ready" and condition.status == "False":
        return "Normal" if condition.reason in _PROGRESS else "Warning"
    return "Normal"


def worth_an_event(before: Condition | None, after: Condition) -> bool:
    """Warnings, every change of Ready, and recoveries from a warning: not every condition's
    first value (a healthy create posts two Events, not five)."""
    if event_type(after) == "Warning" or after.type == "Ready":
        return True
    return before is not None and event_type(before) == "Warning"


def event_message(condition: Condition) -> str:
    return f"{condition.type}={condition.status}: {condition.message}"


async def post_events(
    kube: KubeClient,
    involved: Mapping[str, Any],
    before: list[Condition],
    changed: list[Condition],
    now: datetime,
) -> None:
    """An Event for each changed condition worth one (``involved``: the object's metadata)."""
    previous = {c.type: c for c in before}
    for condition in changed:
        if not worth_an_event(previous.get(condition.type), condition):
            continue
        await writes.post_event(
            kube,
            involved,
            type_=event_type(condition),
            reason=condition.reason,
            message=event_message(condition),
            now=now,
        )
