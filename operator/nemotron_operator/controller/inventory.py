"""The cluster's GPUs as the planner sees them: Node objects and the pods bound to them.

One read of all nodes and pods serves every reconcile for ``ttl`` seconds (a resync of many
objects must not list every pod once per object). The deployment's own pods are left out when
counting free GPUs, so that a running deployment does not count against itself.
"""

from __future__ import annotations

import time
from typing import Any

from nemotron_operator.kube import KubeClient
from nemotron_operator.kube.resources import NODES, PODS
from nemotron_operator.render import names as n
from nemotron_operator.sizing import GpuInventory, inventory_from_nodes


class InventoryReader:
    def __init__(self, kube: KubeClient, *, ttl: float) -> None:
        self._kube = kube
        self._ttl = ttl
        self._read_at = -1e9
        self._nodes: list[dict[str, Any]] = []
        self._pods: list[dict[str, Any]] = []

    def invalidate(self) -> None:
        self._read_at = -1e9

    async def read(self, namespace: str, instance: str) -> GpuInventory:
        if time.monotonic() - self._read_at > self._ttl:
            nodes = await self._kube.list(NODES)
            pods = await self._kube.list(
                PODS, field_selector="status.phase!=Succeeded,status.phase!=Failed"
            )
            self._nodes, self._pods = nodes, pods
            self._read_at = time.monotonic()
        others = [p for p in self._pods if not _ours(p, namespace, instance)]
        return inventory_from_nodes(self._nodes, others)


def _ours(pod: dict[str, Any], namespace: str, instance: str) -> bool:
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    return (
        metadata.get("namespace") == namespace
        and labels.get(n.INSTANCE) == instance
        and labels.get(n.MANAGED_BY_LABEL) == n.MANAGED_BY
    )
