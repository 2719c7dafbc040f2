"""The GPUs the simulated cluster can carry, as NVML and GPU Feature Discovery report them, from
the simulator's own data (``data/gpus.json``, which gives its sources). The simulated nodes, the
Karpenter provider's instance types and the stand-in vLLM's memory all read this table, never the
operator's GPU catalog: where the operator's catalog is wrong, the simulated hardware shows it."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, replace
from importlib import resources

MIB = 1024**2
GIB = 1024**3


@dataclass(frozen=True)
class Gpu:
    """One product. ``memory_bytes``: what the device reports (vLLM's total), or GB10's unified
    memory when NVML reports none (``memory_reported`` False: no ``gpu.memory`` label)."""

    name: str  # GFD nvidia.com/gpu.product
    memory_bytes: int
    memory_reported: bool
    compute_capability: tuple[int, int]
    family: str
    gpus_per_node: int
    aliases: tuple[str, ...] = ()

    @property
    def memory_mib(self) -> int:
        return self.memory_bytes // MIB

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GIB


@functools.cache
def gpus() -> tuple[Gpu, ...]:
    text = resources.files("nemotron_sim").joinpath("data/gpus.json").read_text("utf-8")
    return tuple(
        Gpu(
            name=entry["name"],
            memory_bytes=(
                entry["memoryMiB"] * MIB
                if entry["memoryMiB"] is not None
                else entry["unifiedMemoryBytes"]
            ),
            memory_reported=entry["memoryMiB"] is not None,
            compute_capability=(entry["computeCapability"][0], entry["computeCapability"][1]),
            family=entry["family"],
            gpus_per_node=entry["gpusPerNode"],
            aliases=tuple(entry["aliases"]),
        )
        for entry in json.loads(text)["gpus"]
    )


def lookup_gpu(name: str) -> Gpu | None:
    """A product by GFD name (case-insensitive) or short alias; ``-SHARED`` (GFD's suffix for
    time-sliced GPUs) resolves to the same silicon under the shared name."""
    key = name.strip().lower()
    for gpu in gpus():
        if key in (gpu.name.lower(), *gpu.aliases):
            return gpu
    if key.endswith("-shared"):
        base = lookup_gpu(key.removesuffix("-shared"))
        if base is not None:
            return replace(base, name=name.strip(), aliases=())
    return None
