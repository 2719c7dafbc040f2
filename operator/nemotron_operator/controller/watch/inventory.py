"""The cluster's GPUs as the planner sees them: Node objects and the pods bound to them.

Two watches keep them (``follow``): every Node, and every pod that has not finished
(``status.phase!=Succeeded,status.phase!=Failed``), each projected on what the inventory uses —
a node's GPU labels, allocatable GPUs, readiness and cordon; a pod's node, GPU requests and
instance labels — so that a heartbeat or a pod's readiness is no change here. The GPUs in use per
node are kept up to date one event at a time, also per managed deployment, so a reconcile costs
O(its own pods + nodes), whatever the number of pods. ``generation`` counts the changes that can
change an inventory: a reconcile whose inputs (this among them) are unchanged is skipped
(``controller/reconcile/unchanged.py``).

The deployment's own pods are left out when counting free GPUs, so that a running deployment
does not count against itself. Until both watches have their first lists (and in unit tests
without them) the inventory is listed instead, one read shared by every reconcile for ``ttl``
seconds (``invalidate`` forces a fresh one).

With ``dra`` (the operator runs with --dra) two more watches: the DRA driver's ResourceSlices
(GPU nodes whose GPUs are claimed, not requested) and every ResourceClaim, projected on the
node and number of the driver's devices its allocation holds and the instance labels (claims
made from the operator's templates carry them), counted like pods. Where the cluster does not
serve resource.k8s.io/v1 those watches end at their 404 (``dra_served`` is then False).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from nemotron_operator.kube import KubeClient
from nemotron_operator.kube.informer import Informer
from nemotron_operator.kube.resources import NODES, PODS, RESOURCE_CLAIMS, RESOURCE_SLICES
from nemotron_operator.kube.store import ObjectKey, object_key
from nemotron_operator.render import names as n
from nemotron_operator.sizing import (
    GpuInventory,
    gpus_by_node,
    inventory_from_usage,
    requested_gpus,
)
from nemotron_operator.sizing.dra import DRIVER, claim_node_gpus
from nemotron_operator.sizing.inventory import GPU_RESOURCE, with_usage

Owner = tuple[str, str]  # (namespace, instance) of a managed pod
Share = tuple[str, int, Owner | None]  # node, GPUs, whose
_DEVICE_ATTRIBUTES = ("type", "productName", "cudaComputeCapability")
UNFINISHED = "status.phase!=Succeeded,status.phase!=Failed"
WATCHED = (NODES, PODS)  # all of them, cluster-wide (the chart must grant list and watch)
DRA_WATCHED = (RESOURCE_SLICES, RESOURCE_CLAIMS)  # with --dra, cluster-wide (rbac.dra)
_NODE_LABEL_PREFIX = "nvidia.com/"


def node_projection(node: dict[str, Any]) -> dict[str, Any]:
    metadata, status = node.get("metadata") or {}, node.get("status") or {}
    labels = metadata.get("labels") or {}
    return {
        "metadata": {
            "name": metadata.get("name"),
            "labels": {k: v for k, v in labels.items() if k.startswith(_NODE_LABEL_PREFIX)},
        },
        "spec": {"unschedulable": bool((node.get("spec") or {}).get("unschedulable"))},
        "status": {
            "allocatable": {GPU_RESOURCE: (status.get("allocatable") or {}).get(GPU_RESOURCE)},
            "conditions": [
                {"type": c.get("type"), "status": c.get("status")}
                for c in status.get("conditions") or []
                if c.get("type") == "Ready"
            ],
        },
    }


def pod_projection(pod: dict[str, Any]) -> dict[str, Any]:
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    return {
        "metadata": {
            "name": metadata.get("name"),
            "namespace": metadata.get("namespace"),
            "labels": {k: labels[k] for k in (n.INSTANCE, n.MANAGED_BY_LABEL) if k in labels},
        },
        "spec": {"nodeName": (pod.get("spec") or {}).get("nodeName")},
        "gpus": requested_gpus(pod),
    }


def slice_projection(resource_slice: dict[str, Any]) -> dict[str, Any]:
    """What the inventory reads of a ResourceSlice: the driver's GPUs, their product, compute
    capability and memory (other drivers' slices: nothing but their name)."""
    spec = resource_slice.get("spec") or {}
    name = (resource_slice.get("metadata") or {}).get("name")
    if spec.get("driver") != DRIVER:
        return {"metadata": {"name": name}}
    devices = [
        {
            "attributes": {
                k: v for k, v in (d.get("attributes") or {}).items() if k in _DEVICE_ATTRIBUTES
            },
            "capacity": {k: v for k, v in (d.get("capacity") or {}).items() if k == "memory"},
        }
        for d in spec.get("devices") or []
    ]
    return {
        "metadata": {"name": name},
        "spec": {"driver": DRIVER, "nodeName": spec.get("nodeName"), "devices": devices},
    }


def claim_projection(claim: dict[str, Any]) -> dict[str, Any]:
    """What the inventory reads of a ResourceClaim: where its GPUs are allocated, and whose
    (a projection again: itself)."""
    if "gpus" in claim:
        return claim
    metadata = claim.get("metadata") or {}
    labels = metadata.get("labels") or {}
    held = claim_node_gpus(claim)
    return {
        "metadata": {
            "name": metadata.get("name"),
            "namespace": metadata.get("namespace"),
            "labels": {k: labels[k] for k in (n.INSTANCE, n.MANAGED_BY_LABEL) if k in labels},
        },
        "spec": {"nodeName": held[0] if held else None},
        "gpus": held[1] if held else 0,
    }


def _owner(pod: dict[str, Any]) -> Owner | None:
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    instance = labels.get(n.INSTANCE)
    if instance is None or labels.get(n.MANAGED_BY_LABEL) != n.MANAGED_BY:
        return None
    return str(metadata.get("namespace")), str(instance)


class InventoryReader:
    def __init__(
        self,
        kube: KubeClient,
        *,
        ttl: float,
        dra: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._kube = kube
        self._dra = dra
        self._slices: list[dict[str, Any]] = []
        self._slice_watch: Informer | None = None
        self._claim_watch: Informer | None = None
        self._ttl = ttl
        self._clock = clock
        self._read_at = -1e9
        self._nodes: list[dict[str, Any]] = []
        self._used: dict[str, int] = {}  # GPUs requested per node by every live pod
        self._own_used: dict[Owner, dict[str, int]] = {}  # the same, per managed deployment
        self._shared: GpuInventory | None = None  # for deployments without pods
        self._parsed: GpuInventory | None = None  # _nodes parsed, every GPU free
        self._node_watch: Informer | None = None
        self._pod_watch: Informer | None = None
        # a pod's or a claim's share of the GPUs in use (keyed "pods" or "claims", then by object)
        self._counted: dict[tuple[str, ObjectKey], Share] = {}
        self._watched = False  # the usage above is the watches' (built from their first lists)
        self._nodes_stale = False  # a node or slice changed since _nodes was parsed
        self.generation = 0

    # -- the watches -------------------------------------------------------------------------
    def follow(self) -> tuple[Informer, ...]:
        """Create the two watches; the caller runs their loops (``Informer.run``)."""
        self._node_watch = Informer(
            self._kube, NODES, project=node_projection, listener=self._node_changed
        )
        self._pod_watch = Informer(
            self._kube,
            PODS,
            field_selector=UNFINISHED,
            project=pod_projection,
            listener=self._pod_changed,
        )
        if self._dra:
            self._slice_watch = Informer(
                self._kube,
                RESOURCE_SLICES,
                project=slice_projection,
                listener=self._node_changed,
            )
            self._claim_watch = Informer(
                self._kube,
                RESOURCE_CLAIMS,
                project=claim_projection,
                listener=self._claim_changed,
            )
        return self.watches

    @property
    def watches(self) -> tuple[Informer, ...]:
        every = (self._node_watch, self._pod_watch, self._slice_watch, self._claim_watch)
        return tuple(w for w in every if w is not None)

    @property
    def watched(self) -> bool:
        """Every watch has its first list (a DRA watch: or found the API not served): reads
        need no request."""
        watches = self.watches
        return len(watches) == (4 if self._dra else 2) and all(
            w.synced.is_set() or w.not_served for w in watches
        )

    @property
    def dra_served(self) -> bool:
        """The operator runs with --dra and, as far as its watches know, the cluster serves
        resource.k8s.io/v1 ResourceSlices and ResourceClaims."""
        watches = (self._slice_watch, self._claim_watch)
        return self._dra and not any(w is not None and w.not_served for w in watches)

    def _node_changed(self, kind: str, obj: dict[str, Any]) -> None:
        # O(1): the nodes are parsed again at the next read, once, not at every event (a
        # 417-node cluster whose Ready conditions flapped spent 28 % of the operator's CPU
        # parsing every node at every node event; docs/benchmarks.md, the full runs).
        self.generation += 1
        self._shared = None
        self._nodes_stale = True

    def _pod_changed(self, kind: str, obj: dict[str, Any]) -> None:
        if self._watched:
            self._count(("pods", object_key(obj)), None if kind == "DELETED" else obj)

    def _claim_changed(self, kind: str, obj: dict[str, Any]) -> None:
        if self._watched:
            gone = kind == "DELETED"
            self._count(("claims", object_key(obj)), None if gone else claim_projection(obj))

    def _count(self, key: tuple[str, ObjectKey], obj: dict[str, Any] | None) -> None:
        """Replace ``key``'s share of the GPUs in use with that of ``obj`` (a pod or a claim, in
        projection; None: gone)."""
        before = self._counted.pop(key, None)
        after = None
        if obj is not None:
            node = (obj.get("spec") or {}).get("nodeName")
            gpus = int(obj.get("gpus", requested_gpus(obj)))
            if node and gpus > 0:
                after = (str(node), gpus, _owner(obj))
                self._counted[key] = after
        if before == after:
            return
        for share, sign in ((before, -1), (after, 1)):
            if share is None:
                continue
            node, gpus, owner = share
            self._used[node] = self._used.get(node, 0) + sign * gpus
            if owner is not None:
                own = self._own_used.setdefault(owner, {})
                own[node] = own.get(node, 0) + sign * gpus
                if not any(own.values()):
                    del self._own_used[owner]
        self._used = {node: gpus for node, gpus in self._used.items() if gpus}
        self.generation += 1
        self._shared = None

    def _from_watches(self) -> None:
        """The first read after both watches synced: everything they hold, once."""
        assert self._node_watch is not None
        assert self._pod_watch is not None
        self._used, self._own_used, self._counted = {}, {}, {}
        self._watched = True
        for pod in self._pod_watch.items():
            self._count(("pods", object_key(pod)), pod)
        for claim in self._claim_watch.items() if self._claim_watch is not None else []:
            self._count(("claims", object_key(claim)), claim)
        self._refresh_nodes()
        self.generation += 1
        self._shared = None

    def _refresh_nodes(self) -> None:
        assert self._node_watch is not None
        self._nodes = self._node_watch.items()
        self._parsed = None
        self._slices = self._slice_watch.items() if self._slice_watch is not None else []
        self._nodes_stale = False

    # -- reads ---------------------------------------------------------------------------------
    def invalidate(self) -> None:
        self._read_at = -1e9

    async def read(self, namespace: str, instance: str) -> GpuInventory:
        if self.watched:
            if not self._watched:
                self._from_watches()
            elif self._nodes_stale:
                self._refresh_nodes()
        elif self._clock() - self._read_at > self._ttl:
            nodes = await self._kube.list(NODES)
            pods = await self._kube.list(PODS, field_selector=UNFINISHED)
            if self.dra_served:
                slices = await self._kube.list(RESOURCE_SLICES)
                claims = [claim_projection(c) for c in await self._kube.list(RESOURCE_CLAIMS)]
            else:
                slices, claims = [], []
            self._index(nodes, pods + claims, slices)
            self._read_at = self._clock()
        # The nodes are parsed once per change of a node (not per read, not per pod): a read
        # recounts free GPUs from the usage kept per node (the profile of 1,000 deployments
        # becoming Ready spent 12 % of the operator's CPU parsing every node at every read).
        if self._shared is None:
            self._shared = with_usage(self.planning_view(), self._used)
        own = self._own_used.get((namespace, instance))
        if not own:
            return self._shared
        # Its own pods do not count against it: only the nodes they run on change.
        others = {node: self._used.get(node, 0) - gpus for node, gpus in own.items()}
        return with_usage(self._shared, others, only=own)

    def planning_view(self) -> GpuInventory:
        """The nodes of the last read with every GPU free: what a plan depends on (products,
        GPUs per node, memory, compute capability; never what is in use, ready or cordoned,
        which only status reads). The same object until a node changes, so that a deployment's
        plan is reused while its inputs are equal (``controller/decide/plan_memo.py``)."""
        if self._parsed is None:
            self._parsed = inventory_from_usage(self._nodes, {}, self._slices)
        return self._parsed

    def _index(
        self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]], slices: list[dict[str, Any]]
    ) -> None:
        """From lists: ``pods`` may include claims in projection (their ``gpus`` counted)."""
        by_owner: dict[Owner, list[dict[str, Any]]] = {}
        for pod in pods:
            owner = _owner(pod)
            if owner is not None:
                by_owner.setdefault(owner, []).append(pod)
        self._nodes, self._slices = nodes, slices
        self._parsed = None
        self._used = gpus_by_node(pods)
        self._own_used = {owner: gpus_by_node(owned) for owner, owned in by_owner.items()}
        self._shared = None
        self.generation += 1
