"""``ListWatch``: the loop of an informer, as client-go's reflector runs it; what it keeps is a
subclass's.

It lists once, then follows a watch from the list's ``resourceVersion`` (with bookmarks, so a
quiet stream stays current); a stream the server ends is re-opened from the last version seen,
and a version the server no longer has (410 Expired), an unreadable event or repeated failures
make it list again. Until the first list has arrived it is not ``synced`` and readers must not
use it (they would take every object for missing). Failures are counted and backed off, never
raised. The operator's informer (``kube/informer.py``: compact JSON, a label index) is one
subclass; the simulated cluster's caches (whole objects, events with the object before the
change) are the other.
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from nemotron_operator.kube.errors import ApiError

logger = logging.getLogger(__name__)
DEFAULT_BACKOFFS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
WATCH_SECONDS = 300  # the server ends each stream after this; it is re-opened at once


class ListWatch(ABC):
    def __init__(
        self,
        name: str,
        *,
        on_restart: Callable[[str], None] | None = None,
        on_open: Callable[[str], None] | None = None,
        backoffs: Sequence[float] = DEFAULT_BACKOFFS,
        stop_when_not_served: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``name``: what the logs call it (the plural). ``stop_when_not_served``: a 404 (the
        kind's CRD is gone) ends the loop; else it is retried as any failure."""
        self.name = name
        self.on_restart = on_restart  # called with the name each time a stream is re-opened
        self.on_open = on_open  # called with the name when the first stream opens
        self.backoffs = tuple(backoffs) or DEFAULT_BACKOFFS
        self.stop_when_not_served = stop_when_not_served
        self._clock = clock
        self.synced = asyncio.Event()
        self.version = ""  # the last resourceVersion seen (list, event or bookmark)
        self.lists = 0
        self.streams = 0
        self.failures = 0  # consecutive failed requests; 0 while it works
        self.failing_since: float | None = None
        self.last_error: str | None = None
        # The last failure was 403: a permission this client lacks (RBAC revoked). A restart
        # cannot mend that; the log names the permission.
        self.forbidden = False
        self.not_served = False  # the server answered 404: the loop has ended

    # -- what a subclass provides ------------------------------------------------------------
    @abstractmethod
    async def list_objects(self) -> tuple[list[dict[str, Any]], str]:
        """Every object (with apiVersion and kind) and the list's ``resourceVersion``."""
        ...

    @abstractmethod
    def watch_events(self, version: str) -> AsyncIterator[dict[str, Any]]:
        """The events of one watch from ``version``, with bookmarks, for ``WATCH_SECONDS``."""
        ...

    @abstractmethod
    def take_list(self, items: list[dict[str, Any]]) -> None:
        """Replace what is kept by a list's ``items`` (before ``synced`` is set the first time)."""
        ...

    @abstractmethod
    def take_event(self, kind: str, obj: dict[str, Any]) -> None:
        """Keep what an ``ADDED``, ``MODIFIED`` or ``DELETED`` event says."""
        ...

    def report_forbidden(self, error: ApiError) -> None:
        """Said once when a 403 starts a run of failures."""
        logger.error("%s: permission missing: %s; retried meanwhile", self.name, error.message)

    # -- the loop --------------------------------------------------------------------------
    async def run(self) -> None:
        """List, then watch, until cancelled (or, with ``stop_when_not_served``, until a 404)."""
        relist = True
        while True:
            try:
                if relist:
                    await self._list()
                    relist = False
                relist = await self._watch()
                self._ok()
            except ApiError as exc:
                if exc.status == 404 and self.stop_when_not_served:
                    logger.info("%s: not served any more; not followed", self.name)
                    self.not_served = True
                    return
                relist = relist or self.failures >= 2
                if exc.status == 403 and not self.forbidden:
                    self.report_forbidden(exc)
                self.forbidden = exc.status == 403
                await self._failed(str(exc))
            except ValueError as exc:  # a line that is not JSON: start over from a list
                relist = True
                await self._failed(f"unreadable watch event: {exc}")

    async def _list(self) -> None:
        items, version = await self.list_objects()
        self.lists += 1
        self.take_list(items)
        self.version = version
        self._ok()
        self.synced.set()

    async def _watch(self) -> bool:
        """Follow one stream to its end; True when the caller must list again."""
        self.streams += 1
        if self.streams > 1 and self.on_restart is not None:
            self.on_restart(self.name)
        if self.streams == 1 and self.on_open is not None:
            self.on_open(self.name)
        async for event in self.watch_events(self.version):
            kind, obj = str(event.get("type")), event.get("object") or {}
            if kind == "ERROR":
                code, message = obj.get("code"), obj.get("message")
                logger.info("%s: watch error %s: %s", self.name, code, message)
                return True  # 410 Expired, or anything else the server could not serve
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if version:
                self.version = str(version)
            if kind == "BOOKMARK":
                continue
            self.take_event(kind, obj)
            self._ok()
        return False

    def _ok(self) -> None:
        if self.forbidden:
            logger.info("%s: permitted again; watching", self.name)
        self.failures, self.failing_since, self.last_error = 0, None, None
        self.forbidden = False

    async def _failed(self, error: str) -> None:
        if self.failing_since is None:
            self.failing_since = self._clock()
        self.failures += 1
        self.last_error = error
        delay = self.backoffs[min(self.failures, len(self.backoffs)) - 1]
        logger.warning(
            "%s: list/watch failed (%d in a row): %s; again in %.1f s",
            self.name,
            self.failures,
            error,
            delay,
        )
        await asyncio.sleep(delay)

    def failing_for(self) -> float:
        """Seconds since the first of the current run of failures (0 while it works)."""
        return 0.0 if self.failing_since is None else self._clock() - self.failing_since
