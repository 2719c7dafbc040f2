"""GPUs published by NVIDIA's DRA driver: ResourceSlices as GPU nodes, ResourceClaims as GPUs in
use. Pure.

The driver (NVIDIA/k8s-dra-driver-gpu, ``cmd/gpu-kubelet-plugin/deviceinfo.go``) publishes, per
node, a pool named after the node with one device per GPU: attributes ``type`` ("gpu" for a whole
GPU), ``productName`` (NVML's name, "NVIDIA H200"; GPU Feature Discovery's label is the same with
dashes for spaces, which is how the planner names products), ``cudaComputeCapability`` (a
version, "9.0.0"), and the capacity ``memory``. kube-scheduler's allocation is in a claim's
``status.allocation``: one result per device (driver, pool, device) and the node selector of the
node they are on. docs/dra.md has the details.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

DRIVER = "gpu.nvidia.com"
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def gfd_name(product_name: str) -> str:
    """The driver's productName as GPU Feature Discovery spells it (and the planner)."""
    return product_name.strip().replace(" ", "-")


def _quantity_bytes(value: Any) -> int | None:
    text = str(value or "").strip()
    for suffixes in (_BINARY, _DECIMAL):
        for suffix, factor in suffixes.items():
            if text.endswith(suffix) and text[: -len(suffix)].isdigit():
                return int(text[: -len(suffix)]) * factor
    return int(text) if text.isdigit() else None


def _attribute(device: Mapping[str, Any], name: str) -> Any:
    value = (device.get("attributes") or {}).get(name) or {}
    return next(iter(value.values()), None) if isinstance(value, dict) else None


def _capability(version: Any) -> tuple[int, int] | None:
    parts = str(version or "").split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    return int(parts[0]), int(parts[1])


def slice_gpus(resource_slice: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The whole GPUs of one of the driver's slices: node, product, memory (MiB) and compute
    capability of each (other drivers' slices and MIG devices give none)."""
    spec = resource_slice.get("spec") or {}
    node = spec.get("nodeName")
    if spec.get("driver") != DRIVER or not node:
        return []
    gpus = []
    for device in spec.get("devices") or []:
        product = _attribute(device, "productName")
        if _attribute(device, "type") not in (None, "gpu") or not product:
            continue
        memory = ((device.get("capacity") or {}).get("memory") or {}).get("value")
        memory_bytes = _quantity_bytes(memory)
        gpus.append(
            {
                "node": str(node),
                "product": gfd_name(str(product)),
                "memory_mib": None if memory_bytes is None else memory_bytes // 2**20,
                "capability": _capability(_attribute(device, "cudaComputeCapability")),
            }
        )
    return gpus


def claim_node_gpus(claim: Mapping[str, Any]) -> tuple[str, int] | None:
    """(node, devices of the driver) a claim's allocation holds; None when not allocated."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = [
        r
        for r in (allocation.get("devices") or {}).get("results") or []
        if r.get("driver") == DRIVER
    ]
    if not results:
        return None
    node = None
    for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and len(field.get("values") or []) == 1:
                node = field["values"][0]
    node = node or results[0].get("pool")  # the driver names each node's pool after it
    return (str(node), len(results)) if node else None


def dra_node_facts(slices: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per node with the driver's GPUs: the product (most GPUs of it), GPU count, memory and
    compute capability."""
    by_node: dict[str, list[dict[str, Any]]] = {}
    for resource_slice in slices:
        for gpu in slice_gpus(resource_slice):
            by_node.setdefault(gpu["node"], []).append(gpu)
    facts = {}
    for node, gpus in by_node.items():
        products = [g["product"] for g in gpus]
        product = max(sorted(set(products)), key=products.count)
        same = [g for g in gpus if g["product"] == product]
        facts[node] = {
            "product": product,
            "gpus": len(same),
            "memory_mib": next((g["memory_mib"] for g in same if g["memory_mib"]), None),
            "capability": next((g["capability"] for g in same if g["capability"]), None),
        }
    return facts
