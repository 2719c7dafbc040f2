"""The GPU catalog: products by their GPU Feature Discovery names, with device-reported memory.

Sources (docs/model-facts.md §5): memory is nvidia-smi ``memory.total`` in MiB as
quoted by vendor logs and blog posts [B]; the GFD product name follows the NVIDIA
k8s-device-plugin rule (NVML name, characters outside ``[A-Za-z0-9-_. ]`` removed, whitespace runs
→ ``-``) [P]; compute capability, FP8/FP4 tensor cores and scale-up fabric from NVIDIA's product
pages [B]. GPUs per node is the usual server build (HGX boards hold 8; GB200/GB300 compute trays
hold 4); a real cluster's nodes override it through the GPU inventory.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

MIB = 1024**2
GIB = 1024**3

Family = Literal["ampere", "ada-lovelace", "hopper", "blackwell"]


@dataclass(frozen=True)
class GpuProduct:
    """One GPU product. ``memory_bytes`` is what the device reports (what vLLM's
    ``gpu_memory_utilization`` multiplies), not the marketed figure."""

    name: str  # GFD nvidia.com/gpu.product
    display_name: str
    memory_bytes: int
    memory_reported: bool  # False: GFD sets no nvidia.com/gpu.memory label (unified memory)
    compute_capability: tuple[int, int]
    family: Family
    fp8: bool  # FP8 tensor cores
    fp4: bool  # FP4 tensor cores
    gpus_per_node: int
    interconnect: str
    aliases: tuple[str, ...] = ()
    source: str = "model-facts.md §5"
    note: str | None = None

    @property
    def memory_mib(self) -> int:
        return self.memory_bytes // MIB

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GIB

    @property
    def compute_capability_str(self) -> str:
        return f"{self.compute_capability[0]}.{self.compute_capability[1]}"


GPUS: tuple[GpuProduct, ...] = (
    GpuProduct(
        name="NVIDIA-H100-80GB-HBM3",
        display_name="H100 SXM 80GB",
        memory_bytes=81559 * MIB,  # nvidia-smi 81559 MiB [B]
        memory_reported=True,
        compute_capability=(9, 0),
        family="hopper",
        fp8=True,
        fp4=False,
        gpus_per_node=8,
        interconnect="NVLink4 900 GB/s, 8 per HGX node",
        aliases=("h100", "h100-80gb", "h100-sxm"),
    ),
    GpuProduct(
        name="NVIDIA-H200",
        display_name="H200 141GB",
        memory_bytes=143771 * MIB,  # nvidia-smi 143771 MiB [B]
        memory_reported=True,
        compute_capability=(9, 0),
        family="hopper",
        fp8=True,
        fp4=False,
        gpus_per_node=8,
        interconnect="NVLink4 900 GB/s, 8 per HGX node",
        aliases=("h200",),
    ),
    GpuProduct(
        name="NVIDIA-B200",
        display_name="B200 180GB",
        memory_bytes=183359 * MIB,  # nvidia-smi 183359 MiB [B]
        memory_reported=True,
        compute_capability=(10, 0),
        family="blackwell",
        fp8=True,
        fp4=True,
        gpus_per_node=8,
        interconnect="NVLink5 1.8 TB/s, 8 per HGX node",
        aliases=("b200",),
    ),
    GpuProduct(
        name="NVIDIA-B300-SXM6-AC",
        display_name="B300 SXM6 288GB",
        memory_bytes=275040 * MIB,  # nvidia-smi 275040 MiB [B]
        memory_reported=True,
        compute_capability=(10, 3),
        family="blackwell",
        fp8=True,
        fp4=True,
        gpus_per_node=8,
        interconnect="NVLink5 1.8 TB/s, 8 per HGX node",
        aliases=("b300", "nvidia-b300"),
    ),
    GpuProduct(
        name="NVIDIA-GB200",
        display_name="GB200 (Grace Blackwell)",
        memory_bytes=189471 * MIB,  # nvidia-smi 189471 MiB [B]
        memory_reported=True,
        compute_capability=(10, 0),
        family="blackwell",
        fp8=True,
        fp4=True,
        gpus_per_node=4,
        interconnect="NVLink5, 4 GPUs per compute tray, 72 per NVL72 domain",
        aliases=("gb200",),
    ),
    GpuProduct(
        name="NVIDIA-GB300",
        display_name="GB300 (Grace Blackwell Ultra)",
        memory_bytes=284208 * MIB,  # nvidia-smi 284208 MiB [B]
        memory_reported=True,
        compute_capability=(10, 3),
        family="blackwell",
        fp8=True,
        fp4=True,
        gpus_per_node=4,
        interconnect="NVLink5, 4 GPUs per compute tray, 72 per NVL72 domain",
        aliases=("gb300",),
    ),
    GpuProduct(
        name="NVIDIA-GB10",
        display_name="GB10 (DGX Spark)",
        # nvidia-smi reports N/A and GFD omits the memory label [B]; 128 GB LPDDR5x unified memory
        # is shared with the CPU, so the planner takes the marketed 128 GB and says so.
        memory_bytes=128 * 10**9,
        memory_reported=False,
        compute_capability=(12, 1),
        family="blackwell",
        fp8=True,
        fp4=True,
        gpus_per_node=1,
        interconnect="1 GPU per unit; 2 units over ConnectX-7 200 GbE",
        aliases=("gb10", "dgx-spark", "spark"),
        note="unified memory shared with the CPU and the page cache: keep "
        "gpuMemoryUtilization at or below 0.85",
    ),
    GpuProduct(
        name="NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
        display_name="RTX PRO 6000 Blackwell Server Edition 96GB",
        memory_bytes=97887 * MIB,  # nvidia-smi 97887 MiB [B]
        memory_reported=True,
        compute_capability=(12, 0),
        family="blackwell",
        fp8=True,
        fp4=True,
        gpus_per_node=8,
        interconnect="PCIe only (no NVLink)",
        aliases=("rtx-pro-6000", "rtx6000", "rtx-pro-6000-server"),
    ),
    GpuProduct(
        name="NVIDIA-L40S",
        display_name="L40S 48GB",
        memory_bytes=46068 * MIB,  # nvidia-smi 46068 MiB [B]
        memory_reported=True,
        compute_capability=(8, 9),
        family="ada-lovelace",
        fp8=True,
        fp4=False,
        gpus_per_node=8,
        interconnect="PCIe only (no NVLink)",
        aliases=("l40s",),
    ),
    GpuProduct(
        name="NVIDIA-A100-SXM4-80GB",
        display_name="A100 SXM4 80GB",
        memory_bytes=81920 * MIB,  # nvidia-smi 81920 MiB [B]
        memory_reported=True,
        compute_capability=(8, 0),
        family="ampere",
        fp8=False,
        fp4=False,
        gpus_per_node=8,
        interconnect="NVLink3 600 GB/s, 8 per HGX node",
        aliases=("a100", "a100-80gb"),
    ),
)

_BY_KEY: dict[str, GpuProduct] = {}
for _gpu in GPUS:
    for _key in (_gpu.name, *_gpu.aliases):
        _BY_KEY[_key.lower()] = _gpu


def lookup_gpu(name: str) -> GpuProduct | None:
    """A catalog GPU by GFD product name (case-insensitive) or short alias (``h200``).

    GFD appends ``-SHARED`` to time-sliced GPUs; such a product is the same silicon, so it
    resolves to the base entry with the shared name kept.
    """
    key = name.strip().lower()
    found = _BY_KEY.get(key)
    if found is not None:
        return found
    if key.endswith("-shared"):
        base = _BY_KEY.get(key.removesuffix("-shared"))
        if base is not None:
            return _renamed(base, name.strip())
    return None


def _renamed(gpu: GpuProduct, name: str) -> GpuProduct:
    return replace(gpu, name=name, aliases=())
