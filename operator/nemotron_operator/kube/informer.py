"""``Informer``: a list-then-watch cache of one resource kind, as client-go's informers keep.

The loop (list, watch from the list's version with bookmarks, re-open, relist on 410 or
repeated failures, back-off, ``synced``) is :class:`~nemotron_operator.kube.listwatch.ListWatch`'s;
this class lists and watches with the operator's :class:`KubeClient` and keeps what it sees as
:class:`~nemotron_operator.kube.store.ObjectStore` keeps it. A kind that is not served (404)
ends the loop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from nemotron_operator.kube.client import KubeClient
from nemotron_operator.kube.errors import ApiError
from nemotron_operator.kube.listwatch import DEFAULT_BACKOFFS, WATCH_SECONDS, ListWatch
from nemotron_operator.kube.resources import Resource
from nemotron_operator.kube.store import ObjectStore, Projection, object_key, slim

logger = logging.getLogger(__name__)
# Called with the event type ("ADDED", "MODIFIED", "DELETED") and the object, after the store
# has taken it in: the controller re-queues the object's owner.
Listener = Callable[[str, dict[str, Any]], None]


class Informer(ListWatch, ObjectStore):
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
        ObjectStore.__init__(self, resource, index_label=index_label, project=project)
        ListWatch.__init__(
            self,
            resource.plural,
            on_restart=on_restart,
            on_open=on_open,
            backoffs=backoffs,
            clock=clock,
        )
        self.kube = kube
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.listener = listener

    async def list_objects(self) -> tuple[list[dict[str, Any]], str]:
        return await self.kube.list_versioned(
            self.resource,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
        )

    def watch_events(self, version: str) -> AsyncIterator[dict[str, Any]]:
        return self.kube.watch(
            self.resource,
            self.namespace,
            resource_version=version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=WATCH_SECONDS,
        )

    def take_list(self, items: list[dict[str, Any]]) -> None:
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

    def take_event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            version = (obj.get("metadata") or {}).get("resourceVersion")
            changed = self.drop(*object_key(obj), version)
        else:
            changed = self.store(obj)
        if changed and self.listener is not None:
            self.listener(kind, obj)

    def report_forbidden(self, error: ApiError) -> None:
        logger.error(
            "permission missing: %s; grant it to the operator's ServiceAccount (the "
            "chart's ClusterRole and ClusterRoleBinding, or Role and RoleBinding): "
            "the watch is retried meanwhile, without a restart",
            error.message,
        )
