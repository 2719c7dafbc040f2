"""Every layout NVIDIA, vLLM, TensorRT-LLM or Dynamo publish as working for this family, planned
with the published settings: the planner must call each feasible, or the disagreement is recorded
here and in docs/sizing.md §10 with the arithmetic.

minConcurrency is 1 in these tests: a recipe only claims that vLLM starts, which it does when one
full-length request fits. Settings a recipe leaves unset are vLLM's defaults (gpuMemoryUtilization
0.92, MTP off, the config's context), not the operator's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from nemotron_operator.api import NemotronDeploymentSpec
from nemotron_operator.api.errors import parse_deployment
from nemotron_operator.render import render_all
from nemotron_operator.sizing import PlanningError, PlanResult, plan_deployment

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


def spec_of(recipe: Recipe, engine: dict[str, Any] | None = None) -> NemotronDeploymentSpec:
    parallelism: dict[str, Any] = {"tensor": recipe.tensor, "pipeline": recipe.pipeline}
    if recipe.expert is not None:
        parallelism["expert"] = recipe.expert
    return NemotronDeploymentSpec.model_validate(
        {
            "model": {"id": recipe.model_id},
            "engine": recipe.engine if engine is None else engine,
            "capacity": {
                "minConcurrency": 1,
                "gpu": {"products": [recipe.gpu]},
                "parallelism": parallelism,
            },
        }
    )


@pytest.mark.parametrize("recipe", RECIPES, ids=[r.name for r in RECIPES])
def test_published_recipe_is_feasible(recipe: Recipe) -> None:
    result = plan_deployment(spec_of(recipe))
    plan = result.plan
    assert (plan.tensor_parallel, plan.pipeline_parallel) == (recipe.tensor, recipe.pipeline)
    assert plan.max_concurrency >= 1
    assert plan.max_num_seqs <= plan.kv_cache_blocks


# --- Documented disagreements (docs/sizing.md §10) ----------------------------------------------

ULTRA_BF16_H100 = Recipe(
    "Ultra BF16 16xH100 TP16 (2 nodes)",
    "issue 13 (NVIDIA's Ultra BF16 recipes)",
    ULTRA + "BF16",
    H100,
    16,
    {**VLLM_DEFAULTS, **FP8_KV},
)


def test_ultra_bf16_on_16_h100_needs_more_than_the_default_utilization() -> None:
    # 68.5 GiB of weights per GPU (1121 GB / 16 plus the replicated router, latent projections
    # and norms) leave 3.3 GiB of an H100's 73.3 usable GiB at 0.92: less than the reserve.
    with pytest.raises(PlanningError) as caught:
        plan_deployment(spec_of(ULTRA_BF16_H100))
    assert "leave no KV cache" in caught.value.rejected[0].reason
    # At 0.97 with 64 sequences the arithmetic admits it (about four full-length requests).
    tight = {**ULTRA_BF16_H100.engine, "gpuMemoryUtilization": 0.97, "maxNumSeqs": 64}
    plan = plan_deployment(spec_of(ULTRA_BF16_H100, tight)).plan
    assert 1 <= plan.max_concurrency < 5
    assert plan.nodes_per_replica == 2


def test_vllm_default_max_num_seqs_on_one_gb10_exceeds_the_mamba_blocks() -> None:
    # The guides' "Super NVFP4 on 1xGB10" with vLLM's default 1024 sequences: since vLLM 0.19 the
    # engine refuses when max_num_seqs exceeds the pool's Mamba blocks; the guides pass 4-8.
    recipe = Recipe("Super NVFP4 1xGB10 defaults", SEED_GUIDE, SUPER + "NVFP4", GB10, 1, {})
    with pytest.raises(PlanningError) as caught:
        plan_deployment(spec_of(recipe))
    assert "Mamba cache blocks" in caught.value.rejected[0].reason


# --- Ultra across nodes, rendered ---------------------------------------------------------------


def ultra_on_two_h200_nodes() -> tuple[Any, PlanResult]:
    obj = {
        "apiVersion": "serving.nemotron.io/v1alpha1",
        "kind": "NemotronDeployment",
        "metadata": {"name": "ultra", "namespace": "ai"},
        "spec": {
            "model": {"id": ULTRA + "BF16"},
            "engine": {"kvCacheDtype": "fp8"},
            "capacity": {"gpu": {"products": [H200]}, "parallelism": {"tensor": 16}},
        },
    }
    deployment = parse_deployment(obj)
    return deployment, plan_deployment(deployment.spec)


def test_ultra_tp16_plan_spans_two_whole_nodes() -> None:
    _, result = ultra_on_two_h200_nodes()
    plan = result.plan
    assert (plan.tensor_parallel, plan.pipeline_parallel) == (16, 1)
    assert (plan.gpus_per_replica, plan.nodes_per_replica, plan.nodes) == (16, 2, 2)
    assert plan.expert_parallel


def test_ultra_tp16_renders_a_leader_and_a_worker_statefulset() -> None:
    deployment, result = ultra_on_two_h200_nodes()
    objects = render_all(deployment, result)
    statefulsets = [o for o in objects if o["kind"] == "StatefulSet"]
    assert [s["metadata"]["name"] for s in statefulsets] == ["ultra-0", "ultra-0-w"]
    for sts in statefulsets:
        container = sts["spec"]["template"]["spec"]["containers"][0]
        args = container["args"]
        assert args[args.index("--tensor-parallel-size") + 1] == "16"
        assert args[args.index("--nnodes") + 1] == "2"
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
