"""API errors and what the controller should do about each (DESIGN §2: the error mapping).

404 → the object is gone (callers treat it as absent); 409 → somebody wrote first: re-read and
retry soon; 422/400 → the request itself is wrong, retrying the same request cannot help until
the input changes: retry slowly; 429 → retry no sooner than ``Retry-After``; 5xx and network
errors → retry with back-off. The controller never sleeps: it re-queues the object with the
delay (``retry_delay``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Action(Enum):
    GONE = "gone"
    RETRY_SOON = "retry-soon"  # 409: re-read, recompute, write again
    RETRY_LATER = "retry-later"  # 429, 5xx, network: the server is struggling
    REPORT = "report"  # 400, 403, 422: our request is wrong for this server; say so in status


@dataclass
class ApiError(Exception):
    """A failed API request; ``status`` 0 means the server was not reached."""

    status: int
    reason: str
    message: str
    method: str = ""
    url: str = ""
    retry_after: float | None = None

    def __str__(self) -> str:
        where = f"{self.method} {self.url}: " if self.method else ""
        return f"{where}{self.status} {self.reason}: {self.message}"

    @property
    def action(self) -> Action:
        if self.status == 404:
            return Action.GONE
        if self.status == 409:
            return Action.RETRY_SOON
        if self.status in (0, 429) or self.status >= 500:
            return Action.RETRY_LATER
        return Action.REPORT


def retry_delay(error: ApiError, attempt: int, *, base: float, cap: float) -> float:
    """Seconds before the next attempt: ``Retry-After`` when the server sent one (never sooner),
    else an exponential back-off from ``base`` capped at ``cap``."""
    backoff = float(min(cap, base * (2 ** max(0, attempt - 1))))
    if error.action is Action.RETRY_SOON:
        backoff = min(backoff, base)
    if error.retry_after is not None:
        return max(error.retry_after, backoff if error.status != 429 else 0.0)
    return backoff


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: rare from kube-apiserver; fall back to the back-off
