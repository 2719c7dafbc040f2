"""The cluster's GPUs as the planner sees them: Node objects and the pods bound to them.

One read of all nodes and pods serves every reconcile for ``ttl`` seconds (a resync of many
objects must not list every pod once per object), and so does the arithmetic on it: the GPUs in
use per node are summed once per read and the pods are indexed by deployment, so a reconcile
costs O(its own pods + nodes), not O(all pods) — O(N²) per resync pass at N deployments before.
The deployment's own pods are left out when counting free GPUs, so that a running deployment
does not count against itself. A reconcile plans against a pod list at most ``ttl`` seconds old
(``invalidate`` forces a fresh read, e.g. after a failed apply).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from nemotron_operator.kube import KubeClient
from nemotron_operator.kube.resources import NODES, PODS
from nemotron_operator.render import names as n
from nemotron_operator.sizing import GpuInventory, gpus_by_node, inventory_from_usage

Owner = tuple[str, str]  # (namespace, instance) of a managed pod


class InventoryReader:
    def __init__(
        self, kube: KubeClient, *, ttl: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._kube = kube
        self._ttl = ttl
        self._clock = clock
        self._read_at = -1e9
        self._nodes: list[dict[str, Any]] = []
        self._used: dict[str, int] = {}  # GPUs requested per node by every live pod
        self._own_used: dict[Owner, dict[str, int]] = {}  # the same, per managed deployment
        self._shared: GpuInventory | None = None  # for deployments without pods

    def invalidate(self) -> None:
        self._read_at = -1e9

    async def read(self, namespace: str, instance: str) -> GpuInventory:
        if self._clock() - self._read_at > self._ttl:
            nodes = await self._kube.list(NODES)
            pods = await self._kube.list(
                PODS, field_selector="status.phase!=Succeeded,status.phase!=Failed"
            )
            self._index(nodes, pods)
            self._read_at = self._clock()
        own = self._own_used.get((namespace, instance))
        if not own:
            if self._shared is None:
                self._shared = inventory_from_usage(self._nodes, self._used)
            return self._shared
        others = {node: gpus - own.get(node, 0) for node, gpus in self._used.items()}
        return inventory_from_usage(self._nodes, others)

    def _index(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        by_owner: dict[Owner, list[dict[str, Any]]] = {}
        for pod in pods:
            owner = _owner(pod)
            if owner is not None:
                by_owner.setdefault(owner, []).append(pod)
        self._nodes = nodes
        self._used = gpus_by_node(pods)
        self._own_used = {owner: gpus_by_node(owned) for owner, owned in by_owner.items()}
        self._shared = None


def _owner(pod: dict[str, Any]) -> Owner | None:
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    instance = labels.get(n.INSTANCE)
    if instance is None or labels.get(n.MANAGED_BY_LABEL) != n.MANAGED_BY:
        return None
    return str(metadata.get("namespace")), str(instance)
