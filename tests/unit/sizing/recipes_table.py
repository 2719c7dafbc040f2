"""Published working layouts for this family (docs/sizing.md §10), each with its source."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SUPER = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-"
ULTRA = "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-"
SUPER_VL = "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"
SUPER_VL_BASE = "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-Base-BF16"
H100, H200, B200, B300 = (
    "NVIDIA-H100-80GB-HBM3",
    "NVIDIA-H200",
    "NVIDIA-B200",
    "NVIDIA-B300-SXM6-AC",
)
GB200, GB300, GB10 = "NVIDIA-GB200", "NVIDIA-GB300", "NVIDIA-GB10"
RTX6000 = "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"

VLLM_DEFAULTS: dict[str, Any] = {
    "gpuMemoryUtilization": 0.92,
    "speculativeDecoding": {"method": "none"},
}


def mtp(tokens: int) -> dict[str, Any]:
    return {"speculativeDecoding": {"method": "mtp", "numSpeculativeTokens": tokens}}


@dataclass(frozen=True)
class Recipe:
    name: str
    source: str
    model_id: str
    gpu: str
    tensor: int
    engine: dict[str, Any]
    pipeline: int = 1
    expert: bool | None = None


NVIDIA_COOKBOOK = "NVIDIA-NeMo/Nemotron usage-cookbook/Nemotron-3-Super/vllm_cookbook.ipynb"
VLLM_SUPER = "vllm-project/recipes models/nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16.yaml"
VLLM_ULTRA = "vllm-project/recipes models/nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.yaml"
TRTLLM_ULTRA = (
    "nvidia.github.io/TensorRT-LLM deployment-guide-for-nemotron-3-on-trtllm (NVFP4 minimums; "
    "the arithmetic is vLLM's)"
)
DYNAMO = "docs.dynamo.nvidia.com/dynamo/dev/recipes/nemotron-3-super"
DYNAMO_ULTRA = "docs.nvidia.com/dynamo/dev/recipes/nemotron-3-ultra (NVFP4 + FP8 KV, MTP 1)"
SEED_GUIDE = "issue 13 (the Super deployment guides this product grew from)"
FP8_KV: dict[str, Any] = {"kvCacheDtype": "fp8"}

RECIPES: tuple[Recipe, ...] = (
    Recipe(
        "Super BF16 4xH100 TP4",
        VLLM_SUPER + " (vLLM blog)",
        SUPER + "BF16",
        H100,
        4,
        {**VLLM_DEFAULTS, **FP8_KV},
    ),
    Recipe("Super FP8 4xH100 TP4", VLLM_SUPER, SUPER + "FP8", H100, 4, {**VLLM_DEFAULTS, **FP8_KV}),
    Recipe("Super NVFP4 2xB200 TP2", VLLM_SUPER, SUPER + "NVFP4", B200, 2, VLLM_DEFAULTS),
    Recipe(
        "Super NVFP4 1xGB10, 256K, MTP 3",
        VLLM_SUPER + " (DGX Spark)",
        SUPER + "NVFP4",
        GB10,
        1,
        {
            "maxModelLen": 262144,
            "gpuMemoryUtilization": 0.8,
            "maxNumSeqs": 8,
            "maxNumBatchedTokens": 16384,
            **FP8_KV,
            **mtp(3),
        },
    ),
    Recipe(
        "Super NVFP4 1xRTX PRO 6000, 256K, MTP 3",
        VLLM_SUPER,
        SUPER + "NVFP4",
        RTX6000,
        1,
        {
            "maxModelLen": 262144,
            "gpuMemoryUtilization": 0.92,
            "maxNumSeqs": 8,
            "maxNumBatchedTokens": 16384,
            **FP8_KV,
            **mtp(3),
        },
    ),
    Recipe(
        "Super NVFP4 1xB200 TP1",
        NVIDIA_COOKBOOK,
        SUPER + "NVFP4",
        B200,
        1,
        {**VLLM_DEFAULTS, **FP8_KV, "maxNumSeqs": 512},
    ),
    Recipe(
        "Super BF16 4xH100 TP4 (cookbook)",
        NVIDIA_COOKBOOK,
        SUPER + "BF16",
        H100,
        4,
        {**VLLM_DEFAULTS, **FP8_KV, "maxNumSeqs": 512},
    ),
    Recipe(
        "Super NVFP4 1xGB10, 1M, MTP 3",
        "NVIDIA-NeMo/Nemotron usage-cookbook/Nemotron-3-Super/SparkDeploymentGuide/README.md",
        SUPER + "NVFP4",
        GB10,
        1,
        {"maxModelLen": 1000000, "gpuMemoryUtilization": 0.92, "maxNumSeqs": 4, **mtp(3)},
    ),
    Recipe(
        "Super NVFP4 4xB200 TP4+EP, 128K",
        DYNAMO,
        SUPER + "NVFP4",
        B200,
        4,
        {
            "maxModelLen": 131072,
            "kvCacheDtype": "fp8_e4m3",
            "mambaSsmCacheDtype": "float16",
            **mtp(3),
        },
        expert=True,
    ),
    Recipe(
        "Super FP8 4xH200 TP4+EP, 128K",
        DYNAMO,
        SUPER + "FP8",
        H200,
        4,
        {
            "maxModelLen": 131072,
            "kvCacheDtype": "fp8_e4m3",
            "mambaSsmCacheDtype": "float16",
            **mtp(3),
        },
        expert=True,
    ),
    Recipe(
        "Super VL BF16 8xH200 TP8", SEED_GUIDE, SUPER_VL, H200, 8, {"maxModelLen": 262144, **mtp(1)}
    ),
    Recipe(
        "Super VL Base BF16 8xH200 TP8",
        SEED_GUIDE,
        SUPER_VL_BASE,
        H200,
        8,
        {"maxModelLen": 262144, **mtp(1)},
    ),
    Recipe(
        "Super NVFP4 1xGB200, 114,688, MTP 5",
        SEED_GUIDE,
        SUPER + "NVFP4",
        GB200,
        1,
        {"maxModelLen": 114688, **mtp(5)},
    ),
    Recipe("Super NVFP4 1xH200", SEED_GUIDE, SUPER + "NVFP4", H200, 1, {}),
    Recipe("Super NVFP4 2xH100", SEED_GUIDE, SUPER + "NVFP4", H100, 2, {}),
    Recipe(
        "Super NVFP4 1xGB10 (guide settings)",
        SEED_GUIDE + "; vLLM recipe's Spark flags",
        SUPER + "NVFP4",
        GB10,
        1,
        {"gpuMemoryUtilization": 0.8, "maxNumSeqs": 8, **FP8_KV},
    ),
    Recipe(
        "Ultra NVFP4 8xB200 TP8, MTP 5",
        VLLM_ULTRA,
        ULTRA + "NVFP4",
        B200,
        8,
        {
            "kvCacheDtype": "fp8",
            "maxNumSeqs": 16,
            "maxModelLen": 262144,
            "gpuMemoryUtilization": 0.9,
            "maxNumBatchedTokens": 32768,
            **mtp(5),
        },
    ),
    Recipe(
        "Ultra NVFP4 4xB200 TP4+EP, MTP 1",
        DYNAMO_ULTRA + "; " + TRTLLM_ULTRA,
        ULTRA + "NVFP4",
        B200,
        4,
        {"gpuMemoryUtilization": 0.92, **FP8_KV, **mtp(1)},
        expert=True,
    ),
    Recipe(
        "Ultra NVFP4 4xB300 TP4",
        TRTLLM_ULTRA,
        ULTRA + "NVFP4",
        B300,
        4,
        {**VLLM_DEFAULTS, **FP8_KV},
    ),
    Recipe(
        "Ultra NVFP4 4xGB200 TP4",
        TRTLLM_ULTRA,
        ULTRA + "NVFP4",
        GB200,
        4,
        {**VLLM_DEFAULTS, **FP8_KV},
    ),
    Recipe(
        "Ultra NVFP4 4xGB300 TP4",
        TRTLLM_ULTRA,
        ULTRA + "NVFP4",
        GB300,
        4,
        {**VLLM_DEFAULTS, **FP8_KV},
    ),
    Recipe(
        "Ultra NVFP4 8xH100 TP8 (W4A16)",
        TRTLLM_ULTRA + "; tech report §4",
        ULTRA + "NVFP4",
        H100,
        8,
        {**VLLM_DEFAULTS, **FP8_KV},
    ),
    Recipe(
        "Ultra NVFP4 8xH200 TP8+EP, MTP 1",
        DYNAMO_ULTRA,
        ULTRA + "NVFP4",
        H200,
        8,
        {"gpuMemoryUtilization": 0.92, **FP8_KV, **mtp(1)},
        expert=True,
    ),
    Recipe(
        "Ultra NVFP4 2xGB300 (DGX Station) TP1 PP2, 256K",
        "NVIDIA-NeMo/Nemotron usage-cookbook/Nemotron-3-Ultra/DualStationDeploymentGuide",
        ULTRA + "NVFP4",
        GB300,
        1,
        {
            "kvCacheDtype": "fp8",
            "maxModelLen": 262144,
            "gpuMemoryUtilization": 0.9,
            "maxNumSeqs": 256,
            "speculativeDecoding": {"method": "none"},
        },
        pipeline=2,
    ),
    Recipe(
        "Ultra NVFP4 4xGB10 TP4, 256K, MTP 4",
        "NVIDIA-NeMo/Nemotron usage-cookbook/Nemotron-3-Ultra/SparkDeploymentGuide",
        ULTRA + "NVFP4",
        GB10,
        4,
        {
            "maxModelLen": 262144,
            "gpuMemoryUtilization": 0.85,
            "maxNumSeqs": 2,
            "maxNumBatchedTokens": 16384,
            "kvCacheDtype": "fp8",
            **mtp(4),
        },
    ),
    Recipe(
        "Ultra BF16 16xH200 TP16 (2 nodes)",
        "issue 13 (NVIDIA's Ultra BF16 recipes)",
        ULTRA + "BF16",
        H200,
        16,
        {**VLLM_DEFAULTS, **FP8_KV},
    ),
    Recipe(
        "Ultra BF16 8xB200 TP8",
        "issue 13 (NVIDIA's Ultra BF16 recipes)",
        ULTRA + "BF16",
        B200,
        8,
        {**VLLM_DEFAULTS, **FP8_KV},
    ),
    Recipe(
        "Ultra BF16 8xB300 TP8",
        "issue 13 (NVIDIA's Ultra BF16 recipes)",
        ULTRA + "BF16",
        B300,
        8,
        {**VLLM_DEFAULTS, **FP8_KV},
    ),
)
