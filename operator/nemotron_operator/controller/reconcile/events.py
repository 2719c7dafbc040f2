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
from nemotron_operator.controller.reconcile.event_types import (
    event_message,
    event_type,
    worth_an_event,
)
from nemotron_operator.controller.reconcile.outcome import Outcome
from nemotron_operator.controller.reconcile.progress_hold import ProgressHold
from nemotron_operator.controller.watch.deployment_store import DeploymentStore
from nemotron_operator.kube import KubeClient, writes
from nemotron_operator.kube.timestamps import format_time
from nemotron_operator.status import StatusInputs, compute_status, flipped

logger = logging.getLogger(__name__)


async def post_events(
    kube: KubeClient,
    involved: Mapping[str, Any],
    before: list[Condition],
    changed: list[Condition],
    now: datetime,
    *,
    first_ready: bool = False,
) -> None:
    """An Event for each changed condition worth one (``involved``: the object's metadata;
    ``first_ready``: no serving pod of it had been Ready before)."""
    previous = {c.type: c for c in before}
    for condition in changed:
        if not worth_an_event(previous.get(condition.type), condition, first_ready=first_ready):
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
    hold: ProgressHold,
) -> None:
    """Compute the status; patch it only when it differs from the stored one (its answer into
    the store) and is not a step of progress that may still wait (``progress_hold.py``: then
    the reconcile is re-queued for when it may not), then post an Event per condition change
    that matters."""
    moment = datetime.now(UTC)
    status = compute_status(inputs, previous, now=format_time(moment))
    outcome.status = status
    new_wire = status.to_wire()
    old_wire = previous.to_wire() if previous is not None else {}
    key = (raw["metadata"]["namespace"], raw["metadata"]["name"])
    if new_wire == old_wire:
        hold.settled(key)
        return
    wait = hold.wait(key, previous, status)
    if wait is not None:
        outcome.retry_after = (
            wait if outcome.retry_after is None else min(outcome.retry_after, wait)
        )
        return
    changed = sorted(k for k in {*new_wire, *old_wire} if new_wire.get(k) != old_wire.get(k))
    metadata = raw["metadata"]
    logger.debug("%s/%s: status changes in %s", metadata["namespace"], metadata["name"], changed)
    deployments.written(await writes.patch_status(kube, raw, new_wire))
    outcome.status_written = True
    before = list(previous.conditions) if previous is not None else []
    # No serving pod had been Ready before: the first Ready is in status, not an Event.
    first = previous is None or previous.startup is None or previous.startup.last_observed is None
    await post_events(
        kube, metadata, before, flipped(before, status.conditions), moment, first_ready=first
    )
