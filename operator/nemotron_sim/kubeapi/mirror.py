"""The simulated nodes' view of the cluster: informers' caches to read, a write queue to write.

It offers the small part of a store that the simulated kubelet uses (``peek``/``scan`` to read,
``merge_patch``/``delete``/``create`` to write), so the kubelet reads and writes kube-apiserver
through reads from watch caches (a kubelet reads its pods, Secrets and ConfigMaps from informers
too) and writes that do not block it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from nemotron_operator.kube.transport import Transport
from nemotron_sim.kubeapi.informer import Informer
from nemotron_sim.kubeapi.resources import ResourceKey, WatchEvent
from nemotron_sim.kubeapi.writes import Write, WriteQueue

_SYNC_SECONDS = 60.0


class Mirror:
    def __init__(self, api: Transport, keys: Iterable[ResourceKey]) -> None:
        self.api = api
        self.informers = {key: Informer(api, key) for key in keys}
        self.writes = WriteQueue(api)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self.writes.start()
        self._tasks = [
            asyncio.create_task(informer.run(), name=f"sim-informer-{key.plural}")
            for key, informer in self.informers.items()
        ]
        waits = [informer.synced.wait() for informer in self.informers.values()]
        async with asyncio.timeout(_SYNC_SECONDS):
            await asyncio.gather(*waits)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        await self.writes.stop()

    def on_event(self, keys: Iterable[ResourceKey], callback: Callable[[WatchEvent], None]) -> None:
        for key in keys:
            self.informers[key].subscribe(callback)

    # --- reads (the caches' objects: read-only for peek/scan) ----------------------------------

    def _cache(self, key: ResourceKey) -> dict[tuple[str, str], dict[str, Any]]:
        informer = self.informers.get(key)
        if informer is None:
            raise KeyError(f"{key} is not mirrored")
        return informer.objects

    def peek(self, key: ResourceKey, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self._cache(key).get((namespace or "" if key.namespaced else "", name))

    def scan(
        self,
        key: ResourceKey,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        out = []
        for (ns, _), obj in self._cache(key).items():
            if namespace and ns != namespace:
                continue
            if labels:
                have = (obj.get("metadata") or {}).get("labels") or {}
                if any(have.get(k) != v for k, v in labels.items()):
                    continue
            out.append(obj)
        return out

    # --- writes (queued; the answer is not awaited) ------------------------------------------

    def merge_patch(
        self,
        key: ResourceKey,
        namespace: str | None,
        name: str,
        patch: dict[str, Any],
        *,
        subresource: str | None = None,
    ) -> None:
        self.writes.submit(Write("PATCH", key, namespace, name, patch, subresource))

    def create(self, key: ResourceKey, obj: dict[str, Any]) -> None:
        md = obj.get("metadata") or {}
        self.writes.submit(Write("POST", key, md.get("namespace"), str(md.get("name", "")), obj))

    def delete(
        self,
        key: ResourceKey,
        namespace: str | None,
        name: str,
        *,
        grace_period: int | None = None,
        preconditions: dict[str, Any] | None = None,
    ) -> None:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        if preconditions:
            body["preconditions"] = preconditions
        self.writes.submit(Write("DELETE", key, namespace, name, body))
