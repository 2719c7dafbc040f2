"""The planner: spec semantics, explicit choices, node pools, and errors that name the field."""

from __future__ import annotations

import pytest

from nemotron_operator.api import NemotronDeploymentSpec
from nemotron_operator.api.plan import MAX_REJECTED
from nemotron_operator.catalog import lookup_model
from nemotron_operator.sizing import PlanningError, inventory_from_nodes, plan_deployment

from .helpers import (
    FACTS_IMAGE,
    H8B,
    H100,
    NANO_BF16,
    SUPER_BF16,
    SUPER_NVFP4,
    SUPER_VL_BF16,
    spec,
    super_as_architecture,
)
from .test_inventory import node

# NVIDIA's cookbook runs Super on H100 with --max-num-seqs 512: vLLM's default 1024 exceeds the
# Mamba cache blocks of these pools, and vLLM refuses to start (model-facts.md §2.5).
COOKBOOK_SEQS = {"maxNumSeqs": 512}


def planning_error(*args: object, **kwargs: object) -> PlanningError:
    with pytest.raises(PlanningError) as caught:
        plan_deployment(spec(*args, **kwargs))  # type: ignore[arg-type]
    return caught.value


def test_defaults_context_mtp_and_expert_parallel() -> None:
    plan = plan_deployment(spec(SUPER_VL_BF16, capacity={"gpu": {"products": ["NVIDIA-H200"]}}))
    assert plan.plan.max_model_len == 262144  # the config's limit
    assert plan.plan.speculative_tokens == 1  # MTP head → 1 draft token
    assert plan.plan.tensor_parallel > 1
    assert plan.plan.expert_parallel  # MoE with TP > 1
    assert plan.plan.replicas == 1
    assert not plan.allow_long_max_model_len


def test_models_without_mtp_head_plan_without_speculation() -> None:
    result = plan_deployment(spec(H8B))
    assert result.plan.speculative_tokens == 0
    assert not result.plan.expert_parallel  # dense model


def test_mtp_off_drops_the_draft_layer_and_its_weights() -> None:
    on = plan_deployment(
        spec(SUPER_BF16, engine=COOKBOOK_SEQS, capacity={"gpu": {"products": [H100]}})
    )
    off = plan_deployment(
        spec(
            SUPER_BF16,
            engine={"speculativeDecoding": {"method": "none"}, **COOKBOOK_SEQS},
            capacity={"gpu": {"products": [H100]}},
        )
    )
    assert off.plan.speculative_tokens == 0
    assert off.plan.kv_bytes_per_token < on.plan.kv_bytes_per_token
    assert off.plan.per_gpu.weights_bytes < on.plan.per_gpu.weights_bytes


def test_explicit_mtp_on_a_model_without_mtp_head_names_the_field() -> None:
    error = planning_error(H8B, engine={"speculativeDecoding": {"method": "mtp"}})
    assert error.reason == "SpeculativeDecodingUnsupported"
    assert error.field == "spec.engine.speculativeDecoding"
    assert "no MTP head" in error.message


def test_unknown_model_points_at_the_catalog_and_the_architecture_field() -> None:
    error = planning_error("example/unknown-model")
    assert error.reason == "UnknownModel"
    assert error.field == "spec.model.id"
    assert "nemotron-operator models" in error.message
    assert "spec.model.architecture" in error.message


def test_max_model_len_above_the_trained_context_is_rejected() -> None:
    error = planning_error(H8B, engine={"maxModelLen": 8193})
    assert error.reason == "MaxModelLenTooLong"
    assert error.field == "spec.engine.maxModelLen"
    assert "8192" in error.message


