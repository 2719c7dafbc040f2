"""The cluster's GPUs, parsed from Node objects (``kubectl get nodes -o json`` items). Pure.

GPU Feature Discovery labels (model-facts.md §5, NVIDIA k8s-device-plugin [P]):
``nvidia.com/gpu.product`` (the product name), ``nvidia.com/gpu.memory`` (MiB; absent on
unified-memory GB10), ``nvidia.com/gpu.compute.major``/``minor``; the extended resource
``nvidia.com/gpu`` in ``status.allocatable``. With ResourceSlices, the GPUs NVIDIA's DRA driver
publishes too (``sizing/dra.py``): those nodes' GPUs are claimed, not requested as a resource,
so each node says which way (``allocation``) and a deployment plans on its own kind only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from nemotron_operator.catalog.gpus import MIB, GpuProduct, lookup_gpu
from nemotron_operator.sizing.dra import dra_node_facts

PRODUCT_LABEL = "nvidia.com/gpu.product"
MEMORY_LABEL = "nvidia.com/gpu.memory"
MAJOR_LABEL = "nvidia.com/gpu.compute.major"
MINOR_LABEL = "nvidia.com/gpu.compute.minor"
GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True)
class GpuNode:
    name: str
    product: str
    gpus: int  # allocatable nvidia.com/gpu
    free_gpus: int  # allocatable minus what scheduled pods request
    memory_mib: int | None
    compute_capability: tuple[int, int] | None
    ready: bool = True
    schedulable: bool = True
    allocation: str = "DevicePlugin"  # or "DRA": the GPUs are in a DRA driver's ResourceSlices


@dataclass(frozen=True)
class GpuInventory:
    nodes: tuple[GpuNode, ...]

    def for_allocation(self, allocation: str) -> GpuInventory:
        """The nodes whose GPUs a pod asks for this way (capacity.gpu.allocation)."""
        if all(n.allocation == allocation for n in self.nodes):
            return self
        return GpuInventory(tuple(n for n in self.nodes if n.allocation == allocation))

    def products(self) -> tuple[str, ...]:
        """Products present, most GPUs first, then by name (deterministic)."""
        totals: dict[str, int] = {}
        for node in self.nodes:
            totals[node.product] = totals.get(node.product, 0) + node.gpus
        return tuple(sorted(totals, key=lambda p: (-totals[p], p)))

    def nodes_of(self, product: str) -> tuple[GpuNode, ...]:
        return tuple(n for n in self.nodes if n.product == product)

    def gpus_per_node(self, product: str) -> int:
        return max((n.gpus for n in self.nodes_of(product)), default=0)

    def free_nodes(self, product: str, gpus_needed: int) -> int:
        """Ready, schedulable nodes of ``product`` with at least ``gpus_needed`` free GPUs."""
        return sum(
            1
            for n in self.nodes_of(product)
            if n.ready and n.schedulable and n.free_gpus >= gpus_needed
        )

    def gpu_product(self, product: str) -> GpuProduct | None:
        """The catalog entry for ``product`` with this cluster's GPUs per node, or one built from
        the node labels when the catalog does not know the product."""
        nodes = self.nodes_of(product)
        if not nodes:
            return None
        per_node = self.gpus_per_node(product)
        known = lookup_gpu(product)
        if known is not None:
            return replace(known, name=product, gpus_per_node=per_node)
        memory = next((n.memory_mib for n in nodes if n.memory_mib), None)
        if memory is None:
            return None
        capability = next((n.compute_capability for n in nodes if n.compute_capability), (0, 0))
        return GpuProduct(
            name=product,
            display_name=product,
            memory_bytes=memory * MIB,
            memory_reported=True,
            compute_capability=capability,
            family=_family(capability),
            fp8=capability >= (8, 9),
            fp4=capability >= (10, 0),
            gpus_per_node=per_node,
            interconnect="unknown (from node labels)",
            source="GFD node labels",
        )


def _family(capability: tuple[int, int]) -> Any:
    major = capability[0]
    if major >= 10:
        return "blackwell"
    if major == 9:
        return "hopper"
    if capability >= (8, 9):
        return "ada-lovelace"
    return "ampere"


def _int(value: Any) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def requested_gpus(pod: Mapping[str, Any]) -> int:
    """GPUs a pod's containers request (a limit stands for the request it implies)."""
    spec = pod.get("spec") or {}
    total = 0
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        limits = resources.get("limits") or {}
        requests = resources.get("requests") or {}
        total += _int(requests.get(GPU_RESOURCE, limits.get(GPU_RESOURCE, 0))) or 0
    return total


