"""Every layout NVIDIA, vLLM, TensorRT-LLM or Dynamo publish as working for this family, planned
with the published settings: the planner must call each feasible, or the disagreement is recorded
here and in docs/sizing.md §10 with the arithmetic. The table is recipes_table.py.

minConcurrency is 1 in these tests: a recipe only claims that vLLM starts, which it does when one
full-length request fits. Settings a recipe leaves unset are vLLM's defaults (gpuMemoryUtilization
0.92, MTP off, the config's context), not the operator's.
"""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.api import NemotronDeploymentSpec
from nemotron_operator.api.errors import parse_deployment
from nemotron_operator.render import render_all
from nemotron_operator.sizing import PlanningError, PlanResult, plan_deployment

from .helpers import FACTS_IMAGE
from .recipes_table import (
    FP8_KV,
    GB10,
    H100,
    H200,
    RECIPES,
    SEED_GUIDE,
    SUPER,
    ULTRA,
    VLLM_DEFAULTS,
    Recipe,
)


def spec_of(recipe: Recipe, engine: dict[str, Any] | None = None) -> NemotronDeploymentSpec:
    parallelism: dict[str, Any] = {"tensor": recipe.tensor, "pipeline": recipe.pipeline}
    if recipe.expert is not None:
        parallelism["expert"] = recipe.expert
    return NemotronDeploymentSpec.model_validate(
        {
            "model": {"id": recipe.model_id},
            # The guides ran vLLM before 0.34: their layouts are checked with the 0.31 profile.
            "engine": {"image": FACTS_IMAGE, **(recipe.engine if engine is None else engine)},
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
