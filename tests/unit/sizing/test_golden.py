"""The numbers of model-facts.md §2–3, reproduced by the memory model from the primary configs.

Every expected value here is derived in the facts file from vLLM v0.31's code or NVIDIA's
documents; the code computes them from layer patterns and dimensions, never from these constants.
"""

from __future__ import annotations

from typing import Any

import pytest

from nemotron_operator.sizing import plan_deployment

from .helpers import (
    H8B,
    H100,
    NANO_BF16,
    SUPER_BF16,
    SUPER_FP8,
    SUPER_NVFP4,
    SUPER_VL_BF16,
    layout_memory,
    spec,
)

KIB = 1024
MIB = 1024**2


def test_kv_per_token_is_8_kib_at_tp1_and_9_kib_with_mtp() -> None:
    assert layout_memory(SUPER_VL_BF16, draft_tokens=0).kv_bytes_per_token == 8 * KIB
    assert layout_memory(SUPER_VL_BF16, draft_tokens=1).kv_bytes_per_token == 9 * KIB


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_kv_per_gpu_is_4_kib_at_tp_2_and_above(tp: int) -> None:
    # 2 KV heads: one per rank at TP2, replicated beyond (get_num_kv_heads).
    assert layout_memory(SUPER_VL_BF16, tp, draft_tokens=0).kv_bytes_per_token == 4 * KIB
    assert layout_memory(SUPER_VL_BF16, tp, draft_tokens=1).kv_bytes_per_token == 4 * KIB + 512


def test_fp8_kv_halves_kv_per_token() -> None:
    fp8 = layout_memory(SUPER_VL_BF16, draft_tokens=0, kv_cache_dtype="fp8")
    assert fp8.kv_bytes_per_token == 4 * KIB


@pytest.mark.parametrize(
    ("hf_id", "kib"),
    [(NANO_BF16, 6), (H8B, 16), ("nvidia/Nemotron-H-56B-Base-8K", 40)],
)
def test_sibling_kv_per_token(hf_id: str, kib: int) -> None:
    assert layout_memory(hf_id, draft_tokens=0).kv_bytes_per_token == kib * KIB


def test_mamba_state_is_about_170_mb_per_sequence_at_tp1_fp32() -> None:
    memory = layout_memory(SUPER_VL_BF16, draft_tokens=0)
    assert memory.mamba_state.conv_bytes == 61_440  # 3 × 10240 × 2
    assert memory.mamba_state.ssm_bytes == 4_194_304  # 128 × 64 × 128 × 4
    assert memory.mamba_state_bytes_per_sequence == pytest.approx(170e6, rel=0.005)
    assert memory.mamba_state_bytes_per_sequence // MIB == 162


def test_mamba_state_with_fp16_ssm_is_86_mb() -> None:
    memory = layout_memory(SUPER_VL_BF16, draft_tokens=0, mamba_ssm_cache_dtype="float16")
    assert memory.mamba_state_bytes_per_sequence == pytest.approx(86e6, rel=0.01)


@pytest.mark.parametrize(
    ("hf_id", "megabytes"),
    [(NANO_BF16, 49), (H8B, 102), ("nvidia/Nemotron-H-56B-Base-8K", 913)],
)
def test_sibling_mamba_state(hf_id: str, megabytes: int) -> None:
    memory = layout_memory(hf_id, draft_tokens=0)
    assert memory.mamba_state_bytes_per_sequence / 1e6 == pytest.approx(megabytes, rel=0.01)


def test_mamba_state_divides_by_tp() -> None:
    tp1 = layout_memory(SUPER_VL_BF16, draft_tokens=0).mamba_state_bytes_per_sequence
    tp4 = layout_memory(SUPER_VL_BF16, 4, draft_tokens=0).mamba_state_bytes_per_sequence
    assert tp4 * 4 == tp1


@pytest.mark.parametrize(
    ("tp", "draft", "engine", "block"),
    [
        (1, 0, {}, 4160),
        (8, 0, {}, 1040),
        (1, 3, {}, 4224),
        (1, 0, {"kv_cache_dtype": "fp8"}, 8320),
        (1, 0, {"mamba_ssm_cache_dtype": "float16"}, 2112),
    ],
)
def test_hybrid_block_size_matches_vllm(
    tp: int, draft: int, engine: dict[str, Any], block: int
) -> None:
    memory = layout_memory(SUPER_VL_BF16, tp, draft_tokens=draft, **engine)
    assert memory.block_size == block
    # The Mamba page is padded up to exactly one attention page.
    assert memory.page_bytes == block * memory.attention_page_per_token
    assert memory.page_bytes >= memory.mamba_state.bytes


