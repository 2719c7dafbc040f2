"""The reserve's activation term and vLLM's scheduler defaults at their edges, each written from
the rule (docs/sizing.md §1, sizing/reserve.py): found by mutation testing (docs/testing.md)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nemotron_operator.api import EngineSpec
from nemotron_operator.catalog import ModelEntry
from nemotron_operator.catalog.gpus import GIB
from nemotron_operator.sizing import PlanningError, resolve_settings
from nemotron_operator.sizing.reserve import (
    ACTIVATION_DTYPE_BYTES,
    ReserveInputs,
    activation_bytes_per_token,
)
from nemotron_operator.sizing.settings import vllm_defaults

from .helpers import H8B, H100, NANO_BF16, SUPER_BF16, gpu, model

A = ACTIVATION_DTYPE_BYTES


def _inputs(kinds: str, tensor_parallel: int = 1, expert_parallel: bool = False) -> ReserveInputs:
    return ReserveInputs(
        tensor_parallel=tensor_parallel,
        world_size=tensor_parallel,
        expert_parallel=expert_parallel,
        max_num_seqs=256,
        max_num_batched_tokens=8192,
        speculative_tokens=0,
        first_stage=True,
        last_stage=True,
        stage_kinds=frozenset(kinds),
    )


def _with_dims(entry: ModelEntry, **changes: int | None) -> ModelEntry:
    return replace(entry, dims=replace(entry.dims, **changes))


def test_activations_are_whole_bytes_for_each_layer_kind_alone() -> None:
    # Each kind alone on a stage, so its own term is the widest; TP sizes that divide nothing.
    for hf_id, kinds in ((SUPER_BF16, "M*E"), (NANO_BF16, "M*E"), (H8B, "M*-")):
        for kind in kinds:
            for t in (1, 3, 5, 7):
                for ep in (False, True):
                    value = activation_bytes_per_token(model(hf_id), _inputs(kind, t, ep))
                    assert type(value) is int, (hf_id, kind, t, ep)


def test_attention_intermediates_are_q_k_v_and_the_attention_output() -> None:
    # (heads + 2 × kv_heads) × head_dim for q, k, v, plus heads × head_dim for the output,
    # in bf16, beside the three hidden-size buffers.
    for hf_id in (SUPER_BF16, H8B):
        d = model(hf_id).dims
        qkv = (d.num_attention_heads + 2 * d.num_key_value_heads) * d.head_dim
        expected = 3 * d.hidden_size * A + (qkv + d.num_attention_heads * d.head_dim) * A
        assert activation_bytes_per_token(model(hf_id), _inputs("*")) == expected


def test_each_kv_head_adds_a_key_and_a_value() -> None:
    nano = model(NANO_BF16)
    two = activation_bytes_per_token(_with_dims(nano, num_key_value_heads=2), _inputs("*"))
    four = activation_bytes_per_token(_with_dims(nano, num_key_value_heads=4), _inputs("*"))
    assert four - two == 2 * 2 * nano.head_dim * A


def test_experts_of_unknown_size_are_sized_as_hidden_sized_experts() -> None:
    # An explicit architecture without moe_intermediate_size: "assume hidden-sized experts".
    nano = model(NANO_BF16)
    unknown = _with_dims(nano, moe_intermediate_size=None)
    hidden_sized = _with_dims(
        nano,
        moe_intermediate_size=nano.hidden_size,
        moe_latent_size=None,
        n_shared_experts=0,
    )
    assert activation_bytes_per_token(unknown, _inputs("E")) == activation_bytes_per_token(
        hidden_sized, _inputs("E")
    )


def test_a_shared_expert_without_a_size_adds_nothing() -> None:
    nano = model(NANO_BF16)
    unsized = _with_dims(nano, moe_shared_expert_intermediate_size=None)
    without = _with_dims(nano, moe_shared_expert_intermediate_size=None, n_shared_experts=0)
    assert activation_bytes_per_token(unsized, _inputs("E")) == activation_bytes_per_token(
        without, _inputs("E")
    )


def test_vllm_scheduler_defaults_switch_at_160_and_70_gib() -> None:
    # docs/sizing.md §1: ≥160 GiB → 1024/16384; ≥70 GiB and not an A100 → 1024/8192; else
    # 256/2048 (vLLM engine/arg_utils.py).
    h100 = gpu(H100)
    assert vllm_defaults(replace(h100, memory_bytes=160 * GIB)) == (1024, 16384)
    assert vllm_defaults(replace(h100, memory_bytes=160 * GIB - 1)) == (1024, 8192)
    assert vllm_defaults(replace(h100, memory_bytes=70 * GIB)) == (1024, 8192)
    assert vllm_defaults(replace(h100, memory_bytes=70 * GIB - 1)) == (256, 2048)
    assert vllm_defaults(replace(h100, memory_bytes=24 * GIB)) == (256, 2048)


def test_mtp_on_a_model_without_an_mtp_head_says_how_to_fix_it() -> None:
    engine = EngineSpec.model_validate(
        {"speculative_decoding": {"method": "mtp", "num_speculative_tokens": 1}}
    )
    with pytest.raises(PlanningError) as caught:
        resolve_settings(engine, model(NANO_BF16))
    assert caught.value.field == "spec.engine.speculativeDecoding"
    assert "MTP speculative decoding cannot run; remove spec.engine.speculativeDecoding" in (
        caught.value.message
    )
    assert caught.value.message.endswith("or set its method to none")
