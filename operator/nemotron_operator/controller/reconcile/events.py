"""The status written when it changed, and which condition changes of a NemotronDeployment get a
Kubernetes Event, and of which type.

The Events are posted through ``kube.writes.post_event``. Messages come from the status
computation, which never reads a Secret: at most a Secret's name appears
(``secret "hf-token" not found``), never a value.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from nemotron_operator.api import Condition, NemotronDeploymentStatus
from nemotron_operator.controller.reconcile.outcome import Outcome
from nemotron_operator.controller.watch.deployment_store import DeploymentStore
from nemotron_operator.kube import KubeClient, writes
from nemotron_operator.kube.timestamps import format_time
from nemotron_operator.status import StatusInputs, compute_status, flipped

logger = logging.getLogger(__name__)

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
    """Warnings, Ready=True, the loss of Ready, and recoveries from a warning. Not a condition's
    first healthy value, and not a step of progress while the deployment was not Ready yet
    (WaitingForPods → LoadingModel → Verifying): those steps are in ``status.conditions``
    (reason, message, lastTransitionTime), and an Event each made the Events 3 of the 11
    writes a deployment cost until Ready (docs/benchmarks.md). A healthy create posts one
    Event, when it becomes Ready."""
    if event_type(after) == "Warning":
        return True
    if before is not None and event_type(before) == "Warning":
        return True  # a recovery
    if after.type == "Ready":
        return after.status == "True" or (before is not None and before.status == "True")
    return False


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


async def write_status(
    kube: KubeClient,
    deployments: DeploymentStore,
    raw: dict[str, Any],
    inputs: StatusInputs,
    *,
    previous: NemotronDeploymentStatus | None,
    outcome: Outcome,
) -> None:
    """Compute the status; patch it only when it differs from the stored one (its answer into
    the store), then post an Event per condition change that matters."""
    moment = datetime.now(UTC)
    status = compute_status(inputs, previous, now=format_time(moment))
    outcome.status = status
    new_wire = status.to_wire()
    old_wire = previous.to_wire() if previous is not None else {}
    if new_wire == old_wire:
        return
    changed = sorted(k for k in {*new_wire, *old_wire} if new_wire.get(k) != old_wire.get(k))
    metadata = raw["metadata"]
    logger.debug("%s/%s: status changes in %s", metadata["namespace"], metadata["name"], changed)
    deployments.written(await writes.patch_status(kube, raw, new_wire))
    outcome.status_written = True
    before = list(previous.conditions) if previous is not None else []
    await post_events(kube, metadata, before, flipped(before, status.conditions), moment)
