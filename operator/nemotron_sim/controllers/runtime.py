"""Plumbing shared by the simulated controllers: work queues, the clock, an event recorder.

Controllers are level-based like real ones: a watch event only names *what* to look at (a work
key); the handler then reads the current objects from the store and decides. Keys queued again
before they are handled are handled once.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Hashable, Mapping
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from nemotron_sim.apiserver.errors import ApiError
from nemotron_sim.apiserver.store import Store
from nemotron_sim.controllers.kinds import EVENTS
from nemotron_sim.kubeapi.resources import ResourceKey
from nemotron_sim.kubeapi.store import ObjectStore

log = logging.getLogger("nemotron_sim")
K = TypeVar("K", bound=Hashable)
# Yield to the event loop after this many handled keys, so API requests are served in between.
_BATCH = 50
# Events remembered for de-duplication (client-go's event correlator keeps an LRU of 4096).
_REMEMBERED_EVENTS = 4096


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class WorkQueue(Generic[K]):
    """A de-duplicating queue of keys drained by one worker task."""

    def __init__(self, name: str, handler: Callable[[K], Awaitable[None] | None]) -> None:
        self.name = name
        self._handler = handler
        self._pending: dict[K, None] = {}
        self._wake = asyncio.Event()
        self.handled = 0

    def add(self, key: K) -> None:
        self._pending[key] = None
        self._wake.set()

    def __len__(self) -> int:
        return len(self._pending)

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                key = next(iter(self._pending))
                del self._pending[key]
                await self._handle(key)
                self.handled += 1
                if self.handled % _BATCH == 0:
                    await asyncio.sleep(0)

    async def _handle(self, key: K) -> None:
        try:
            result = self._handler(key)
            if result is not None:
                await result
        except ApiError as error:
            # Another writer won a race (409) or the object went away (404): look again later
            # only if something changes, as a real controller's next watch event would.
            log.debug("%s: %s: %s", self.name, key, error)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: handling %s failed", self.name, key)


def create_if_absent(store: Store, key: ResourceKey, obj: dict[str, Any]) -> bool:
    """Create ``obj``; False when it already exists (another pass or writer was first)."""
    try:
        store.create(key, obj, copy=False)
    except ApiError as error:
        if error.code == 409:
            return False
        raise
    return True


def involved(obj: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    md = obj.get("metadata", {})
    ref = {"apiVersion": api_version, "kind": kind, "name": md.get("name", "")}
    if md.get("namespace"):
        ref["namespace"] = md["namespace"]
    if md.get("uid"):
        ref["uid"] = md["uid"]
    return ref


class EventRecorder:
    """Writes core/v1 Events; a repeat of the same reason and message bumps ``count`` (kept
    here, as client-go's event correlator keeps it, so no Event is read back)."""

    def __init__(self, store: ObjectStore, *, enabled: bool = True) -> None:
        self._store = store
        self._enabled = enabled
        self._seen: dict[tuple[str, str, str], tuple[str, int]] = {}

    def record(
        self,
        component: str,
        involved_object: dict[str, Any],
        reason: str,
        message: str,
        *,
        warning: bool = False,
    ) -> None:
        if not self._enabled:
            return
        namespace = involved_object.get("namespace", "default")
        fingerprint = (involved_object.get("uid", involved_object["name"]), reason, message)
        now = now_rfc3339()
        existing = self._seen.get(fingerprint)
        if existing is not None:
            name, count = existing
            patch = {"count": count + 1, "lastTimestamp": now}
            try:
                self._store.merge_patch(EVENTS, namespace, name, patch, copy=False)
            except ApiError as error:
                if error.code != 404:
                    raise
            else:
                self._seen[fingerprint] = (name, count + 1)
                return
        name = f"{involved_object['name']}.{secrets.token_hex(8)}"
        self._seen[fingerprint] = (name, 1)
        if len(self._seen) > _REMEMBERED_EVENTS:
            del self._seen[next(iter(self._seen))]  # forget the oldest, as the real cache does
        self._store.create(
            EVENTS,
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": involved_object,
                "reason": reason,
                "message": message,
                "type": "Warning" if warning else "Normal",
                "count": 1,
                "firstTimestamp": now,
                "lastTimestamp": now,
                "source": {"component": component},
                "reportingComponent": component,
                "reportingInstance": "nemotron-operator-sim",
            },
        )
