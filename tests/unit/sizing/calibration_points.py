"""vLLM startup logs published for Nemotron-H family models, as calibration points.

Each point is what one public log shows: the model, the GPU, the layout, the engine settings, and
the numbers vLLM printed ("Model loading took X GiB", "Available KV cache memory: Y GiB", "GPU KV
cache size: N tokens", "Maximum concurrency for L tokens per request: Cx") or that it refused to
start. docs/sizing.md §9 tabulates them with the planner's error before and after the fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from nemotron_operator.catalog import GpuProduct, lookup_gpu
from nemotron_operator.catalog.gpus import GIB, MIB

LIGHTNING_NVFP4 = "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"
ULTRA_NVFP4 = "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4"
ULTRA_BF16 = "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16"
SUPER_FP8 = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"
NO_MTP = {"speculativeDecoding": {"method": "none"}}


def _gpu(name: str) -> GpuProduct:
    gpu = lookup_gpu(name)
    assert gpu is not None, name
    return gpu


# GeForce cards are outside the catalog; the log gives their size. RTX 5090: nvidia-smi 32607 MiB
# [B]; the log's own "0.8500 is equivalent to 0.8348 without CUDA graph profiling" with 0.48 GiB of
# graphs implies 31.6 ± 0.3 GiB [D], consistent. The 24 GB laptop card logs "total capacity of
# 23.42 GiB" itself.
RTX_5090 = replace(
    _gpu("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"),
    name="NVIDIA-GeForce-RTX-5090",
    memory_bytes=32607 * MIB,
    gpus_per_node=1,
)
RTX_24GB = replace(RTX_5090, name="NVIDIA-GeForce-RTX-5090-Laptop", memory_bytes=int(23.42 * GIB))
GB10 = _gpu("NVIDIA-GB10")
B200 = _gpu("NVIDIA-B200")
H100 = _gpu("NVIDIA-H100-80GB-HBM3")


@dataclass(frozen=True)
class LogPoint:
    name: str
    source: str  # repository + path, or URL / thread
    vllm: str
    model_id: str  # the catalog entry whose architecture the logged checkpoint has
    gpu: GpuProduct
    tensor_parallel: int
    engine: dict[str, Any]
    started: bool
    # The logged checkpoint is the catalog entry itself (not a community quantization of the same
    # architecture), so "Model loading took" checks the planner's weights.
    same_checkpoint: bool = True
    weights_gib: float | None = None  # "Model loading took X GiB"
    kv_gib: float | None = None  # "Available KV cache memory: Y GiB"
    kv_tokens: int | None = None  # "GPU KV cache size: N tokens"
    concurrency: float | None = None  # "Maximum concurrency for L tokens per request: Cx"
    gpu_memory_known: bool = True  # the device total vLLM multiplies is known
    # The logged pool depends only on what the planner models (no LoRA buffers, no CPU offload).
    pool_comparable: bool = True
    why: str = ""
    extra: dict[str, float] = field(default_factory=dict)


def _ultra_gb10(budget_gib: int, mtp: int, length: int, seqs: int, batched: int) -> dict[str, Any]:
    # The recipe patches vLLM to take the budget in GiB (--gpu-memory-utilization-gb); as a
    # fraction of the catalog's 128 GB that is the same requested size.
    spec = {"method": "mtp", "numSpeculativeTokens": mtp} if mtp else {"method": "none"}
    return {
        "gpuMemoryUtilization": round(budget_gib * GIB / GB10.memory_bytes, 6),
        "maxModelLen": length,
        "kvCacheDtype": "fp8",
        "maxNumSeqs": seqs,
        "maxNumBatchedTokens": batched,
        "speculativeDecoding": spec,
    }


_MUTS = "blog.muts.link/resources/recipes/nemotron-3-ultra-nvfp4.yaml (budget tightrope, 2026-06)"

POINTS: tuple[LogPoint, ...] = (
    LogPoint(
        name="Lightning NVFP4, 1xGB10, 64K",
        source=(
            "damienjose/nvidia-oci-samples dgx-spark-samples/nemotron-lightning-vllm-endpoint/"
            "README.md 'Measured On One DGX Spark'"
        ),
        vllm="0.27.1",
        model_id=LIGHTNING_NVFP4,
        gpu=GB10,
        tensor_parallel=1,
        # serve.sh defaults: util 0.92 (vLLM's), fp8 KV pinned by the checkpoint, fp32 SSM from
        # its config, no MTP; 376.95 = 7539 blocks / 20 proves one Mamba slot (no prefix cache).
        engine={
            "maxModelLen": 65536,
            "gpuMemoryUtilization": 0.92,
            "kvCacheDtype": "fp8",
            "enablePrefixCaching": False,
            **NO_MTP,
        },
        started=True,
        weights_gib=17.85,
        kv_gib=90.08,
        kv_tokens=24_703_795,
        concurrency=376.95,
        extra={"peakActivationGiB": 2.23, "cudaGraphGiB": 0.44},
        why="GB10 reports no memory total; the catalog's 128 GB is assumed",
    ),
    LogPoint(
        name="Nano-3 architecture NVFP4 (Cascade-2), 1xRTX 5090, 256K",
        source=(
            "public docker-compose + vLLM log of chankhavu/Nemotron-Cascade-2-30B-A3B-NVFP4, "
            "2026-05-01 (search index file 51923877316)"
        ),
        vllm="0.20.1rc1",
        model_id=LIGHTNING_NVFP4,  # the Nemotron 3 Nano 30B-A3B layer stack, without MTP
        gpu=RTX_5090,
        tensor_parallel=1,
        engine={
            "maxModelLen": 256000,
            "gpuMemoryUtilization": 0.85,
            "kvCacheDtype": "fp8_e4m3",
            "enablePrefixCaching": False,
            "maxNumSeqs": 128,
            "maxNumBatchedTokens": 32768,
            **NO_MTP,
        },
        started=True,
        same_checkpoint=False,
        weights_gib=18.54,
        kv_gib=3.72,
        kv_tokens=1_206_303,
        concurrency=4.71,
        extra={"cudaGraphGiB": 0.48},
        why="community NVFP4 quantization: its weights are the log's, not the recipe's",
    ),
    LogPoint(
        name="Ultra BF16, 8xB200 TP8, 256K, LoRA rank 64",
        source=(
            "public Ultra sampler profile (vLLM LoRA serving / 256k-context profile, search "
            "index file 63006066000), section 2"
        ),
        vllm="0.22.0",
        model_id=ULTRA_BF16,
        gpu=B200,
        tensor_parallel=8,
        # max_loras 1, rank 64, --disable-custom-all-reduce; no MTP (block 2080 = S 0); 5.44 =
        # 713 blocks / 131 proves one Mamba slot per group (no prefix caching).
        engine={
            "maxModelLen": 262144,
            "gpuMemoryUtilization": 0.92,
            "maxNumSeqs": 512,
            "enablePrefixCaching": False,
            **NO_MTP,
        },
        started=True,
        kv_gib=8.49,
        kv_tokens=1_426_783,
        concurrency=5.44,
        pool_comparable=False,
        why="≈10 GiB per GPU of MoE-LoRA buffers, which the planner does not model",
    ),
    LogPoint(
        name="Nemotron-Labs Elastic 30B-A3B NVFP4, 24 GB laptop GPU, 32K",
        source="airelien.dev/en/posts/nemotron-nvfp4-blackwell-mobile-166-tps (pass 1)",
        vllm="nightly (2026-05)",
        model_id=LIGHTNING_NVFP4,
        gpu=RTX_24GB,
        tensor_parallel=1,
        engine={"maxModelLen": 32768, "gpuMemoryUtilization": 0.92, **NO_MTP},
        started=False,
        same_checkpoint=False,
        why="CUDA out of memory while capturing graphs (HAMi held 0.6 GB of the card)",
    ),
    LogPoint(
        name="Nemotron 3 Super on 2xH100, vLLM defaults",
        source=(
            "NVIDIA-AI-Blueprints/retail-shopping-assistant pull request #95: 'max_num_seqs "
            "(1024) exceeds available Mamba cache blocks (524)'"
        ),
        vllm=">= 0.19",
        model_id=SUPER_FP8,  # the PR does not name the precision; FP8 is the 2xH100 minimum
        gpu=H100,
        tensor_parallel=2,
        engine={},
        started=False,
        gpu_memory_known=True,
        why="vLLM refused: max_num_seqs 1024 > 524 Mamba cache blocks",
    ),
    LogPoint(
        name="Ultra NVFP4, 4xGB10 TP4, 95 GiB, MTP 3",
        source=_MUTS + " attempt 2",
        vllm="0.22.1rc1",
        model_id=ULTRA_NVFP4,
        gpu=GB10,
        tensor_parallel=4,
        engine=_ultra_gb10(95, 3, 262144, 6, 8192),
        started=False,
        why="KV cache allocation failed in unified memory",
    ),
    LogPoint(
        name="Ultra NVFP4, 4xGB10 TP4, 95 GiB, no MTP",
        source=_MUTS + " attempt 3",
        vllm="0.22.1rc1",
        model_id=ULTRA_NVFP4,
        gpu=GB10,
        tensor_parallel=4,
        engine=_ultra_gb10(95, 0, 262144, 6, 8192),
        started=False,
        why="KV cache allocation failed in unified memory",
    ),
    LogPoint(
        name="Ultra NVFP4, 4xGB10 TP4, 105 GiB, no MTP, 128K",
        source=_MUTS + " attempt 4",
        vllm="0.22.1rc1",
        model_id=ULTRA_NVFP4,
        gpu=GB10,
        tensor_parallel=4,
        engine=_ultra_gb10(105, 0, 131072, 6, 8192),
        started=True,
    ),
    LogPoint(
        name="Ultra NVFP4, 4xGB10 TP4, 105 GiB, MTP 5, 64K",
        source=_MUTS + " attempt 5",
        vllm="0.22.1rc1",
        model_id=ULTRA_NVFP4,
        gpu=GB10,
        tensor_parallel=4,
        engine=_ultra_gb10(105, 5, 65536, 6, 16384),
        started=True,
    ),
    LogPoint(
        name="Ultra NVFP4, 4xGB10 TP4, 105 GiB, MTP 3, 256K",
        source=_MUTS + " attempt 6",
        vllm="0.22.1rc1",
        model_id=ULTRA_NVFP4,
        gpu=GB10,
        tensor_parallel=4,
        engine=_ultra_gb10(105, 3, 262144, 4, 16384),
        started=True,
    ),
)