def test_max_model_len_beyond_the_config_limit_needs_the_long_context_switch() -> None:
    result = plan_deployment(
        spec(SUPER_NVFP4, engine={"maxModelLen": 1048576}, capacity={"minConcurrency": 1})
    )
    assert result.plan.max_model_len == 1048576
    assert result.allow_long_max_model_len
    assert any("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in n for n in result.plan.notes)


def test_tensor_parallel_that_does_not_divide_the_heads_is_rejected() -> None:
    error = planning_error(SUPER_BF16, capacity={"parallelism": {"tensor": 3}})
    assert error.reason == "InvalidParallelism"
    assert error.field == "spec.capacity.parallelism.tensor"
    assert "does not divide the 32 attention heads" in error.message
    assert error.rejected


def test_tensor_parallel_that_splits_a_node_is_rejected() -> None:
    # Nodes of 6 GPUs: a TP 8 group would take one node and part of another.
    inventory = inventory_from_nodes(
        [node("h100-a", "NVIDIA-H100-80GB-HBM3", 6), node("h100-b", "NVIDIA-H100-80GB-HBM3", 6)]
    )
    with pytest.raises(PlanningError) as caught:
        plan_deployment(
            spec(NANO_BF16, capacity={"parallelism": {"tensor": 8}}), inventory=inventory
        )
    error = caught.value
    assert error.reason == "InvalidParallelism"
    assert "spans whole nodes (a multiple of 6)" in error.message


def test_tensor_parallel_over_whole_nodes_spans_them() -> None:
    # GB200 compute trays hold 4 GPUs; TP 8 takes two whole trays (one NVLink domain).
    result = plan_deployment(
        spec(
            NANO_BF16,
            capacity={"parallelism": {"tensor": 8}, "gpu": {"products": ["NVIDIA-GB200"]}},
        )
    )
    assert (result.plan.tensor_parallel, result.plan.nodes_per_replica) == (8, 2)


@pytest.mark.parametrize("tensor", [1, 2, 8])
def test_explicit_tensor_parallel_is_honoured(tensor: int) -> None:
    result = plan_deployment(
        spec(
            NANO_BF16,
            capacity={"parallelism": {"tensor": tensor}, "gpu": {"products": ["NVIDIA-H200"]}},
        )
    )
    assert result.plan.tensor_parallel == tensor


def test_explicit_tensor_adds_pipeline_stages_when_one_stage_cannot_hold_the_weights() -> None:
    result = plan_deployment(
        spec(
            SUPER_BF16,
            engine=COOKBOOK_SEQS,
            capacity={"parallelism": {"tensor": 2}, "gpu": {"products": [H100]}},
        )
    )
    assert result.plan.tensor_parallel == 2
    assert result.plan.pipeline_parallel == 2


def test_explicit_layout_that_cannot_hold_the_weights_is_rejected_not_changed() -> None:
    error = planning_error(
        SUPER_BF16,
        capacity={"parallelism": {"tensor": 2, "pipeline": 1}, "gpu": {"products": [H100]}},
    )
    assert error.reason == "InsufficientGPUMemory"
    assert [(r.tensor_parallel, r.pipeline_parallel) for r in error.rejected] == [(2, 1)]
    assert "weights need" in error.rejected[0].reason


def test_gpu_count_beyond_a_node_uses_pipeline_stages_across_nodes() -> None:
    result = plan_deployment(
        spec(SUPER_VL_BF16, capacity={"gpu": {"count": 16, "products": [H100]}}, replicas=3)
    )
    plan = result.plan
    assert (plan.tensor_parallel, plan.pipeline_parallel) == (8, 2)
    assert plan.nodes_per_replica == 2
    assert plan.nodes == 6
    assert plan.total_gpus == 48


def test_small_replicas_share_nodes() -> None:
    result = plan_deployment(
        spec(SUPER_NVFP4, capacity={"gpu": {"products": ["NVIDIA-B200"]}}, replicas=10)
    )
    plan = result.plan
    assert plan.gpus_per_replica == 1
    assert plan.nodes_per_replica == 1
    assert plan.nodes == 2  # 8 one-GPU replicas per 8-GPU node
    assert plan.total_gpus == 10


def test_zero_replicas_need_no_nodes() -> None:
    plan = plan_deployment(spec(H8B, replicas=0)).plan
    assert (plan.nodes, plan.total_gpus) == (0, 0)


def test_unknown_gpu_product_names_the_list_entry() -> None:
    error = planning_error(H8B, capacity={"gpu": {"products": ["NVIDIA-H200", "NVIDIA-X999"]}})
    assert error.reason == "NoMatchingGPUs"
    assert error.field == "spec.capacity.gpu.products[1]"
    assert "nemotron-operator gpus" in error.message


def test_products_are_honoured() -> None:
    result = plan_deployment(spec(SUPER_VL_BF16, capacity={"gpu": {"products": ["h200"]}}))
    assert result.plan.gpu_product == "NVIDIA-H200"
    assert {a.gpu.name for a in result.alternatives} == {"NVIDIA-H200"}


def test_nvfp4_on_hopper_runs_weight_only_and_says_so() -> None:
    result = plan_deployment(spec(SUPER_NVFP4, capacity={"gpu": {"products": [H100]}}))
    assert any("weight-only" in n and "Marlin" in n for n in result.plan.notes)


def test_nvfp4_where_unsupported_is_rejected() -> None:
    # A Volta node (compute capability 7.0) from the cluster: vLLM's NVFP4 kernels need 7.5.
    inventory = inventory_from_nodes(
        [node("v100-0", "Tesla-V100-SXM2-32GB", 8, memory_mib=32768, capability=(7, 0))]
    )
    with pytest.raises(PlanningError) as caught:
        plan_deployment(spec(SUPER_NVFP4), inventory=inventory)
    assert caught.value.reason == "UnsupportedPrecision"
    assert caught.value.field == "spec.capacity.gpu.products"
    assert "7.5" in caught.value.message


def test_nothing_fits_lists_the_rejected_layouts_capped() -> None:
    error = planning_error(SUPER_BF16, capacity={"minConcurrency": 100000})
    assert error.reason == "InsufficientGPUMemory"
    assert len(error.rejected) == MAX_REJECTED
    assert error.rejected_omitted > 0
    assert "minConcurrency" in error.message


def test_inventory_products_and_node_sizes_are_used() -> None:
    inventory = inventory_from_nodes(
        [node(f"h100-{i}", "NVIDIA-H100-80GB-HBM3", 4) for i in range(3)]
    )
    result = plan_deployment(spec(SUPER_BF16), inventory=inventory)
    assert result.plan.gpu_product == "NVIDIA-H100-80GB-HBM3"
    assert result.plan.gpus_per_node == 4
    assert result.plan.tensor_parallel <= 4


def test_rejections_explain_the_smaller_layouts_first() -> None:
    plan = plan_deployment(spec(SUPER_BF16, capacity={"gpu": {"products": [H100]}})).plan
    first = plan.rejected[0]
    assert (first.tensor_parallel, first.pipeline_parallel) == (1, 1)
    assert "weights need 230.2 GiB per GPU" in first.reason


def test_reserve_components_are_named_and_add_up() -> None:
    per_gpu = plan_deployment(spec(SUPER_VL_BF16)).plan.per_gpu
    names = [c.name for c in per_gpu.reserve_components]
    assert names[:2] == ["activations", "samplerLogits"]
    assert "visionEncoder" in names  # a VL model profiles its encoder
    assert sum(c.bytes for c in per_gpu.reserve_components) == per_gpu.reserve_bytes


def test_explicit_architecture_plans_like_the_catalog_entry() -> None:
    arch = super_as_architecture().to_wire()
    explicit = plan_deployment(
        NemotronDeploymentSpec.model_validate(
            {
                "model": {"id": "example/super-copy", "architecture": arch},
                "engine": {"image": FACTS_IMAGE, **COOKBOOK_SEQS},
                "capacity": {"gpu": {"products": [H100]}},
            }
        )
    ).plan
    catalog = plan_deployment(
        spec(SUPER_BF16, engine=COOKBOOK_SEQS, capacity={"gpu": {"products": [H100]}})
    ).plan
    assert (explicit.tensor_parallel, explicit.pipeline_parallel) == (
        catalog.tensor_parallel,
        catalog.pipeline_parallel,
    )
    assert explicit.kv_bytes_per_token == catalog.kv_bytes_per_token
    assert explicit.block_size_tokens == catalog.block_size_tokens
    # The explicit path shards the latent projections and router it cannot identify: ~1% less.
    assert explicit.per_gpu.weights_bytes == pytest.approx(catalog.per_gpu.weights_bytes, rel=0.02)
    assert any("explicit architecture" in n for n in explicit.notes)


def test_the_catalog_model_is_on_the_result() -> None:
    result = plan_deployment(spec(H8B))
    assert result.model is lookup_model(H8B)
    assert result.gpu.name == result.plan.gpu_product


def test_gpu_count_that_no_layout_can_split_names_the_count() -> None:
    error = planning_error(SUPER_BF16, capacity={"gpu": {"count": 8}, "parallelism": {"tensor": 3}})
    assert error.reason == "InvalidParallelism"
    assert error.field == "spec.capacity.gpu.count"


def test_tensor_groups_never_straddle_nodes() -> None:
    # 12 GPUs on 8-GPU nodes: 6 per node, so TP 4 would split a group across the two nodes.
    result = plan_deployment(spec(SUPER_BF16, capacity={"gpu": {"count": 12, "products": [H100]}}))
    plan = result.plan
    assert plan.gpus_per_replica == 12
    assert (12 // plan.nodes_per_replica) % plan.tensor_parallel == 0
    straddling = [r for r in plan.rejected if r.tensor_parallel == 4]
    assert straddling
    assert "split a TP 4 group across nodes" in straddling[0].reason
