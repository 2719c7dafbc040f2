"""The simulated DRA driver: ResourceSlices for the nodes of ``PRODUCT:GPUSxNODES:dra`` groups,
and the ``gpu.nvidia.com`` DeviceClass, as NVIDIA's DRA driver for GPUs publishes them.

What the real driver publishes (NVIDIA/k8s-dra-driver-gpu, ``cmd/gpu-kubelet-plugin/
deviceinfo.go``, ``GpuInfo.GetDevice``): per node one pool named after the node, one device per
GPU named ``gpu-<minor>``, with the attributes ``type`` ("gpu"), ``uuid``, ``productName`` (NVML's
name, e.g. "NVIDIA H200"; GPU Feature Discovery's label is the same with spaces as dashes),
``brand``, ``architecture``, ``cudaComputeCapability``, ``driverVersion``,
``cudaDriverVersion``, ``pcieBusID``, ``addressingMode``, and the capacity ``memory`` in bytes.
Its Helm chart installs the DeviceClass ``gpu.nvidia.com`` selecting
``device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'``;
the simulated cluster installs the same one when it has DRA nodes. kube-scheduler allocates
claims from these slices; kube-controller-manager creates claims from templates. Nothing here
allocates.
"""

from __future__ import annotations

import uuid
from typing import Any

from nemotron_operator.kube.errors import ApiError
from nemotron_operator.kube.transport import Transport
from nemotron_sim.agents.node_objects import GpuFacts, NodeGroup, gpu_facts, node_name
from nemotron_sim.kubeapi.kinds import RESOURCE_SLICES
from nemotron_sim.kubeapi.resources import ResourceKey
from nemotron_sim.kubelet.claims import DRIVER

DEVICE_CLASS = "gpu.nvidia.com"
DEVICE_CLASSES = ResourceKey("resource.k8s.io", "v1", "deviceclasses")
# Versions a driver of late 2026 reports (the values only need to be valid versions).
DRIVER_VERSION = "580.95.5"
CUDA_DRIVER_VERSION = "13.0.0"


def product_name(product: str) -> str:
    """NVML's product name for a GPU Feature Discovery name (GFD replaces spaces by dashes)."""
    return product.replace("-", " ")


def device(product: str, facts: GpuFacts, node: str, minor: int) -> dict[str, Any]:
    """One GPU as the driver's ``GpuInfo.GetDevice`` describes it."""
    attributes: dict[str, dict[str, Any]] = {
        "type": {"string": "gpu"},
        "uuid": {"string": f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}.{minor}')}"},
        "productName": {"string": product_name(product)},
        "brand": {"string": "Nvidia"},
        "architecture": {"string": facts.family.replace("-", " ").title()},
        "cudaComputeCapability": {"version": f"{facts.compute_major}.{facts.compute_minor}.0"},
        "driverVersion": {"version": DRIVER_VERSION},
        "cudaDriverVersion": {"version": CUDA_DRIVER_VERSION},
        "pcieBusID": {"string": f"0000:{0x18 + 0x10 * minor:02x}:00.0"},
        "addressingMode": {"string": "None"},
    }
    entry: dict[str, Any] = {"name": f"gpu-{minor}", "attributes": attributes}
    if facts.memory_mib is not None:
        entry["capacity"] = {"memory": {"value": f"{facts.memory_mib}Mi"}}
    return entry


def build_resource_slice(group: NodeGroup, index: int, node_uid: str) -> dict[str, Any]:
    """The one ResourceSlice of a DRA node: its pool, named after the node, holds every GPU."""
    node = node_name(group.product, index, dra=True)
    facts = gpu_facts(group.product)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{node}-{DRIVER}",
            # As the kubelet plugin's slices: owned by their Node, gone with it.
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid}
            ],
        },
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [device(group.product, facts, node, i) for i in range(group.gpus_per_node)],
        },
    }


def device_class() -> dict[str, Any]:
    """The DeviceClass NVIDIA's DRA driver chart installs for whole GPUs."""
    selector = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'gpu'"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": selector}}]},
    }


async def publish(api: Transport, groups: list[NodeGroup], node_uids: dict[str, str]) -> int:
    """Create the DeviceClass and every DRA node's slice (existing ones are kept); returns the
    number of slices."""
    slices = [
        build_resource_slice(group, index, node_uids[node_name(group.product, index, dra=True)])
        for group in groups
        if group.dra
        for index in range(group.nodes)
    ]
    if not slices:
        return 0
    for key, obj in ((DEVICE_CLASSES, device_class()), *((RESOURCE_SLICES, s) for s in slices)):
        try:
            await api.request("POST", key.path(), body=obj)
        except ApiError as error:
            if error.status != 409:
                raise
    return len(slices)
