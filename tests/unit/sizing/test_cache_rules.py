"""The KV cache, Mamba state and weight-sharding rules at their edges (docs/sizing.md §1-§2),
each written from the rule: found by mutation testing (docs/testing.md), where a changed
comparison, constant or default survived because no test reached the edge."""

from __future__ import annotations

from dataclasses import replace

from nemotron_operator.api import EngineSpec
from nemotron_operator.catalog import ModelEntry
from nemotron_operator.catalog.models import MTP
from nemotron_operator.sizing import Layout, evaluate, resolve_settings
from nemotron_operator.sizing.cache import (
    DEFAULT_BLOCK_SIZE,
    MambaState,
    hybrid_block_size,
    kv_cache_groups,
    layers_per_group,
    mamba_state,
    num_blocks,
)
from nemotron_operator.sizing.weights import rank_part_bytes, stage_weights

from .helpers import H8B, NANO_BF16, SUPER_BF16, gpu, model

B300 = "NVIDIA-B300-SXM6-AC"


def _with_dims(entry: ModelEntry, **changes: int) -> ModelEntry:
    return replace(entry, dims=replace(entry.dims, **changes))


def test_a_model_without_mamba_layers_holds_no_mamba_state() -> None:
    dense = _with_dims(model(H8B), mamba_num_heads=0)
    assert mamba_state(dense, 1, 0, 2, 4) == MambaState(0, 0)
    assert mamba_state(dense, 4, 3, 2, 4).bytes == 0


def test_mamba_groups_fewer_than_the_tensor_ranks_are_replicated_up_to_them() -> None:
    # Groups padded up to t when t does not divide them (docs/sizing.md §2, vLLM's
    # extra_groups_for_head_shards in model_executor/layers/mamba/mamba_utils.py): one or two
    # groups at TP4 take the room of four.
    four = mamba_state(_with_dims(model(H8B), mamba_n_groups=4), 4, 1, 2, 4)
    for groups in (1, 2):
        padded = mamba_state(_with_dims(model(H8B), mamba_n_groups=groups), 4, 1, 2, 4)
        assert padded == four
    # Unpadded, one group would take less room than four.
    one_unpadded = mamba_state(_with_dims(model(H8B), mamba_n_groups=1), 1, 1, 2, 4)
    four_unsplit = mamba_state(_with_dims(model(H8B), mamba_n_groups=4), 1, 1, 2, 4)
    assert one_unpadded.conv_bytes < four_unsplit.conv_bytes


def test_the_block_size_stays_the_default_without_one_of_the_two_pages() -> None:
    assert hybrid_block_size(0, 123_456) == DEFAULT_BLOCK_SIZE  # no attention layers
    assert hybrid_block_size(512, 0) == DEFAULT_BLOCK_SIZE  # no Mamba layers
    assert hybrid_block_size(0, 0) == DEFAULT_BLOCK_SIZE  # neither
    # One Mamba byte still needs a block: the smallest aligned one.
    assert hybrid_block_size(1, 1) == DEFAULT_BLOCK_SIZE


def _group_sizes(attention: range, mamba: range) -> list[tuple[str, int]]:
    return [(g.kind, len(g.layers)) for g in kv_cache_groups(attention, mamba)]


def test_the_group_size_is_the_largest_bucket_only_under_1_5_times_the_smallest() -> None:
    # 5 and 6 layers: 6 < 7.5, so one group each, the attention group padded.
    assert _group_sizes(range(5), range(5, 11)) == [("attention", 5), ("mamba", 6)]
    # 2 and 3 layers: 3 is not under 3, so groups of 2 and the Mamba layers split in two.
    assert _group_sizes(range(2), range(2, 5)) == [("attention", 2), ("mamba", 2), ("mamba", 1)]
    # 2 and 4 layers: twice the smallest, groups of 2.
    assert _group_sizes(range(2), range(2, 6)) == [("attention", 2), ("mamba", 2), ("mamba", 2)]


def test_no_groups_mean_no_tensors_on_a_stage() -> None:
    assert layers_per_group((), frozenset({0, 1, 2})) == 0


