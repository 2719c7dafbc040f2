"""``Informer``: a list-then-watch cache of one resource kind, as client-go's informers keep.

It lists the objects that match a label selector once, then follows a watch from the list's
``resourceVersion`` (with bookmarks, so a quiet stream stays current); a stream the server ends
is re-opened from the last version seen, and a version the server no longer has (410 Expired)
or repeated failures make it list again. Until the first list has arrived it is not ``synced``
and readers must not use it (they would take every object for missing).

Objects are kept as compact JSON text and parsed when read: a reader parses only the few
objects it asks for, and 1,000 StatefulSets cost a few MiB instead of a Python tree each.
Writers can put their own results in at once (``store``/``drop``): the answer of an apply is
newer than anything the watch has delivered, so the next read sees it even before its event.
Of two versions of an object the higher ``resourceVersion`` wins (the server's are etcd
revisions, integers, in practice; when one is not an integer the later arrival wins).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from nemotron_operator.kube.client import KubeClient
from nemotron_operator.kube.errors import ApiError
from nemotron_operator.kube.resources import Resource

logger = logging.getLogger(__name__)
ObjectKey = tuple[str, str]  # (namespace, "" when cluster-scoped; name)
# Called with the event type ("ADDED", "MODIFIED", "DELETED") and the object, after the cache
# has taken it in: the controller re-queues the object's owner.
Listener = Callable[[str, dict[str, Any]], None]
DEFAULT_BACKOFFS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
WATCH_SECONDS = 300  # the server ends each stream after this; it is re-opened at once


def _version(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _key(obj: dict[str, Any]) -> ObjectKey:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name"))


class Informer:
    def __init__(
        self,
        kube: KubeClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        index_label: str | None = None,
        listener: Listener | None = None,
        on_restart: Callable[[str], None] | None = None,
        backoffs: Sequence[float] = DEFAULT_BACKOFFS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube = kube
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.index_label = index_label
        self.listener = listener
        self.on_restart = on_restart  # called with the plural each time a stream is re-opened
        self.streams = 0
        self.backoffs = tuple(backoffs) or DEFAULT_BACKOFFS
        self._clock = clock
        self._objects: dict[ObjectKey, tuple[str | None, str]] = {}  # key → (version, JSON)
        self._index: dict[tuple[str, str], set[ObjectKey]] = {}  # (namespace, label) → keys
        self._labels: dict[ObjectKey, str] = {}
        self.synced = asyncio.Event()
        self.version = ""  # the last resourceVersion seen (list, event or bookmark)
        self.lists = 0
        self.failures = 0  # consecutive failed requests; 0 while it works
        self.failing_since: float | None = None
        self.last_error: str | None = None
        self.not_served = False  # the server answered 404: the loop has ended

    def __len__(self) -> int:
        return len(self._objects)

    # -- reads -----------------------------------------------------------------------------
    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        entry = self._objects.get((namespace or "", name))
        return None if entry is None else self._parse(entry[1])

    def by_label(self, namespace: str | None, value: str) -> list[dict[str, Any]]:
        """Objects whose ``index_label`` is ``value`` (in ``namespace``; None: any)."""
        if namespace is None:
            keys = sorted(k for (ns, v), ks in self._index.items() if v == value for k in ks)
        else:
            keys = sorted(self._index.get((namespace, value), ()))
        return [self._parse(self._objects[k][1]) for k in keys if k in self._objects]

    def items(self) -> list[dict[str, Any]]:
        return [self._parse(text) for _, text in self._objects.values()]

    def _parse(self, text: str) -> dict[str, Any]:
        obj: dict[str, Any] = json.loads(text)
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        return obj

    # -- writes (the watch's, and the caller's own results) ---------------------------------
    def store(self, obj: dict[str, Any]) -> bool:
        """Keep ``obj`` unless a newer version is already kept; True when it changed."""
        return self._put(obj, snapshot=False)

    def _put(self, obj: dict[str, Any], *, snapshot: bool) -> bool:
        key = _key(obj)
        version = (obj.get("metadata") or {}).get("resourceVersion")
        current = self._objects.get(key)
        if current is not None and version is not None and version == current[0]:
            return False  # the same version is the same object: our write, then its watch event
        if current is not None and not snapshot:  # a list's snapshot replaces what we keep
            new, old = _version(version), _version(current[0])
            if new is not None and old is not None and new < old:
                return False
        slim = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        metadata = slim.get("metadata")
        if isinstance(metadata, dict) and "managedFields" in metadata:
            slim["metadata"] = {k: v for k, v in metadata.items() if k != "managedFields"}
        text = json.dumps(slim, separators=(",", ":"))
        self._objects[key] = (version, text)
        if current is not None and current[1] == text:
            return False
        self._reindex(key, obj)
        return True

    def drop(self, namespace: str | None, name: str, version: str | None = None) -> bool:
        """Forget an object (deleted); a kept version newer than ``version`` stays."""
        key = (namespace or "", name)
        current = self._objects.get(key)
        if current is None:
            return False
        new, old = _version(version), _version(current[0])
        if new is not None and old is not None and new < old:
            return False
        del self._objects[key]
        self._unindex(key)
        return True

    def _reindex(self, key: ObjectKey, obj: dict[str, Any]) -> None:
        if self.index_label is None:
            return
        self._unindex(key)
        value = ((obj.get("metadata") or {}).get("labels") or {}).get(self.index_label)
        if value is not None:
            self._labels[key] = str(value)
            self._index.setdefault((key[0], str(value)), set()).add(key)

    def _unindex(self, key: ObjectKey) -> None:
        value = self._labels.pop(key, None)
        if value is None:
            return
        keys = self._index.get((key[0], value))
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._index[(key[0], value)]

    # -- the loop --------------------------------------------------------------------------
    async def run(self) -> None:
        """List, then watch, until the kind is not served (404); other failures back off and are
        counted, never raised."""
        relist = True
        while True:
            try:
                if relist:
                    await self._list()
                    relist = False
                relist = await self._watch()
                self._ok()
            except ApiError as exc:
                if exc.status == 404:  # the kind is not served (its CRD is gone): stop
                    logger.info("%s: not served any more; not followed", self.resource.plural)
                    self.not_served = True
                    return
                relist = relist or self.failures >= 2
                await self._failed(str(exc))
            except ValueError as exc:  # a line that is not JSON: start over from a list
                relist = True
                await self._failed(f"unreadable watch event: {exc}")

    async def _list(self) -> None:
        items, version = await self.kube.list_versioned(
            self.resource, self.namespace, label_selector=self.label_selector
        )
        self.lists += 1
        first = not self.synced.is_set()
        seen = set()
        for obj in items:
            key = _key(obj)
            seen.add(key)
            known = key in self._objects
            if self._put(obj, snapshot=True) and not first and self.listener is not None:
                self.listener("MODIFIED" if known else "ADDED", obj)
        for key in [k for k in self._objects if k not in seen]:
            gone = self._parse(self._objects[key][1])
            del self._objects[key]
            self._unindex(key)
            if self.listener is not None:
                self.listener("DELETED", gone)
        self.version = version
        self._ok()
        self.synced.set()

    async def _watch(self) -> bool:
        """Follow one stream to its end; True when the caller must list again."""
        self.streams += 1
        if self.streams > 1 and self.on_restart is not None:
            self.on_restart(self.resource.plural)
        stream = self.kube.watch(
            self.resource,
            self.namespace,
            resource_version=self.version,
            label_selector=self.label_selector,
            timeout_seconds=WATCH_SECONDS,
        )
        async for event in stream:
            kind, obj = str(event.get("type")), event.get("object") or {}
            if kind == "ERROR":
                code, message = obj.get("code"), obj.get("message")
                logger.info("%s: watch error %s: %s", self.resource.plural, code, message)
                return True  # 410 Expired, or anything else the server could not serve
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if version:
                self.version = str(version)
            if kind == "BOOKMARK":
                continue
            if kind == "DELETED":
                changed = self.drop(_key(obj)[0], _key(obj)[1], version)
            else:
                changed = self.store(obj)
            if changed and self.listener is not None:
                self.listener(kind, obj)
            self._ok()
        return False

    def _ok(self) -> None:
        self.failures, self.failing_since, self.last_error = 0, None, None

    async def _failed(self, error: str) -> None:
        if self.failing_since is None:
            self.failing_since = self._clock()
        self.failures += 1
        self.last_error = error
        delay = self.backoffs[min(self.failures, len(self.backoffs)) - 1]
        logger.warning(
            "%s: list/watch failed (%d in a row): %s; again in %.1f s",
            self.resource.plural,
            self.failures,
            error,
            delay,
        )
        await asyncio.sleep(delay)

    def failing_for(self) -> float:
        """Seconds since the first of the current run of failures (0 while it works)."""
        return 0.0 if self.failing_since is None else self._clock() - self.failing_since
