"""``Informer``: a list-then-watch cache of one resource kind, as client-go's informers keep.

It lists the objects that match a label (and field) selector once, then follows a watch from the
list's ``resourceVersion`` (with bookmarks, so a quiet stream stays current); a stream the server
ends is re-opened from the last version seen, and a version the server no longer has (410
Expired) or repeated failures make it list again. Until the first list has arrived it is not
``synced`` and readers must not use it (they would take every object for missing). What it keeps,
and how, is :class:`~nemotron_operator.kube.store.ObjectStore`'s.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from nemotron_operator.kube.client import KubeClient
from nemotron_operator.kube.errors import ApiError
from nemotron_operator.kube.resources import Resource
from nemotron_operator.kube.store import ObjectStore, Projection, object_key, slim

logger = logging.getLogger(__name__)
# Called with the event type ("ADDED", "MODIFIED", "DELETED") and the object, after the store
# has taken it in: the controller re-queues the object's owner.
Listener = Callable[[str, dict[str, Any]], None]
DEFAULT_BACKOFFS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
WATCH_SECONDS = 300  # the server ends each stream after this; it is re-opened at once


class Informer(ObjectStore):
    def __init__(
        self,
        kube: KubeClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        index_label: str | None = None,
        project: Projection = slim,
        listener: Listener | None = None,
        on_restart: Callable[[str], None] | None = None,
        on_open: Callable[[str], None] | None = None,
        backoffs: Sequence[float] = DEFAULT_BACKOFFS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(resource, index_label=index_label, project=project)
        self.kube = kube
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.listener = listener
        self.on_restart = on_restart  # called with the plural each time a stream is re-opened
        self.on_open = on_open  # called with the plural when the first stream opens
        self.streams = 0
        self.backoffs = tuple(backoffs) or DEFAULT_BACKOFFS
        self._clock = clock
        self.synced = asyncio.Event()
        self.version = ""  # the last resourceVersion seen (list, event or bookmark)
        self.lists = 0
        self.failures = 0  # consecutive failed requests; 0 while it works
        self.failing_since: float | None = None
        self.last_error: str | None = None
        # The last failure was 403: a permission the operator lacks (RBAC revoked). A restart
        # cannot mend that, so liveness leaves it out; the log names the permission.
        self.forbidden = False
        self.not_served = False  # the server answered 404: the loop has ended

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
                if exc.status == 403 and not self.forbidden:
                    logger.error(
                        "permission missing: %s; grant it to the operator's ServiceAccount (the "
                        "chart's ClusterRole and ClusterRoleBinding, or Role and RoleBinding): "
                        "the watch is retried meanwhile, without a restart",
                        exc.message,
                    )
                self.forbidden = exc.status == 403
                await self._failed(str(exc))
            except ValueError as exc:  # a line that is not JSON: start over from a list
                relist = True
                await self._failed(f"unreadable watch event: {exc}")

    async def _list(self) -> None:
        items, version = await self.kube.list_versioned(
            self.resource,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
        )
        self.lists += 1
        first = not self.synced.is_set()
        seen = set()
        for obj in items:
            key = object_key(obj)
            seen.add(key)
            known = key in self._objects
            if self.store(obj, snapshot=True) and not first and self.listener is not None:
                self.listener("MODIFIED" if known else "ADDED", obj)
        for key in [k for k in self._objects if k not in seen]:
            gone = self.remove(key)
            if gone is not None and self.listener is not None:
                self.listener("DELETED", gone)
        self.version = version
        self._ok()
        self.synced.set()

    async def _watch(self) -> bool:
        """Follow one stream to its end; True when the caller must list again."""
        self.streams += 1
        if self.streams > 1 and self.on_restart is not None:
            self.on_restart(self.resource.plural)
        if self.streams == 1 and self.on_open is not None:
            self.on_open(self.resource.plural)
        stream = self.kube.watch(
            self.resource,
            self.namespace,
            resource_version=self.version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
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
            changed = self.drop(*object_key(obj), version) if kind == "DELETED" else self.store(obj)
            if changed and self.listener is not None:
                self.listener(kind, obj)
            self._ok()
        return False

    def _ok(self) -> None:
        if self.forbidden:
            logger.info("%s: permitted again; watching", self.resource.plural)
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
            self.resource.plural,
            self.failures,
            error,
            delay,
        )
        await asyncio.sleep(delay)

    def failing_for(self) -> float:
        """Seconds since the first of the current run of failures (0 while it works)."""
        return 0.0 if self.failing_since is None else self._clock() - self.failing_since