def test_num_blocks_is_available_over_page_over_group_size_and_zero_without_a_page() -> None:
    assert num_blocks(10 * 4096 + 5, 4096, 1) == 10
    assert num_blocks(1000, 10, 3) == 33
    assert num_blocks(100, 1, 1) == 100
    assert num_blocks(-5000, 4096, 2) == 0  # weights and reserve exceed the budget
    assert num_blocks(10**9, 0, 3) == 0  # no page: no blocks, no division by zero
    assert num_blocks(10**9, 4096, 0) == 0


def test_a_model_without_attention_layers_pages_by_its_mamba_state() -> None:
    h8b = model(H8B)
    mamba_only = replace(h8b, layer_pattern=h8b.layer_pattern.replace("*", ""))
    for image, block in (
        ("vllm/vllm-openai:v0.31.0", DEFAULT_BLOCK_SIZE),
        ("vllm/vllm-openai:v0.34.0", 64),
    ):
        engine = EngineSpec.model_validate({"image": image})
        settings = resolve_settings(engine, mamba_only)
        memory = evaluate(mamba_only, gpu(B300), Layout(1, 1, False), settings)
        assert memory.block_size == block  # the release's default block size
    assert memory.attention_page_per_token == 0
    assert memory.page_bytes == memory.mamba_state.bytes > 0
    assert memory.num_blocks > 0
    assert memory.max_concurrency > 0


def test_a_pipeline_stage_without_cache_layers_holds_no_blocks_and_does_not_bind() -> None:
    # Nano's layers reordered so that the last of four stages holds MoE layers only.
    nano = model(NANO_BF16)
    cache_first = "".join(sorted(nano.layer_pattern, key=lambda kind: kind == "E"))
    reordered = replace(nano, layer_pattern=cache_first)
    settings = resolve_settings(EngineSpec.model_validate({}), reordered)
    memory = evaluate(reordered, gpu(B300), Layout(1, 4, False), settings)
    last = memory.stages[-1]
    assert last.attention_layers == last.mamba_layers == 0
    assert last.num_blocks is None
    assert memory.binding.stage != last.stage
    assert memory.num_blocks > 0


def test_expert_parallelism_puts_whole_experts_on_a_rank() -> None:
    # 512 experts over 3 ranks: EP gives each rank cdiv(512, 3) = 171 whole experts, more than
    # the third of every expert that TP sharding gives (docs/sizing.md §2, weights table).
    # MTP off: the MoE layers alone make the difference.
    super_ = model(SUPER_BF16)
    no_mtp = EngineSpec.model_validate({"speculative_decoding": {"method": "none"}})
    settings = resolve_settings(no_mtp, super_)
    with_ep = evaluate(super_, gpu(B300), Layout(3, 1, True), settings)
    without = evaluate(super_, gpu(B300), Layout(3, 1, False), settings)
    assert with_ep.stages[0].weights_bytes > without.stages[0].weights_bytes
    # The MTP head's routed experts are placed the same way.
    assert rank_part_bytes(super_, MTP, 3, True) > rank_part_bytes(super_, MTP, 3, False)
    loaded = stage_weights(super_, 3, 1, True, include_mtp=True)[-1].bytes
    skipped = stage_weights(super_, 3, 1, True, include_mtp=False)[-1].bytes
    assert loaded - skipped == rank_part_bytes(super_, MTP, 3, True)


def test_the_mtp_head_is_loaded_unless_asked_otherwise() -> None:
    super_ = model(SUPER_BF16)
    assert stage_weights(super_, 2, 2, True) == stage_weights(super_, 2, 2, True, include_mtp=True)


def test_expert_parallelism_changes_only_how_routed_experts_are_placed() -> None:
    nano = model(NANO_BF16)
    no_experts = _with_dims(nano, n_routed_experts=0)
    for t in (1, 2, 3, 5, 6, 7, 8):
        for kind in ("M", "*"):
            expected = rank_part_bytes(no_experts, kind, t, False)
            assert rank_part_bytes(nano, kind, t, False) == expected, (kind, t)
            assert rank_part_bytes(nano, kind, t, True) == expected, (kind, t)


def test_weights_on_a_rank_are_whole_bytes() -> None:
    for hf_id in (SUPER_BF16, NANO_BF16, H8B):
        entry = model(hf_id)
        for t in (1, 2, 3, 4, 8):
            for ep in (False, True):
                for kind in ("M", "*", "E", "-", MTP):
                    assert type(rank_part_bytes(entry, kind, t, ep)) is int, (hf_id, kind, t)
