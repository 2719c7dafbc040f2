"""Kubernetes' two timestamp formats, written and read in one place.

``Time`` (conditions, Events, creation times): RFC 3339 in UTC to the second,
``2026-05-01T12:00:00Z``. ``MicroTime`` (a Lease's ``renewTime`` and ``acquireTime``): the same
with microseconds, ``2026-05-01T12:00:00.123456Z``. Pure: the moment is passed in.
"""

from __future__ import annotations

from datetime import UTC, datetime

_TIME = "%Y-%m-%dT%H:%M:%SZ"
_MICRO_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"


def format_time(moment: datetime) -> str:
    """``moment`` as a ``Time`` (a naive moment is taken to be UTC)."""
    return _utc(moment).strftime(_TIME)


def format_micro_time(moment: datetime) -> str:
    """``moment`` as a ``MicroTime`` (a naive moment is taken to be UTC)."""
    return _utc(moment).strftime(_MICRO_TIME)


def parse_time(value: str | None) -> datetime | None:
    """A ``Time`` or ``MicroTime`` (or any RFC 3339 time) as an aware datetime; None when absent
    or unreadable."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return _utc(parsed)


def seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds from one timestamp to another (never negative); None when either is missing."""
    a, b = parse_time(start), parse_time(end)
    if a is None or b is None:
        return None
    return max(0.0, (b - a).total_seconds())


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
