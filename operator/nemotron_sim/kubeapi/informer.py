"""List-then-watch caches of one resource, as client-go's informers keep them.

An :class:`Informer` lists (in pages), then watches from the list's resourceVersion with
bookmarks; every change updates its cache and is handed to its subscribers as a
:class:`WatchEvent`. A watch that ends is re-opened from the last resourceVersion seen; one
answered ``410 Gone`` (etcd compacted past it) or failing relists, and the relist turns the
difference into ADDED/MODIFIED/DELETED events, so a subscriber never misses a change.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import aiohttp

from nemotron_sim.kubeapi.client import ApiStatusError, KubeApi
from nemotron_sim.kubeapi.resources import ResourceKey, WatchEvent

log = logging.getLogger("nemotron_sim.kubeapi")
ObjectKey = tuple[str, str]  # (namespace or "", name)
_PAGE = 500
_WATCH_SECONDS = 300
_RETRY_SECONDS = 1.0


def object_key(obj: dict[str, Any]) -> ObjectKey:
    md = obj.get("metadata") or {}
    return (str(md.get("namespace") or ""), str(md.get("name") or ""))


class Informer:
    def __init__(
        self,
        api: KubeApi,
        key: ResourceKey,
        *,
        field_selector: str | None = None,
        label_selector: str | None = None,
    ) -> None:
        self.api, self.key = api, key
        self._params: dict[str, str] = {}
        if field_selector:
            self._params["fieldSelector"] = field_selector
        if label_selector:
            self._params["labelSelector"] = label_selector
        self.objects: dict[ObjectKey, dict[str, Any]] = {}
        self.synced = asyncio.Event()
        self.relists = 0  # lists after the first (410 Gone, errors)
        self._subscribers: list[Callable[[WatchEvent], None]] = []
        self._resource_version = ""

    def subscribe(self, callback: Callable[[WatchEvent], None]) -> None:
        """``callback`` is called, on the loop, with every event from now on (read-only)."""
        self._subscribers.append(callback)

    async def run(self) -> None:
        """List and watch until cancelled."""
        path = KubeApi.path(self.key)
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list(path)
                    need_list = False
                await self._watch(path)
            except ApiStatusError as error:
                if error.code == 410:
                    log.info("watch of %s expired (410 Gone): relisting", self.key)
                else:
                    log.warning("watch of %s failed: %s; relisting", self.key, error)
                    await asyncio.sleep(_RETRY_SECONDS)
                need_list = True
                self.relists += 1
            except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as error:
                # The server went away (a restart) or the stream broke: resume the watch from
                # the last resourceVersion; a 410 then turns it into a relist.
                log.info("watch of %s broke: %s; resuming", self.key, error or type(error))
                await asyncio.sleep(_RETRY_SECONDS)

    async def _list(self, path: str) -> None:
        found: dict[ObjectKey, dict[str, Any]] = {}
        params = {**self._params, "limit": str(_PAGE)}
        while True:
            page = await self.api.request("GET", path, params=params)
            kind = str(page.get("kind", "")).removesuffix("List")
            for item in page.get("items") or []:
                item.setdefault("apiVersion", self.key.api_version)
                item.setdefault("kind", kind)
                found[object_key(item)] = item
            metadata = page.get("metadata") or {}
            if not metadata.get("continue"):
                self._resource_version = str(metadata.get("resourceVersion", ""))
                break
            params = {**params, "continue": metadata["continue"]}
        old = self.objects
        self.objects = found
        for name, obj in found.items():
            before = old.get(name)
            if before is None:
                self._emit(WatchEvent("ADDED", self.key, obj))
            elif _version(before) != _version(obj):
                self._emit(WatchEvent("MODIFIED", self.key, obj, old=before))
        for name, obj in old.items():
            if name not in found:
                self._emit(WatchEvent("DELETED", self.key, obj))
        self.synced.set()

    async def _watch(self, path: str) -> None:
        params = {
            **self._params,
            "resourceVersion": self._resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(_WATCH_SECONDS),
        }
        async for event in self.api.watch(path, params):
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                raise ApiStatusError(
                    int(obj.get("code", 500)), str(obj.get("reason", "")), str(obj.get("message"))
                )
            self._resource_version = _version(obj) or self._resource_version
            if kind == "BOOKMARK":
                continue
            name = object_key(obj)
            if kind == "DELETED":
                self.objects.pop(name, None)
                self._emit(WatchEvent("DELETED", self.key, obj))
            else:
                before = self.objects.get(name)
                self.objects[name] = obj
                self._emit(WatchEvent(str(kind), self.key, obj, old=before))

    def _emit(self, event: WatchEvent) -> None:
        for callback in self._subscribers:
            try:
                callback(event)
            except Exception:
                log.exception("a subscriber of %s failed on %s", self.key, event.type)


def _version(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))


async def stop_all(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
