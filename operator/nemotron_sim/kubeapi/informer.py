"""The simulated nodes' list-then-watch caches of one resource each.

The loop (list in pages, watch from the list's version with bookmarks, re-open, relist on 410 or
repeated failures) is the operator's :class:`~nemotron_operator.kube.listwatch.ListWatch`, the one
informer loop of the repository; what differs is what is kept: whole objects, read-only for the
kubelet, and every change handed to subscribers as a :class:`WatchEvent`. A relist turns the
difference into ADDED/MODIFIED/DELETED events, so a subscriber never misses a change. Failures
are retried every second (an API server restarting must not leave a kubelet behind) and a 404 is
retried too.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from nemotron_operator.kube.listwatch import WATCH_SECONDS, ListWatch
from nemotron_operator.kube.transport import Transport
from nemotron_sim.kubeapi.resources import ResourceKey, WatchEvent

log = logging.getLogger("nemotron_sim.kubeapi")
ObjectKey = tuple[str, str]  # (namespace or "", name)
_RETRY_SECONDS = (1.0,)


def object_key(obj: dict[str, Any]) -> ObjectKey:
    md = obj.get("metadata") or {}
    return (str(md.get("namespace") or ""), str(md.get("name") or ""))


class Informer(ListWatch):
    def __init__(self, api: Transport, key: ResourceKey) -> None:
        super().__init__(str(key), backoffs=_RETRY_SECONDS, stop_when_not_served=False)
        self.api, self.key = api, key
        self.objects: dict[ObjectKey, dict[str, Any]] = {}
        self._subscribers: list[Callable[[WatchEvent], None]] = []

    def subscribe(self, callback: Callable[[WatchEvent], None]) -> None:
        """``callback`` is called, on the loop, with every event from now on (read-only)."""
        self._subscribers.append(callback)

    async def list_objects(self) -> tuple[list[dict[str, Any]], str]:
        items, version, kind = await self.api.list_pages(self.key.path())
        for item in items:
            item.setdefault("apiVersion", self.key.api_version)
            item.setdefault("kind", kind)
        return items, version

    def watch_events(self, version: str) -> AsyncIterator[dict[str, Any]]:
        params = {"resourceVersion": version, "allowWatchBookmarks": "true"}
        return self.api.watch(self.key.path(), params, timeout_seconds=WATCH_SECONDS)

    def take_list(self, items: list[dict[str, Any]]) -> None:
        found = {object_key(item): item for item in items}
        old = self.objects
        self.objects = found
        for name, obj in found.items():
            before = old.get(name)
            if before is None:
                self._emit(WatchEvent("ADDED", self.key, obj))
            elif _version(before) != _version(obj):
                self._emit(WatchEvent("MODIFIED", self.key, obj))
        for name, obj in old.items():
            if name not in found:
                self._emit(WatchEvent("DELETED", self.key, obj))

    def take_event(self, kind: str, obj: dict[str, Any]) -> None:
        name = object_key(obj)
        if kind == "DELETED":
            self.objects.pop(name, None)
            self._emit(WatchEvent("DELETED", self.key, obj))
        else:
            self.objects[name] = obj
            self._emit(WatchEvent(kind, self.key, obj))

    def _emit(self, event: WatchEvent) -> None:
        for callback in self._subscribers:
            try:
                callback(event)
            except Exception:
                log.exception("a subscriber of %s failed on %s", self.key, event.type)


def _version(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))
