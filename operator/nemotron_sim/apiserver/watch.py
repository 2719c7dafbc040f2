"""Watch streams: ``application/json`` lines of ``{"type", "object"}``, as kube-apiserver sends.

Honours ``resourceVersion`` (replay from the store's bounded history, or an ERROR event with a
410 ``Expired`` status when that history no longer reaches back), ``labelSelector`` and
``fieldSelector`` (an object that stops matching is sent as DELETED, one that starts matching as
ADDED), ``timeoutSeconds``, ``allowWatchBookmarks``, ``sendInitialEvents`` and Table output.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from nemotron_sim.apiserver import tables
from nemotron_sim.apiserver.errors import ApiError, bad_request
from nemotron_sim.apiserver.faults import Fault
from nemotron_sim.apiserver.objects import meta
from nemotron_sim.apiserver.resources import ResourceInfo
from nemotron_sim.apiserver.selectors import parse_field_selector, parse_label_selector
from nemotron_sim.apiserver.store import Store
from nemotron_sim.kubeapi.resources import WatchEvent

log = logging.getLogger(__name__)
_STOP = "_STOP"
_BATCH = 500  # events written per chunk when a watcher is behind
_ENCODED_KEPT = 4096  # recent event lines kept for the other watchers of the same object


class _EncodedLines:
    """Each event line encoded once for every watcher that sends it, as kube-apiserver's watch
    cache serializes an event once for all its watchers. Stored objects are never changed in
    place (a write stores a new dict), so an object's identity names its content; the cache holds
    the object itself, so an identity cannot be reused while its line is kept."""

    def __init__(self) -> None:
        self._lines: dict[tuple[int, str, str], tuple[dict[str, Any], bytes]] = {}

    def line(self, kind: str, obj: dict[str, Any], api_version: str) -> bytes:
        key = (id(obj), kind, api_version)
        kept = self._lines.get(key)
        if kept is not None:  # the same object (held by the entry, so its id is not reused)
            return kept[1]
        body = obj if obj.get("apiVersion") == api_version else {**obj, "apiVersion": api_version}
        line = json.dumps({"type": kind, "object": body}, separators=(",", ":")).encode() + b"\n"
        if len(self._lines) >= _ENCODED_KEPT:
            del self._lines[next(iter(self._lines))]
        self._lines[key] = (obj, line)
        return line


@dataclass(eq=False)
class _Stream:
    queue: asyncio.Queue[WatchEvent]
    info: ResourceInfo
    aborted: bool = False


@dataclass
class Watches:
    store: Store
    bookmark_interval: float = 10.0
    _streams: set[_Stream] = field(default_factory=set)
    _encoded: _EncodedLines = field(default_factory=_EncodedLines)

    @property
    def open_streams(self) -> int:
        return len(self._streams)

    def stop_all(self, *, abort: bool) -> None:
        """End every open stream: cleanly (server shutdown) or by cutting it (an outage)."""
        for stream in list(self._streams):
            stream.aborted = stream.aborted or abort
            stream.queue.put_nowait(WatchEvent(_STOP, stream.info.key, {}))

    async def serve(
        self,
        request: web.Request,
        info: ResourceInfo,
        namespace: str | None,
        fault: Fault | None,
        as_table: bool,
    ) -> web.StreamResponse:
        query = request.query
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"))
        namespace = namespace if info.namespaced else None

        def selected(obj: dict[str, Any]) -> bool:
            if namespace is not None and meta(obj).get("namespace") != namespace:
                return False
            return (labels is None or labels(obj)) and (fields is None or fields(obj))

        timeout = _float(query.get("timeoutSeconds"), "timeoutSeconds")
        initial = query.get("sendInitialEvents") == "true"
        rv = query.get("resourceVersion") or ""
        queue = self.store.subscribe([info.key], copy=False)
        stream = _Stream(queue, info)
        self._streams.add(stream)
        try:
            backlog = self._backlog(info, rv, initial, selected)
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            await response.prepare(request)
            writer = _Writer(response, info, as_table, self._encoded)
            if backlog is None:
                await writer.error(_expired(rv))
                return response
            await writer.events(backlog)
            if initial:
                await writer.bookmark(self.store.resource_version, initial_end=True)
            await self._follow(
                request, stream, writer, selected=selected, timeout_seconds=timeout, fault=fault
            )
            return response
        except ConnectionResetError:  # the client went away mid-write: the watch just ends
            return response
        finally:
            self._streams.discard(stream)
            self.store.unsubscribe(queue)

    def _backlog(
        self, info: ResourceInfo, rv: str, initial: bool, selected: Callable[[Any], bool]
    ) -> list[tuple[str, dict[str, Any]]] | None:
        if rv in ("", "0") or initial:
            return [("ADDED", o) for o in self.store.scan(info.key) if selected(o)]
        try:
            since = int(rv)
        except ValueError:
            raise bad_request(f"invalid resourceVersion {rv!r}") from None
        events = self.store.events_since(since, info.key)
        if events is None:
            return None
        return [out for e in events if (out := _translate(e, selected)) is not None]

    async def _follow(
        self,
        request: web.Request,
        stream: _Stream,
        writer: _Writer,
        *,
        selected: Callable[[Any], bool],
        timeout_seconds: float | None,
        fault: Fault | None,
    ) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        deadline = start + timeout_seconds if timeout_seconds else None
        drop_at = start + fault.watch_drop_after if fault and fault.watch_drop_after else None
        stall_until = start + fault.watch_stall if fault and fault.watch_stall else None
        bookmarks = request.query.get("allowWatchBookmarks") in ("true", "1")
        next_bookmark = start + self.bookmark_interval
        while True:
            now = loop.time()
            if drop_at is not None and now >= drop_at:
                _abort(request)
                return
            if deadline is not None and now >= deadline:
                return
            if stall_until is not None and now < stall_until:
                await asyncio.sleep(min(t for t in (stall_until, drop_at, deadline) if t) - now)
                continue
            wake = min(t for t in (deadline, drop_at, next_bookmark) if t is not None)
            try:
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow the cancel of a
                # server that is stopping, and this stream would outlive it.
                async with asyncio.timeout(max(wake - now, 0.0)):
                    first = await stream.queue.get()
            except TimeoutError:
                if bookmarks and loop.time() >= next_bookmark and stream.queue.empty():
                    await writer.bookmark(self.store.resource_version)
                if loop.time() >= next_bookmark:
                    next_bookmark = loop.time() + self.bookmark_interval
                continue
            batch = [first]
            while len(batch) < _BATCH and not stream.queue.empty():
                batch.append(stream.queue.get_nowait())
            if any(e.type == _STOP for e in batch):
                if stream.aborted:
                    _abort(request)
                return
            await writer.events([o for e in batch if (o := _translate(e, selected)) is not None])


class _Writer:
    def __init__(
        self,
        response: web.StreamResponse,
        info: ResourceInfo,
        as_table: bool,
        encoded: _EncodedLines,
    ) -> None:
        self.response, self.info, self.as_table = response, info, as_table
        self.encoded = encoded
        self.columns_sent = False

    async def events(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        if events:
            await self.response.write(b"".join(self._line(t, o) for t, o in events))

    def _line(self, kind: str, obj: dict[str, Any]) -> bytes:
        if not self.as_table and kind != "BOOKMARK":
            return self.encoded.line(kind, obj, self.info.key.api_version)
        if self.as_table:
            body: dict[str, Any] = tables.table(
                self.info, [obj], with_columns=not self.columns_sent
            )
            self.columns_sent = True
        elif obj.get("apiVersion") != self.info.key.api_version:
            body = {**obj, "apiVersion": self.info.key.api_version}
        else:
            body = obj
        return json.dumps({"type": kind, "object": body}, separators=(",", ":")).encode() + b"\n"

    async def bookmark(self, rv: int, *, initial_end: bool = False) -> None:
        md: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            md["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": self.info.kind, "apiVersion": self.info.key.api_version, "metadata": md}
        await self.events([("BOOKMARK", obj)])

    async def error(self, status: dict[str, Any]) -> None:
        await self.events([("ERROR", status)])


def _translate(
    event: WatchEvent, selected: Callable[[Any], bool]
) -> tuple[str, dict[str, Any]] | None:
    now = selected(event.obj)
    if event.type == "MODIFIED" and event.old is not None:
        before = selected(event.old)
        if before and not now:
            return ("DELETED", event.obj)
        if now and not before:
            return ("ADDED", event.obj)
    return (event.type, event.obj) if now else None


def _expired(rv: str) -> dict[str, Any]:
    return ApiError(410, f"too old resource version: {rv}", reason="Expired").status()


def _float(value: str | None, name: str) -> float | None:
    if value in (None, ""):
        return None
    try:
        return float(value)
    except ValueError:
        raise bad_request(f"invalid {name}: {value!r}") from None


def _abort(request: web.Request) -> None:
    """Cut the connection without ending the chunked body, as a dying proxy would."""
    transport = request.transport
    if transport is not None:
        transport.abort()