def gpus_by_node(pods: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """GPUs requested per node name by the pods bound to it that have not finished (an object
    with a ``gpus`` count, such as a projected DRA claim, counts that instead)."""
    used: dict[str, int] = {}
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if node_name and phase not in ("Succeeded", "Failed"):
            gpus = _int(pod["gpus"]) if "gpus" in pod else requested_gpus(pod)
            used[node_name] = used.get(node_name, 0) + (gpus or 0)
    return used


def inventory_from_nodes(
    nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]] = ()
) -> GpuInventory:
    """GPU nodes from Node objects; with ``pods``, free GPUs = allocatable − GPUs requested by
    pods bound to the node that have not finished. Nodes without a GPU product label or
    allocatable GPUs are left out."""
    return inventory_from_usage(nodes, gpus_by_node(pods))


def inventory_from_usage(
    nodes: Iterable[Mapping[str, Any]],
    used: Mapping[str, int],
    slices: Iterable[Mapping[str, Any]] = (),
) -> GpuInventory:
    """``inventory_from_nodes`` with the GPUs in use per node already summed
    (``gpus_by_node``, plus the devices of allocated claims): a caller that plans many
    deployments against one pod list sums once. ``slices``: the DRA driver's ResourceSlices."""
    parsed = []
    dra = dra_node_facts(slices)
    for node in nodes:
        metadata = node.get("metadata") or {}
        labels = metadata.get("labels") or {}
        product = labels.get(PRODUCT_LABEL)
        status = node.get("status") or {}
        allocatable = _int((status.get("allocatable") or {}).get(GPU_RESOURCE)) or 0
        name = str(metadata.get("name", ""))
        conditions = status.get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        schedulable = not (node.get("spec") or {}).get("unschedulable", False)
        facts = dra.get(name)
        if facts is not None:
            parsed.append(
                GpuNode(
                    name=name,
                    product=facts["product"],
                    gpus=facts["gpus"],
                    free_gpus=max(0, facts["gpus"] - used.get(name, 0)),
                    memory_mib=facts["memory_mib"],
                    compute_capability=facts["capability"],
                    ready=ready or not conditions,
                    schedulable=schedulable,
                    allocation="DRA",
                )
            )
        if not product or allocatable <= 0:
            continue
        major, minor = _int(labels.get(MAJOR_LABEL)), _int(labels.get(MINOR_LABEL))
        parsed.append(
            GpuNode(
                name=name,
                product=str(product),
                gpus=allocatable,
                free_gpus=max(0, allocatable - used.get(name, 0)),
                memory_mib=_int(labels.get(MEMORY_LABEL)),
                compute_capability=(major, minor or 0) if major is not None else None,
                ready=ready or not conditions,
                schedulable=schedulable,
            )
        )
    parsed.sort(key=lambda n: (n.product, n.name, n.allocation))
    return GpuInventory(tuple(parsed))


def with_usage(
    inventory: GpuInventory, used: Mapping[str, int], only: Iterable[str] | None = None
) -> GpuInventory:
    """``inventory`` with the free GPUs of its nodes (of those named in ``only``, if given)
    recounted from ``used`` (GPUs in use per node): what ``inventory_from_usage`` of the same
    Node objects gives with ``used``, without parsing them again. Nodes whose count is the same
    stay the same objects."""
    names = None if only is None else frozenset(only)

    def recounted(node: GpuNode) -> GpuNode:
        if names is not None and node.name not in names:
            return node
        free = max(0, node.gpus - used.get(node.name, 0))
        return node if free == node.free_gpus else replace(node, free_gpus=free)

    nodes = tuple(recounted(node) for node in inventory.nodes)
    changed = any(new is not old for new, old in zip(nodes, inventory.nodes, strict=True))
    return GpuInventory(nodes) if changed else inventory
