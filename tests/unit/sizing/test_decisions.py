"""The sizing decisions a golden file only shows as bytes, asserted by behaviour (issue 26): which
pipeline stage binds, where the MTP head and its cache go, which reserve terms apply where, and
which layout the planner prefers. A regenerated golden cannot hide a wrong decision here."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nemotron_operator.catalog.models import MTP
from nemotron_operator.sizing import plan_deployment
from nemotron_operator.sizing.layouts import candidates
from nemotron_operator.sizing.memory import cache_layers
from nemotron_operator.sizing.planner import search
from nemotron_operator.sizing.reserve import (
    CUDA_GRAPHS_BYTES,
    LOGITS_BYTES_PER_ELEMENT,
    NCCL_BYTES,
    NON_TORCH_BYTES,
    PROFILE_BASE_BYTES,
    ReserveInputs,
    activation_bytes_per_token,
    reserve_components,
    vision_encoder_bytes,
)
from nemotron_operator.sizing.weights import pipeline_stages, rank_part_bytes, stage_weights

from .helpers import H100, NANO_BF16, SUPER_BF16, SUPER_VL_BF16, layout_memory, model, spec

H200 = "NVIDIA-H200"
B200 = "NVIDIA-B200"

# Stage binding: the pool is as many blocks as the tightest stage holds (vLLM takes the minimum
# over workers), and that stage's GPU is the one reported.


def test_the_binding_stage_is_the_one_with_the_fewest_blocks() -> None:
    memory = layout_memory(SUPER_VL_BF16, 8, gpu_name=H100, pipeline_parallel=2, draft_tokens=1)
    blocks = [s.num_blocks for s in memory.stages]
    assert len(blocks) == 2
    assert blocks[0] != blocks[1]  # the stages differ (embedding + vision vs LM head + MTP)
    assert memory.num_blocks == min(b for b in blocks if b is not None)
    assert memory.binding is memory.stages[blocks.index(memory.num_blocks)]
    assert memory.usable_bytes - memory.binding.weights_bytes - memory.binding.reserve_bytes == (
        memory.binding.kv_pool_bytes
    )


def test_a_tie_in_blocks_reports_the_heavier_stage_and_a_cacheless_stage_never_binds() -> None:
    memory = layout_memory(SUPER_VL_BF16, 8, gpu_name=H100, pipeline_parallel=2, draft_tokens=1)
    light, heavy = sorted(memory.stages, key=lambda s: s.weights_bytes)
    tied = replace(
        memory,
        stages=(replace(light, num_blocks=100), replace(heavy, num_blocks=100)),
    )
    assert tied.binding.weights_bytes == heavy.weights_bytes
    cacheless = replace(
        memory, stages=(replace(light, num_blocks=None), replace(heavy, num_blocks=500))
    )
    assert cacheless.binding.num_blocks == 500
    nothing = replace(memory, stages=(replace(light, num_blocks=None),))
    assert nothing.num_blocks == 0
    assert nothing.max_concurrency == 0.0


def test_pipeline_stages_split_evenly_with_the_remainder_before_the_last() -> None:
    # vLLM's get_pp_indices: the remainder goes one layer each to the stages just before the
    # last (which also holds the LM head), never to the last.
    assert [len(s) for s in pipeline_stages(10, 3)] == [3, 4, 3]
    assert [len(s) for s in pipeline_stages(11, 3)] == [4, 4, 3]
    assert [len(s) for s in pipeline_stages(8, 2)] == [4, 4]
    stages = pipeline_stages(10, 3)
    assert [s.start for s in stages] == [0, 3, 7]
    assert stages[-1].stop == 10


# MTP placement: the head's weights and its attention layers live on the last stage only.


def test_the_mtp_head_weighs_on_the_last_stage_only() -> None:
    entry = model(SUPER_VL_BF16)
    with_mtp = stage_weights(entry, 8, 2, True, include_mtp=True)
    without = stage_weights(entry, 8, 2, True, include_mtp=False)
    head = rank_part_bytes(entry, MTP, 8, True)
    assert head > 0
    assert with_mtp[0].bytes == without[0].bytes
    assert with_mtp[1].bytes - without[1].bytes == head


def test_the_mtp_attention_layers_join_the_cache_on_the_last_stage_only() -> None:
    entry = model(SUPER_VL_BF16)
    drafted = layout_memory(SUPER_VL_BF16, 8, gpu_name=H100, pipeline_parallel=2, draft_tokens=1)
    plain = layout_memory(SUPER_VL_BF16, 8, gpu_name=H100, pipeline_parallel=2, draft_tokens=0)
    extra = entry.mtp_attention_layers
    assert extra >= 1
    assert drafted.stages[0].attention_layers == plain.stages[0].attention_layers
    assert drafted.stages[1].attention_layers == plain.stages[1].attention_layers + extra
    attention, _ = cache_layers(entry, 1)
    assert attention[-extra:] == list(
        range(entry.num_hidden_layers, entry.num_hidden_layers + extra)
    )
    assert cache_layers(entry, 0)[0] == attention[:-extra]


# Reserve terms: which apply on which stage, and their size.


def _inputs(**changes: object) -> ReserveInputs:
    base = ReserveInputs(
        tensor_parallel=1,
        world_size=1,
        expert_parallel=False,
        max_num_seqs=256,
        max_num_batched_tokens=8192,
        speculative_tokens=0,
        first_stage=True,
        last_stage=True,
        stage_kinds=frozenset("M*E"),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def _terms(hf_id: str, **changes: object) -> dict[str, int]:
    return dict(reserve_components(model(hf_id), _inputs(**changes)))


def test_the_fixed_reserve_terms_are_always_there_and_nccl_only_with_more_than_one_gpu() -> None:
    alone = _terms(NANO_BF16)
    assert alone["profileBase"] == PROFILE_BASE_BYTES
    assert alone["cudaGraphs"] == CUDA_GRAPHS_BYTES
    assert alone["nonTorch"] == NON_TORCH_BYTES
    assert "nccl" not in alone
    assert _terms(NANO_BF16, world_size=2, tensor_parallel=2)["nccl"] == NCCL_BYTES
    assert _terms(NANO_BF16, world_size=2, first_stage=False)["nccl"] == NCCL_BYTES  # PP 2


def test_sampler_logits_are_on_the_last_stage_and_count_the_draft_rows() -> None:
    vocab = model(NANO_BF16).vocab_size
    assert _terms(NANO_BF16)["samplerLogits"] == 256 * vocab * LOGITS_BYTES_PER_ELEMENT
    drafted = _terms(NANO_BF16, speculative_tokens=3)["samplerLogits"]
    assert drafted == 256 * 4 * vocab * LOGITS_BYTES_PER_ELEMENT
    assert "samplerLogits" not in _terms(NANO_BF16, last_stage=False)


def test_the_vision_encoder_is_profiled_on_the_first_stage_of_a_vl_model_only() -> None:
    first = _terms(SUPER_VL_BF16)
    assert first["visionEncoder"] == 612_368_384  # by hand in test_edges.py
    assert "visionEncoder" not in _terms(SUPER_VL_BF16, first_stage=False)
    assert "visionEncoder" not in _terms(SUPER_BF16)  # text-only


def test_vision_encoder_grows_with_the_batch_budget_in_whole_images() -> None:
    entry = model(SUPER_VL_BF16)
    tower = entry.vision_tower
    assert tower is not None
    one_image = vision_encoder_bytes(entry, 1)  # the budget is at least one image's tokens
    assert one_image == vision_encoder_bytes(entry, tower.max_tokens_per_image)
    two = vision_encoder_bytes(entry, 2 * tower.max_tokens_per_image)
    assert two > one_image
    cache_growth = tower.max_tokens_per_image * entry.hidden_size * 2
    assert two - one_image > cache_growth  # a second image's ViT pass, not only its cache


def test_activations_scale_with_batched_tokens_and_shrink_with_tensor_parallelism() -> None:
    entry = model(SUPER_BF16)
    tp1 = _inputs()
    assert _terms(SUPER_BF16)["activations"] == 8192 * activation_bytes_per_token(entry, tp1)
    double = _terms(SUPER_BF16, max_num_batched_tokens=16384)["activations"]
    assert double == 2 * _terms(SUPER_BF16)["activations"]
    tp4 = activation_bytes_per_token(entry, _inputs(tensor_parallel=4, world_size=4))
    assert tp4 < activation_bytes_per_token(entry, tp1)
    # Three hidden-size buffers remain whatever the layer kinds.
    assert activation_bytes_per_token(entry, _inputs(stage_kinds=frozenset())) == (
        3 * entry.hidden_size * 2
    )
    # Expert parallelism keeps whole experts: wider per-rank workspaces than TP-sharded ones.
    ep = activation_bytes_per_token(entry, _inputs(tensor_parallel=4, expert_parallel=True))
    assert ep > tp4


def test_each_layer_kind_widens_the_activations() -> None:
    entry = model(SUPER_BF16)
    base = activation_bytes_per_token(entry, _inputs(stage_kinds=frozenset()))
    for kind in "M*E":
        assert activation_bytes_per_token(entry, _inputs(stage_kinds=frozenset(kind))) > base


# Layout preference: fewest GPUs, then most concurrency, then fewest pipeline stages, then the
# order the products were listed in.


def test_fewer_gpus_win_over_more_concurrency_whatever_the_product_order() -> None:
    for products in ([H100, B200], [B200, H100]):
        plan = plan_deployment(spec(SUPER_BF16, capacity={"gpu": {"products": products}})).plan
        assert plan.gpu_product == B200
        assert plan.gpus_per_replica < 8  # H100 needs 8 for BF16 Super


def test_at_equal_gpus_more_concurrency_wins() -> None:
    for products in ([H100, H200], [H200, H100]):
        capacity = {"gpu": {"products": products, "count": 8}}
        found = search(spec(SUPER_VL_BF16, capacity=capacity))
        best = {e.gpu.name: e for e in found.best_per_product()}
        assert best[H100].layout.gpus == best[H200].layout.gpus == 8
        h100, h200 = best[H100].memory, best[H200].memory
        assert h100 is not None
        assert h200 is not None
        assert h200.max_concurrency > h100.max_concurrency
        plan = plan_deployment(spec(SUPER_VL_BF16, capacity=capacity)).plan
        assert plan.gpu_product == H200
        assert plan.max_concurrency == pytest.approx(h200.max_concurrency, abs=0.01)


def test_planned_candidates_keep_tensor_parallel_inside_a_node_and_come_fewest_gpus_first() -> None:
    entry = model(SUPER_BF16)
    h100 = layout_memory(SUPER_BF16, gpu_name=H100).gpu
    tried = [c.layout for c in candidates(entry, h100, spec(SUPER_BF16).capacity)]
    gpus = [(layout.gpus, layout.pipeline_parallel) for layout in tried]
    assert gpus == sorted(gpus)
    assert tried[0].tensor_parallel == tried[0].pipeline_parallel == 1
    # Pipeline stages only across full nodes: PP > 1 comes with TP = 8 (a whole node).
    assert all(lay.pipeline_parallel == 1 or lay.tensor_parallel == 8 for lay in tried)
    assert all(lay.tensor_parallel <= 8 for lay in tried)
    assert any(lay.pipeline_parallel == 2 and lay.tensor_parallel == 8 for lay in tried)
    # Expert parallelism by default for an MoE model once TP > 1.
    assert all(lay.expert_parallel == (lay.tensor_parallel > 1) for lay in tried)


@pytest.mark.parametrize("count", [4, 16])
def test_an_explicit_gpu_count_is_laid_out_exactly(count: int) -> None:
    entry = model(SUPER_BF16)
    h100 = layout_memory(SUPER_BF16, gpu_name=H100).gpu
    capacity = spec(SUPER_BF16, capacity={"gpu": {"count": count}}).capacity
    tried = [c.layout for c in candidates(entry, h100, capacity)]
    assert tried
    assert all(lay.gpus == count for lay in tried)
    assert all(
        c.explicit_fields == ("spec.capacity.gpu.count",) for c in candidates(entry, h100, capacity)
    )


def test_the_planner_stops_at_the_first_gpu_count_that_fits() -> None:
    found = search(spec(SUPER_BF16, capacity={"gpu": {"products": [H100]}}))
    fitting = [e for e in found.evaluations if e.fits]
    assert fitting
    smallest = min(e.layout.gpus for e in fitting)
    assert all(e.layout.gpus <= smallest for e in found.evaluations)
    assert all(not e.fits for e in found.evaluations if e.layout.gpus < smallest)
