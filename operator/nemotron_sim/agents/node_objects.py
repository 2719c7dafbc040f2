"""Simulated GPU nodes, one :class:`NodeGroup` of alike nodes at a time (the simulated cluster
reads groups from a compact description such as ``NVIDIA-H200:8x2,NVIDIA-B200:8x1``:
sim_cluster.node_spec).

Nodes carry the labels GPU Feature Discovery sets (model-facts §5), allocatable
``nvidia.com/gpu``, and the ``nvidia.com/gpu=present:NoSchedule`` taint GPU node pools commonly
have (GKE adds exactly this taint to GPU node pools).

A ``dra`` group has nodes whose GPUs are published by NVIDIA's DRA driver instead (a simulated
add-on of the cluster's): no device plugin, so no ``nvidia.com/gpu`` resource and no GFD
product labels — only ``nvidia.com/gpu.present`` and the taint. Such nodes are named
``sim-<product>-dra-<i>``, so one product may appear once per kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nemotron_sim.gpus import gpus, lookup_gpu

SIMULATED_LABEL = "sim.nemotron.io/simulated"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}

# Host size of an 8-GPU HGX/DGX-class node. DGX H200 and DGX B200 datasheets: two Xeon
# Platinum CPUs with 112 cores in total (224 hardware threads) and 2 TB of system memory.
NODE_CPU = 224
NODE_MEMORY_GIB = 2048
# What a kubelet typically keeps for the system (kube-reserved + system-reserved), simulated.
RESERVED_CPU = 4
RESERVED_MEMORY_GIB = 32
MAX_PODS = 110  # the kubelet's default --max-pods
KUBELET_VERSION = "v0.0.0-sim"  # the cluster passes the control plane's version


class NodeSpecError(ValueError):
    """A node group cannot be built (an unknown GPU product, a description that cannot be read)."""


@dataclass(frozen=True)
class NodeGroup:
    product: str
    gpus_per_node: int
    nodes: int
    dra: bool = False  # GPUs published as ResourceSlices by a DRA driver, not a device plugin


@dataclass(frozen=True)
class GpuFacts:
    """What GPU Feature Discovery would read from NVML for one product."""

    memory_mib: int | None  # None: NVML reports no dedicated memory (GB10), label omitted
    compute_major: int
    compute_minor: int
    family: str


def gpu_facts(product: str) -> GpuFacts:
    """GFD's view of a GPU; the simulated nodes take their numbers from the simulator's GPU table
    (nemotron_sim.gpus), never from the operator's catalog."""
    gpu = lookup_gpu(product)
    if gpu is None:
        known = ", ".join(g.name for g in gpus())
        raise NodeSpecError(f"unknown GPU product {product!r}; the simulated cluster has: {known}")
    major, minor = gpu.compute_capability
    memory = gpu.memory_mib if gpu.memory_reported else None
    return GpuFacts(memory_mib=memory, compute_major=major, compute_minor=minor, family=gpu.family)


def node_name(product: str, index: int, *, dra: bool = False) -> str:
    short = product.lower().removeprefix("nvidia-")
    return f"sim-{short}-dra-{index}" if dra else f"sim-{short}-{index}"


def instance_type_name(product: str, gpus: int) -> str:
    """The ``node.kubernetes.io/instance-type`` of a simulated node (and of the Karpenter
    instance type with the same GPUs: sim_cluster.karpenter.catalog)."""
    return f"sim-{gpus}x-{product.lower()}"


def gfd_labels(product: str, gpus: int, facts: GpuFacts) -> dict[str, str]:
    """The labels GPU Feature Discovery puts on a node with ``gpus`` GPUs of ``product``."""
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(gpus),
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/gpu.family": facts.family,
        "nvidia.com/gpu.compute.major": str(facts.compute_major),
        "nvidia.com/gpu.compute.minor": str(facts.compute_minor),
    }
    if facts.memory_mib is not None:
        labels["nvidia.com/gpu.memory"] = str(facts.memory_mib)
    return labels


