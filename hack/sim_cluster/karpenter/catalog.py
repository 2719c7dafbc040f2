"""The instance types the kwok provider offers, generated from the simulator's GPU table.

For every catalog GPU: nodes of 1, 2, 4 and 8 of them, up to the product's usual server build
(``gpus_per_node``: 8 for HGX boards, 4 for a GB200/GB300 compute tray). Named like the simulated
nodes' instance type, ``sim-<gpus>x-<product in lower case>`` (``sim-8x-nvidia-h200``). Resources as
a ResourceList (Karpenter's kwok ``--instance-types-file-path`` format): host CPU and memory in
proportion to the GPUs (an 8-GPU HGX node: 224 CPUs, 2 TiB, as DGX H200/B200 datasheets give;
a Grace tray: 144 Arm cores and 960 GiB for 4 GPUs), ``nvidia.com/gpu``, 110 pods.

Offerings: on-demand and spot in two zones, at a placeholder price proportional to the GPUs'
memory (Karpenter picks the cheapest compatible offering; no real price is claimed). The GPU
Feature Discovery labels are *not* offering requirements: a cloud provider does not know them
(GFD sets them on the running node, ``adopt`` plays that); were they offerings, Karpenter could
select instance types by ``nvidia.com/gpu.product`` here and on no real cloud.
"""

from __future__ import annotations

import re
from typing import Any

from nemotron_sim.agents.node_objects import instance_type_name
from nemotron_sim.gpus import Gpu, gpus, lookup_gpu

ZONES = ("sim-zone-a", "sim-zone-b")
CAPACITY_TYPES = {"on-demand": 1.0, "spot": 0.4}  # price factor
SIZES = (1, 2, 4, 8)
MAX_PODS = 110
_NAME = re.compile(r"^sim-(?P<gpus>[0-9]+)x-(?P<product>.+)$")


def grace(gpu: Gpu) -> bool:
    """A Grace-Blackwell part (GB200, GB300, GB10): its host CPU is Arm."""
    return gpu.name.upper().startswith("NVIDIA-GB")


def host(gpu: Gpu, gpus: int) -> tuple[int, int]:
    """(CPUs, memory GiB) of a node with ``gpus`` of ``gpu``."""
    if grace(gpu):
        return 36 * gpus, 240 * gpus
    return 28 * gpus, 256 * gpus


def instance_type(gpu: Gpu, gpus: int) -> dict[str, Any]:
    cpu, memory_gib = host(gpu, gpus)
    price = round(gpus * gpu.memory_gib / 20.0, 4)
    return {
        "name": instance_type_name(gpu.name, gpus),
        "architecture": "arm64" if grace(gpu) else "amd64",
        "operatingSystems": ["linux"],
        "resources": {
            "cpu": str(cpu),
            "memory": f"{memory_gib}Gi",
            "ephemeral-storage": f"{480 * gpus}Gi",
            "nvidia.com/gpu": str(gpus),
            "pods": str(MAX_PODS),
        },
        "offerings": [
            {
                "Price": round(price * factor, 4),
                "Available": True,
                "Requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [kind]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]},
                ],
            }
            for kind, factor in CAPACITY_TYPES.items()
            for zone in ZONES
        ],
    }


def instance_types() -> list[dict[str, Any]]:
    return [
        instance_type(gpu, count) for gpu in gpus() for count in SIZES if count <= gpu.gpus_per_node
    ]


def gpus_of(name: str) -> tuple[Gpu, int] | None:
    """The catalog GPU and count of an instance type of ``instance_types()``; None for another."""
    match = _NAME.match(name)
    if match is None:
        return None
    gpu = next((g for g in gpus() if g.name.lower() == match["product"]), None)
    gpu = gpu or lookup_gpu(match["product"])
    return None if gpu is None else (gpu, int(match["gpus"]))
