"""The change log: every write's watch event, a bounded history for resuming watches, and the
subscribers (in-process controllers and HTTP watch streams) it is fanned out to."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from nemotron_sim.apiserver.patches import copy_obj
from nemotron_sim.kubeapi.resources import ResourceKey, WatchEvent

Bucket = tuple[str, str]


@dataclass
class _Subscriber:
    queue: asyncio.Queue[WatchEvent]
    buckets: frozenset[Bucket] | None
    copy: bool


class EventLog:
    def __init__(self, history_size: int) -> None:
        self._history: deque[WatchEvent] = deque(maxlen=history_size)
        self._compacted_rv = 0
        self._subscribers: list[_Subscriber] = []

    def subscribe(
        self, keys: Iterable[ResourceKey] | None = None, *, copy: bool = True
    ) -> asyncio.Queue[WatchEvent]:
        queue: asyncio.Queue[WatchEvent] = asyncio.Queue()
        buckets = None if keys is None else frozenset(k.bucket for k in keys)
        self._subscribers.append(_Subscriber(queue, buckets, copy))
        return queue

    def unsubscribe(self, queue: asyncio.Queue[WatchEvent]) -> None:
        self._subscribers = [s for s in self._subscribers if s.queue is not queue]

    def watchers_for(self, key: ResourceKey) -> int:
        return sum(1 for s in self._subscribers if s.buckets is None or key.bucket in s.buckets)

    def since(self, rv: int, key: ResourceKey) -> list[WatchEvent] | None:
        if rv < self._compacted_rv:
            return None
        # Newest last: walk back to the first event after rv, then forward.
        start = len(self._history)
        while start > 0 and self._history[start - 1].rv > rv:
            start -= 1
        return [
            self._history[i]
            for i in range(start, len(self._history))
            if self._history[i].key.bucket == key.bucket
        ]

    def emit(
        self,
        kind: str,
        key: ResourceKey,
        obj: dict[str, Any],
        rv: int,
        old: dict[str, Any] | None = None,
    ) -> None:
        event = WatchEvent(kind, key, obj, rv, old)
        if len(self._history) == self._history.maxlen:
            self._compacted_rv = self._history[0].rv
        self._history.append(event)
        for sub in self._subscribers:
            if sub.buckets is None or key.bucket in sub.buckets:
                out = event
                if sub.copy:
                    out = WatchEvent(kind, key, copy_obj(obj), rv, old and copy_obj(old))
                sub.queue.put_nowait(out)
