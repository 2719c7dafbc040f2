"""Writes to kube-apiserver from code that cannot wait for them (a kubelet's status updates).

Each write is queued per object and sent in order by a few workers; consecutive merge patches
of one object (and subresource) waiting in the queue are combined into one, so a burst of
status changes costs one request, as the kubelet's status manager sends only the latest status.
A write to an object that is gone (404) is dropped; a refused connection (the API server
restarting) is retried with back-off for up to a minute.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass
from typing import Any

from nemotron_operator.kube.errors import ApiError
from nemotron_operator.kube.transport import JSON, MERGE, Transport
from nemotron_sim.kubeapi.resources import ResourceKey

log = logging.getLogger("nemotron_sim.kubeapi")
_WORKERS = 8
_RETRY_SECONDS = 60.0
_BACKOFF = (0.1, 0.2, 0.5, 1.0, 2.0)


@dataclass
class Write:
    method: str  # POST, PATCH (merge patch) or DELETE
    key: ResourceKey
    namespace: str | None
    name: str
    body: dict[str, Any] | None = None
    subresource: str | None = None

    def path(self) -> str:
        name = None if self.method == "POST" else self.name
        return self.key.path(self.namespace, name, self.subresource)


def merge_patches(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """One JSON merge patch with the effect of ``first`` then ``second`` (RFC 7386)."""
    out = dict(first)
    for key, value in second.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_patches(out[key], value)
        else:
            out[key] = value
    return out


class WriteQueue:
    def __init__(self, api: Transport) -> None:
        self.api = api
        self._pending: dict[tuple[ResourceKey, str, str], deque[Write]] = {}
        self._ready: asyncio.Queue[tuple[ResourceKey, str, str]] = asyncio.Queue()
        self._busy: set[tuple[ResourceKey, str, str]] = set()
        self._workers: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._workers = [
            asyncio.create_task(self._work(), name=f"sim-writes-{i}") for i in range(_WORKERS)
        ]

    async def stop(self) -> None:
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []

    def submit(self, write: Write) -> None:
        target = (write.key, write.namespace or "", write.name)
        queue = self._pending.setdefault(target, deque())
        last = queue[-1] if queue else None
        if (
            last is not None
            and write.method == last.method == "PATCH"
            and write.subresource == last.subresource
            and last.body is not None
            and write.body is not None
        ):
            last.body = merge_patches(last.body, write.body)
        else:
            queue.append(write)
        if target not in self._busy and len(queue) == 1 and last is None:
            self._ready.put_nowait(target)

    async def _work(self) -> None:
        while True:
            target = await self._ready.get()
            self._busy.add(target)
            try:
                queue = self._pending.get(target)
                while queue:
                    write = queue.popleft()
                    await self._send(write)
                self._pending.pop(target, None)
            finally:
                self._busy.discard(target)

    async def _send(self, write: Write) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _RETRY_SECONDS
        attempt = 0
        content_type = MERGE if write.method == "PATCH" else JSON
        while True:
            try:
                await self.api.request(
                    write.method, write.path(), body=write.body, content_type=content_type
                )
                return
            except ApiError as error:
                if error.status == 404 or (error.status == 409 and write.method == "POST"):
                    return  # gone, or already there: nothing left to do
                # Not reached (the API server restarting) or struggling: again until the deadline.
                if error.status not in (0, 429, 500, 503, 504) or loop.time() >= deadline:
                    log.warning("%s %s failed: %s", write.method, write.path(), error)
                    return
            await asyncio.sleep(_BACKOFF[min(attempt, len(_BACKOFF) - 1)])
            attempt += 1
