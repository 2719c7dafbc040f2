"""Conditions in Kubernetes convention: keyed by type, ``lastTransitionTime`` moves only when the
condition's status flips. Pure (time is passed in)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import get_args

from nemotron_operator.api import Condition
from nemotron_operator.api.status import ConditionType

# The order conditions are listed in status (new types go at the end): the API's own list.
ORDER: tuple[str, ...] = get_args(ConditionType)


def transition(
    previous: Sequence[Condition],
    type_: str,
    status: str,
    reason: str,
    message: str,
    *,
    generation: int | None,
    now: str,
) -> Condition:
    """The new condition; it keeps the previous ``lastTransitionTime`` unless status changed."""
    before = next((c for c in previous if c.type == type_), None)
    since = before.last_transition_time if before is not None and before.status == status else now
    return Condition.model_validate(
        {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message[:32768],
            "lastTransitionTime": since,
            "observedGeneration": generation,
        }
    )


def ordered(conditions: Sequence[Condition]) -> list[Condition]:
    def key(condition: Condition) -> tuple[int, str]:
        kind = str(condition.type)
        return (ORDER.index(kind) if kind in ORDER else len(ORDER), kind)

    return sorted(conditions, key=key)


def flipped(before: Sequence[Condition], after: Sequence[Condition]) -> list[Condition]:
    """Conditions whose status or reason changed (what deserves an Event)."""
    old = {c.type: (c.status, c.reason) for c in before}
    return [c for c in after if old.get(c.type) != (c.status, c.reason)]