def build_node(
    group: NodeGroup,
    index: int,
    facts: GpuFacts,
    internal_ip: str,
    kubelet_version: str = KUBELET_VERSION,
) -> dict[str, Any]:
    """A Node object as a kubelet plus GPU Feature Discovery would register it (a DRA group's:
    as a kubelet with NVIDIA's DRA driver, whose GPUs are in ResourceSlices instead)."""
    name = node_name(group.product, index, dra=group.dra)
    gpus = str(group.gpus_per_node)
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": instance_type_name(group.product, group.gpus_per_node),
        SIMULATED_LABEL: "true",
        **gfd_labels(group.product, group.gpus_per_node, facts),
    }
    if group.dra:
        labels = {k: v for k, v in labels.items() if not k.startswith("nvidia.com/gpu.")}
        labels["nvidia.com/gpu.present"] = "true"
    capacity = {
        "cpu": str(NODE_CPU),
        "memory": f"{NODE_MEMORY_GIB}Gi",
        "nvidia.com/gpu": gpus,
        "pods": str(MAX_PODS),
        "ephemeral-storage": "3840Gi",
    }
    if group.dra:
        del capacity["nvidia.com/gpu"]
    allocatable = {
        **capacity,
        "cpu": str(NODE_CPU - RESERVED_CPU),
        "memory": f"{NODE_MEMORY_GIB - RESERVED_MEMORY_GIB}Gi",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"sim.nemotron.io/note": "simulated node: no real GPU behind it"},
        },
        "spec": {"providerID": f"sim://{name}", "taints": [dict(GPU_TAINT)]},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": ready_conditions(),
            "addresses": [
                {"type": "InternalIP", "address": internal_ip},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "kubeletVersion": kubelet_version,
                "kubeProxyVersion": kubelet_version,
                "containerRuntimeVersion": "sim://1.0",
                "osImage": "Simulated GPU node (nemotron-operator sim)",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "kernelVersion": "sim",
                "machineID": name,
                "systemUUID": name,
                "bootID": name,
            },
        },
    }


SYSTEM_CPU = 16
SYSTEM_MEMORY_GIB = 64


def build_system_node(
    index: int, internal_ip: str, kubelet_version: str = KUBELET_VERSION
) -> dict[str, Any]:
    """A node without GPUs or taints, where controllers (the operator itself) can run."""
    name = f"sim-system-{index}"
    capacity = {
        "cpu": str(SYSTEM_CPU),
        "memory": f"{SYSTEM_MEMORY_GIB}Gi",
        "pods": str(MAX_PODS),
        "ephemeral-storage": "500Gi",
    }
    node = build_node(NodeGroup("system", 0, 1), index, GpuFacts(None, 0, 0, ""), internal_ip,
                      kubelet_version)  # fmt: skip
    node["metadata"]["name"] = name
    node["metadata"]["labels"] = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "sim-cpu-16",
        SIMULATED_LABEL: "true",
    }
    node["metadata"]["annotations"] = {"sim.nemotron.io/note": "simulated node without GPUs"}
    node["spec"] = {"providerID": f"sim://{name}"}
    node["status"]["capacity"] = capacity
    node["status"]["allocatable"] = {**capacity, "cpu": str(SYSTEM_CPU - 1)}
    node["status"]["addresses"][1]["address"] = name
    for key in ("machineID", "systemUUID", "bootID"):
        node["status"]["nodeInfo"][key] = name
    node["status"]["nodeInfo"]["osImage"] = "Simulated CPU node (nemotron-operator sim)"
    return node


def ready_conditions(now: str | None = None) -> list[dict[str, str]]:
    """A healthy kubelet's node conditions; with ``now``, its heartbeat and transition times."""
    healthy = [
        ("MemoryPressure", "KubeletHasSufficientMemory"),
        ("DiskPressure", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "KubeletHasSufficientPID"),
    ]
    conditions = [
        {"type": kind, "status": "False", "reason": reason, "message": "simulated"}
        for kind, reason in healthy
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "simulated kubelet is posting ready status",
        }
    )
    if now is not None:
        for condition in conditions:
            condition["lastHeartbeatTime"] = condition["lastTransitionTime"] = now
    return conditions


def build_nodes(
    groups: list[NodeGroup],
    facts_for: Callable[[str], GpuFacts],
    allocate_ip: Callable[[], str],
    kubelet_version: str = KUBELET_VERSION,
) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    for group in groups:
        facts = facts_for(group.product)
        nodes.extend(
            build_node(group, index, facts, allocate_ip(), kubelet_version)
            for index in range(group.nodes)
        )
    return nodes