def test_super_page_is_4_06_mib_at_tp1() -> None:
    assert layout_memory(SUPER_VL_BF16, draft_tokens=0).page_bytes / MIB == pytest.approx(
        4.06, abs=0.005
    )


def test_super_groups_one_attention_and_five_mamba() -> None:
    for draft in (0, 1):
        groups = layout_memory(SUPER_VL_BF16, draft_tokens=draft).groups
        kinds = [g.kind for g in groups]
        assert kinds == ["attention"] + ["mamba"] * 5
        assert len(groups[0].layers) == 8 + draft


@pytest.mark.parametrize(
    ("tp", "tokens", "draft", "engine", "gigabytes"),
    [
        (1, 262144, 1, {}, 3.00),
        (1, 262144, 1, {"kv_cache_dtype": "fp8", "mamba_ssm_cache_dtype": "float16"}, 1.51),
        (8, 262144, 1, {}, 1.29),
        (1, 114688, 5, {}, 2.43),
        (1, 114688, 3, {}, 2.06),
    ],
)
def test_bytes_per_full_length_request(
    tp: int, tokens: int, draft: int, engine: dict[str, Any], gigabytes: float
) -> None:
    memory = layout_memory(SUPER_VL_BF16, tp, draft_tokens=draft, max_model_len=tokens, **engine)
    # The facts round to 10 MB; TP8 comes out 1.285 GB here (the facts say 1.29).
    assert memory.bytes_per_sequence / 1e9 == pytest.approx(gigabytes, abs=0.006)


def test_concurrency_is_vllm_s_formula() -> None:
    memory = layout_memory(SUPER_VL_BF16, 2)
    attention_blocks = -(-memory.settings.max_model_len // memory.block_size)
    per_request = attention_blocks + 5 * memory.mamba_slots
    assert memory.blocks_per_request == per_request
    assert memory.max_concurrency == memory.num_blocks / per_request
    assert memory.kv_cache_tokens == int(memory.max_concurrency * memory.settings.max_model_len)


def test_prefix_caching_off_reserves_one_state_slot_fewer() -> None:
    on = layout_memory(SUPER_VL_BF16, 2, draft_tokens=1)
    off = layout_memory(SUPER_VL_BF16, 2, draft_tokens=1, enable_prefix_caching=False)
    assert (on.mamba_slots, off.mamba_slots) == (3, 2)
    assert off.blocks_per_request == on.blocks_per_request - 5


@pytest.mark.parametrize(
    ("hf_id", "gpus_needed", "max_num_seqs"),
    [(SUPER_BF16, 4, 512), (SUPER_FP8, 2, 256)],
)
def test_nvidia_minimum_h100_layouts(hf_id: str, gpus_needed: int, max_num_seqs: int) -> None:
    # NMT vllm_cookbook: BF16 ≥ 4×H100, FP8 ≥ 2×H100 (model-facts.md §3 [P]), at the default
    # context (262,144 tokens) and the default minConcurrency, with the cookbook's FP8 KV cache.
    # The cookbook passes --max-num-seqs 512 on vLLM 0.17.1; since vLLM 0.19 a pool with fewer
    # Mamba blocks than max_num_seqs refuses to start, and the FP8 pool on 2×H100 holds 351, so
    # that layout needs 256 (docs/sizing.md §9 records the disagreement).
    engine = {"kvCacheDtype": "fp8", "maxNumSeqs": max_num_seqs}
    result = plan_deployment(spec(hf_id, engine=engine, capacity={"gpu": {"products": [H100]}}))
    assert result.plan.gpus_per_replica == gpus_needed
    assert result.plan.tensor_parallel == gpus_needed
    assert result.plan.max_model_len == 262144
    fewer = [
        r for r in result.plan.rejected if r.tensor_parallel * r.pipeline_parallel < gpus_needed
    ]
    assert fewer, "the smaller layouts must be listed as rejected"
    assert all("weights need" in r.reason for r in fewer)


def test_nvfp4_fits_one_b200() -> None:
    result = plan_deployment(spec(SUPER_NVFP4, capacity={"gpu": {"products": ["NVIDIA-B200"]}}))
    assert result.plan.gpus_per_replica == 1
    assert result.plan.max_concurrency >= 2
