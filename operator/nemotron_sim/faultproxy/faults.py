"""Fault injection: rules checked before a request touches any state.

A rule matches by HTTP method (``WATCH`` matches watch requests) and a regular expression
searched in the path with its query string, and then answers with a status, delays, resets the
connection, or, for a watch, cuts or stalls the stream after it started. ``count`` bounds how
often it fires; ``duration`` bounds for how long (an "API unavailable" window).
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class Fault:
    method: str | None = None  # GET, POST, PUT, PATCH, DELETE, WATCH; None: any
    path: str | None = None  # regex searched in "path?query"; None: any
    status: int | None = None  # answer with this code and a Status body
    count: int | None = 1  # how many requests it fires on; None: no limit
    delay: float = 0.0  # seconds to wait before answering (or before the status/reset)
    reset: bool = False  # close the connection without an answer
    retry_after: int | None = None  # Retry-After header with the status (429, 503)
    watch_drop_after: float | None = None  # a watch: cut the stream this many seconds in
    watch_stall: float | None = None  # a watch: send nothing (no bookmarks) for this long
    duration: float | None = None  # active for this many seconds from when it is added
    message: str = "fault injected by the simulated cluster's fault proxy"
    id: int = 0
    fired: int = 0
    added_at: float | None = None  # wall clock when it was added: an outage window starts here
    _until: float | None = field(default=None, repr=False)
    _regex: re.Pattern[str] | None = field(default=None, repr=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fault:
        allowed = {f.name for f in fields(cls) if not f.name.startswith("_")}
        allowed -= {"id", "fired", "added_at"}
        unknown = set(data) - allowed
        if unknown:
            raise ValueError(f"unknown fault fields: {sorted(unknown)}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if not k.startswith("_")}

    @property
    def watch_only(self) -> bool:
        return self.watch_drop_after is not None or self.watch_stall is not None

    def matches(self, method: str, target: str, *, watch: bool) -> bool:
        if self.method is not None:
            wanted = self.method.upper()
            if wanted != method and not (wanted == "WATCH" and watch):
                return False
        if self.watch_only and not watch:
            return False
        return self._regex is None or self._regex.search(target) is not None


@dataclass
class FaultInjector:
    """The active rules; ``add`` from Python or ``POST /_sim/faults`` over HTTP."""

    _faults: list[Fault] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    on_outage: Callable[[], None] | None = None  # the proxy cuts open watches

    def add(self, fault: Fault) -> Fault:
        fault.id = next(self._ids)
        fault.added_at = time.time()
        fault._regex = re.compile(fault.path) if fault.path else None
        if fault.duration is not None:
            fault._until = time.monotonic() + fault.duration
        self._faults.append(fault)
        outage = fault.duration is not None and fault.method is None and fault.path is None
        if outage and self.on_outage is not None and (fault.status or fault.reset):
            self.on_outage()
        return fault

    def unavailable(self, seconds: float, *, reset: bool = False) -> Fault:
        """Every request fails (503, or a reset connection) for ``seconds``; open watch
        streams are cut."""
        return self.add(
            Fault(
                status=None if reset else 503,
                reset=reset,
                count=None,
                duration=seconds,
                message="the API server is unavailable (an outage injected by the fault proxy)",
            )
        )

    def remove(self, fault_id: int) -> bool:
        before = len(self._faults)
        self._faults = [f for f in self._faults if f.id != fault_id]
        return len(self._faults) != before

    def clear(self) -> None:
        self._faults.clear()

    def active(self) -> list[Fault]:
        self._expire()
        return list(self._faults)

    def take(self, method: str, target: str, *, watch: bool) -> Fault | None:
        """The first matching rule, counted as fired; spent rules are dropped."""
        self._expire()
        for fault in self._faults:
            if fault.matches(method, target, watch=watch):
                fault.fired += 1
                if fault.count is not None and fault.fired >= fault.count:
                    self._faults.remove(fault)
                return fault
        return None

    def _expire(self) -> None:
        now = time.monotonic()
        self._faults = [f for f in self._faults if f._until is None or f._until > now]
