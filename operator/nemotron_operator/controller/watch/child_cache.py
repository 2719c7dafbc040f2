"""``ChildCache``: the operator's children and their pods as its watches last saw them.

Every child kind the renderer produces (StatefulSets, Services, PodDisruptionBudgets, PVCs, and
PodMonitors and NodePools where their CRDs are served) and the serving pods are followed by one
:class:`~nemotron_operator.kube.informer.Informer` each (per watched namespace), selected on
``app.kubernetes.io/managed-by=nemotron-operator`` and indexed by the instance label. A
reconcile reads its children here instead of listing six kinds and its pods: a reconcile that
finds nothing to do costs one GET (the NemotronDeployment itself). Until a kind's first list has
arrived, or while its CRD is not served, the reconcile lists it from the API server as before.

A change to a child or a pod re-queues its owner (a short debounce merges a burst, e.g. every
pod of a rollout), which is what kopf's watches of StatefulSets, Services and pods did before:
kopf now watches only NemotronDeployments, and no longer deep-copies every pod event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any

from nemotron_operator.kube import KubeClient
from nemotron_operator.kube.informer import Informer
from nemotron_operator.kube.resources import (
    CHILD_RESOURCES,
    NEMOTRON_DEPLOYMENTS,
    OPTIONAL_RESOURCES,
    PODS,
    SERVICES,
    STATEFULSETS,
    Resource,
)
from nemotron_operator.render import names as n

logger = logging.getLogger(__name__)
CHILD_SELECTOR = f"{n.MANAGED_BY_LABEL}={n.MANAGED_BY}"
# Every kind the cache follows (the chart must grant list and watch on each).
INFORMED: tuple[Resource, ...] = (*CHILD_RESOURCES, PODS)
# A child event re-queues its owner a moment later, so that a burst becomes one reconcile.
CHILD_DEBOUNCE_SECONDS = 0.2
Enqueue = Callable[[tuple[str, str], float], None]


def owner_name(obj: dict[str, Any]) -> str | None:
    """The NemotronDeployment a child belongs to: its owner reference, or (cluster-scoped
    children, which cannot have a namespaced owner) the owner annotation."""
    metadata = obj.get("metadata") or {}
    for ref in metadata.get("ownerReferences") or []:
        if ref.get("kind") == NEMOTRON_DEPLOYMENTS.kind and (
            ref.get("apiVersion") == NEMOTRON_DEPLOYMENTS.api_version
        ):
            return str(ref.get("name"))
    return None


class ChildCache:
    def __init__(
        self,
        kube: KubeClient,
        namespaces: Iterable[str],
        enqueue: Enqueue | None = None,
        on_restart: Callable[[str], None] | None = None,
        on_open: Callable[[str], None] | None = None,
    ) -> None:
        self.kube = kube
        self.namespaces: tuple[str | None, ...] = tuple(namespaces) or (None,)
        self.enqueue = enqueue
        self.on_restart = on_restart  # a watch stream re-opened (the restarts metric)
        self.on_open = on_open  # a resource's first watch stream (its restarts series at 0)
        self._informers: dict[tuple[Resource, str | None], Informer] = {}
        self._tasks: dict[tuple[Resource, str | None], asyncio.Task[None]] = {}
        # (namespace, instance label) → NemotronDeployment name, from the children seen.
        self._owners: dict[tuple[str, str], str] = {}
        self._started = asyncio.Event()

    # -- lifecycle --------------------------------------------------------------------------
    def start(self, served: Iterable[Resource]) -> None:
        """Follow every served kind not followed yet (an optional CRD may appear later); stop
        following an optional kind that is no longer served."""
        self._started.set()
        wanted = set(served) | {PODS}
        for resource in INFORMED:
            scopes = self.namespaces if resource.namespaced else (None,)
            for namespace in scopes:
                key = (resource, namespace)
                if key in self._tasks and self._tasks[key].done():  # ended: not served (404)
                    del self._tasks[key]
                    self._informers.pop(key, None)
                if resource in wanted and key not in self._tasks:
                    informer = Informer(
                        self.kube,
                        resource,
                        namespace=namespace,
                        label_selector=CHILD_SELECTOR,
                        index_label=n.INSTANCE,
                        listener=self._changed,
                        on_restart=self.on_restart,
                        on_open=self.on_open,
                    )
                    self._informers[key] = informer
                    self._tasks[key] = asyncio.create_task(
                        informer.run(), name=f"informer {resource.plural} {namespace or '*'}"
                    )
                elif resource not in wanted and resource in OPTIONAL_RESOURCES:
                    task = self._tasks.pop(key, None)
                    self._informers.pop(key, None)
                    if task is not None:
                        task.cancel()

    async def stop(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

    async def wait_synced(self) -> None:
        """Until every informer started so far has its first list (restart: no reconcile may
        take a child it has not listed yet for missing)."""
        await self._started.wait()
        for informer in list(self._informers.values()):
            await informer.synced.wait()

    def problems(self, stale_after: float) -> list[str]:
        """For the liveness probe: a stopped informer, or one failing for too long."""
        out = []
        for (resource, namespace), task in self._tasks.items():
            where = f"{resource.plural} in {namespace or 'all namespaces'}"
            informer = self._informers[(resource, namespace)]
            if task.done() and not informer.not_served:
                out.append(f"the watch of {where} has stopped")
                continue
            if informer.failing_for() > stale_after and not informer.forbidden:
                out.append(
                    f"the watch of {where} has failed for {informer.failing_for():.0f} s: "
                    f"{informer.last_error}"
                )
        return out

    # -- reads and write-through ------------------------------------------------------------
    def _informer(self, resource: Resource, namespace: str | None) -> Informer | None:
        scope = namespace if resource.namespaced else None
        informer = self._informers.get((resource, scope if scope in self.namespaces else None))
        if informer is None and resource.namespaced:
            informer = self._informers.get((resource, None))
        return informer if informer is not None and informer.synced.is_set() else None

    def unserved(self) -> frozenset[Resource]:
        """Kinds whose list or watch the server answered with 404 (their CRD was removed):
        not served, whatever the cached discovery says."""
        return frozenset(r for (r, _), i in self._informers.items() if i.not_served)

    def of_instance(
        self, resource: Resource, namespace: str, instance: str
    ) -> list[dict[str, Any]] | None:
        """The cached objects of one instance; None when this kind is not cached (yet)."""
        informer = self._informer(resource, namespace)
        if informer is None:
            return None
        return informer.by_label(namespace if resource.namespaced else None, instance)

    def versions_of_instance(
        self, resource: Resource, namespace: str, instance: str
    ) -> tuple[tuple[str, str], ...] | None:
        """(name, resourceVersion) of the cached objects of one instance, parsing none; None
        when this kind is not cached (yet)."""
        informer = self._informer(resource, namespace)
        if informer is None:
            return None
        return informer.versions_by_label(namespace if resource.namespaced else None, instance)

    def stored(self, resource: Resource, obj: Any) -> None:
        """An apply's answer: newer than what the watch has delivered so far."""
        metadata = obj.get("metadata") if isinstance(obj, dict) else None
        if not metadata:
            return
        informer = self._informer(resource, metadata.get("namespace"))
        if informer is not None:
            informer.store(obj)

    def _owner_of_instance(self, namespace: str, instance: str) -> str | None:
        """A pod's owner (its references name the StatefulSet): from a child of its instance."""
        owner = self._owners.get((namespace, instance))
        if owner is None:
            for resource in (STATEFULSETS, SERVICES):
                for child in self.of_instance(resource, namespace, instance) or []:
                    owner = owner_name(child)
                    if owner is not None:
                        self._owners[(namespace, instance)] = owner
                        return owner
        return owner

    # -- events -----------------------------------------------------------------------------
    def _changed(self, kind: str, obj: dict[str, Any]) -> None:
        metadata = obj.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "")
        instance = str((metadata.get("labels") or {}).get(n.INSTANCE, ""))
        owner = owner_name(obj)
        if owner is not None and namespace:
            self._owners[(namespace, instance)] = owner
        elif namespace:
            owner = self._owner_of_instance(namespace, instance)
        else:  # cluster-scoped: the owner annotation says namespace/name
            where = (metadata.get("annotations") or {}).get(n.OWNER, "")
            namespace, _, owner = where.partition("/")
        if owner and namespace and self.enqueue is not None:
            self.enqueue((namespace, owner), CHILD_DEBOUNCE_SECONDS)
