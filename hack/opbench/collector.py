"""Watch-based timing: when each NemotronDeployment got its children, ``status.plan`` and
``Ready``, seen from outside through cluster-wide watches (as a user would see it), and, in the
namespaces asked for (``watch_pods``), when its first serving pod was created."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from opbench.api import GROUP_PATH, ApiError, Client

Key = tuple[str, str]  # (namespace, name)
CHILD_COLLECTIONS = {
    "Service": "/api/v1/services",
    "StatefulSet": "/apis/apps/v1/statefulsets",
    "PodDisruptionBudget": "/apis/policy/v1/poddisruptionbudgets",
    "PersistentVolumeClaim": "/api/v1/persistentvolumeclaims",
}
_MANAGED = "labelSelector=app.kubernetes.io%2Fmanaged-by%3Dnemotron-operator"
_SERVING = "labelSelector=app.kubernetes.io%2Fcomponent%3Dserving"
_INSTANCE = "app.kubernetes.io/instance"  # the NemotronDeployment's name, on its pods


@dataclass
class Track:
    """One deployment's timeline (``time.perf_counter`` seconds)."""

    children_missing: set[tuple[str, str]]
    created: float | None = None
    plan: float | None = None
    children: float | None = None
    ready: float | None = None
    # Ready=True and Progressing=False: the status has caught up with the StatefulSet too
    # (kube-controller-manager's status updates can trail the pods' readiness by seconds).
    settled: float | None = None
    # The first serving pod seen in the API (created by the StatefulSet controller): only in
    # namespaces passed to ``Collector.watch_pods``.
    pod: float | None = None

    @property
    def converged(self) -> float | None:
        if self.plan is None or self.children is None:
            return None
        return max(self.plan, self.children)

    def latency(self, what: str) -> float | None:
        end = self.converged if what == "converged" else getattr(self, what)
        if end is None or self.created is None:
            return None
        return max(0.0, end - self.created)


@dataclass
class Collector:
    client: Client
    tracks: dict[Key, Track] = field(default_factory=dict)
    events: int = 0
    _children: dict[tuple[str, str, str], Key] = field(default_factory=dict)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _synced: int = 0

    def expect(self, key: Key, children: Iterable[tuple[str, str]]) -> None:
        """Register a deployment before creating it; ``children`` are (kind, name) pairs."""
        wanted = set(children)
        self.tracks[key] = Track(children_missing=wanted)
        for kind, name in wanted:
            self._children[(key[0], kind, name)] = key

    def created(self, key: Key, when: float) -> None:
        self.tracks[key].created = when

    async def start(self) -> None:
        collections = {"NemotronDeployment": f"{GROUP_PATH}/nemotrondeployments"}
        collections |= {k: f"{p}?{_MANAGED}" for k, p in CHILD_COLLECTIONS.items()}
        for kind, path in collections.items():
            handler = self._on_deployment if kind == "NemotronDeployment" else self._child(kind)
            self._tasks.append(asyncio.create_task(self._stream(path, handler)))
        deadline = time.monotonic() + 30
        while self._synced < len(collections):
            if time.monotonic() > deadline:
                raise RuntimeError("the collector's watches did not start")
            await asyncio.sleep(0.01)

    async def watch_pods(self, namespace: str) -> asyncio.Task[None]:
        """Watch the serving pods of one namespace (until ``unwatch`` or ``stop``): a
        deployment's ``pod`` is when its first was seen (listed, or ADDED). Per namespace, not
        cluster-wide: the batches' pods would cost this process (which shares the cores) a
        decoded event per pod change while they are measured."""
        synced = self._synced
        path = f"/api/v1/namespaces/{namespace}/pods?{_SERVING}"
        task = asyncio.create_task(self._stream(path, self._on_pod))
        self._tasks.append(task)
        deadline = time.monotonic() + 30
        while self._synced == synced:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the collector's pod watch in {namespace} did not start")
            await asyncio.sleep(0.01)
        return task

    async def unwatch(self, task: asyncio.Task[None]) -> None:
        self._tasks.remove(task)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def wait(self, keys: Iterable[Key], what: str, seconds: float) -> bool:
        """Until every key has ``what`` ("converged", "ready", "settled" or "pod"); False on
        timeout."""
        # The keys still waited for, checked from the front and dropped once done: a check
        # of all N keys at each of the ~3N changes was 10 % of this process's CPU at N = 1,000.
        remaining = list(keys)
        deadline = time.monotonic() + seconds
        while True:
            done = 0
            for key in remaining:
                if self.tracks[key].latency(what) is None:
                    break
                done += 1
            del remaining[:done]
            if not remaining:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(left, 1.0)):  # wait_for can swallow a cancel
                    await self._changed.wait()

    def pending(self, keys: Iterable[Key], what: str) -> list[Key]:
        return [k for k in keys if self.tracks[k].latency(what) is None]

    # --- watch handling ------------------------------------------------------------------------

    def _on_deployment(self, obj: dict[str, Any], now: float) -> None:
        meta = obj["metadata"]
        track = self.tracks.get((meta["namespace"], meta["name"]))
        if track is None:
            return
        status = obj.get("status") or {}
        if track.plan is None and status.get("plan"):
            track.plan = now
            self._changed.set()
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        if track.ready is None and conditions.get("Ready") == "True":
            track.ready = now
            self._changed.set()
        rolled_out = conditions.get("Progressing") == "False"
        if track.settled is None and conditions.get("Ready") == "True" and rolled_out:
            track.settled = now
            self._changed.set()

    def _on_pod(self, obj: dict[str, Any], now: float) -> None:
        meta = obj["metadata"]
        instance = (meta.get("labels") or {}).get(_INSTANCE)
        track = self.tracks.get((meta.get("namespace", ""), instance or ""))
        if track is not None and track.pod is None:
            track.pod = now
            self._changed.set()

    def _child(self, kind: str) -> Callable[[dict[str, Any], float], None]:
        def handle(obj: dict[str, Any], now: float) -> None:
            meta = obj["metadata"]
            key = self._children.get((meta.get("namespace", ""), kind, meta["name"]))
            if key is None:
                return
            track = self.tracks[key]
            if (kind, meta["name"]) in track.children_missing:
                track.children_missing.discard((kind, meta["name"]))
                if not track.children_missing:
                    track.children = now
                    self._changed.set()

        return handle

    async def _stream(self, path: str, handle: Callable[[dict[str, Any], float], None]) -> None:
        """List, then watch from the list's resourceVersion; relist after 410 or a cut."""
        first = True
        while True:
            listing = await self.client.send("GET", path)
            now = time.perf_counter()
            for item in listing["items"]:
                handle(item, now)
            version = listing["metadata"]["resourceVersion"]
            if first:
                self._synced += 1
                first = False
            params = {"allowWatchBookmarks": "true", "resourceVersion": version}
            with contextlib.suppress(ApiError):
                async with self.client.watch(path, params, timeout_seconds=3600) as events:
                    async for event in events:
                        if event["type"] == "ERROR":
                            break
                        self.events += 1
                        if event["type"] in ("ADDED", "MODIFIED"):
                            handle(event["object"], time.perf_counter())
