"""The LoRA term of the reserve (sizing/lora.py) against vLLM's own tensor shapes, enumerated here
independently: one entry per ``torch.zeros`` of ``create_lora_weights`` for each wrapped module of
Nemotron 3 Super, with the config's numbers typed in (docs/model-facts.md §1.1), not read from
the catalog. docs/sizing.md §11 cites the vLLM functions."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest

from nemotron_operator.api.errors import parse_deployment
from nemotron_operator.catalog import MODELS
from nemotron_operator.sizing import plan_deployment
from nemotron_operator.sizing.lora import LoraLimits, lora_buffer_bytes

SUPER = next(m for m in MODELS if m.hf_id == "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16")
GIB = 1024**3

# Nemotron 3 Super's config.json (model-facts.md §1.1).
H, HEADS, KV_HEADS, HEAD_DIM = 4096, 32, 2, 128
M_HEADS, M_HEAD_DIM, STATE, GROUPS = 128, 64, 128, 8
EXPERTS, MOE_INTER, SHARED_INTER, LATENT = 512, 2688, 5376, 1024
VOCAB = 131072
MAMBA, MOE, ATTENTION = 40, 40, 8


def shapes(t: int, loras: int, r: int, ep: bool) -> list[tuple[int, ...]]:
    """Every LoRA buffer vLLM allocates on one rank of a single-stage layout."""
    out: list[tuple[int, ...]] = []

    def column(in_size: int, out_per_rank: int, slices: int = 1) -> None:
        # BaseLinearLayerWithLoRA: lora_a (max_loras, 1, rank, input), lora_b (max_loras, 1,
        # output, rank) per slice; for qkv the outputs of the slices are q, k, v.
        out.extend((loras, 1, r, in_size) for _ in range(slices))
        out.append((loras, 1, out_per_rank, r))

    def row(in_per_rank: int, out_size: int) -> None:
        out.extend([(loras, 1, r, in_per_rank), (loras, 1, out_size, r)])

    d_inner = M_HEADS * M_HEAD_DIM
    for _ in range(ATTENTION):
        q, kv = HEADS * HEAD_DIM // t, max(1, KV_HEADS // t) * HEAD_DIM
        out.extend((loras, 1, r, H) for _ in range(3))  # qkv_proj: q, k, v slices
        out.extend([(loras, 1, q, r), (loras, 1, kv, r), (loras, 1, kv, r)])
        row(HEADS * HEAD_DIM // t, H)  # o_proj
    for _ in range(MAMBA):
        column(H, (2 * d_inner + 2 * GROUPS * STATE + M_HEADS) // t)  # in_proj
        row(d_inner // t, H)  # out_proj
    local = EXPERTS // t if ep else EXPERTS
    inter = MOE_INTER if ep else MOE_INTER // t
    for _ in range(MOE):
        # FusedMoEWithLoRA, non-gated: w13 one slice; hidden is the latent size.
        out += [(loras, local, r, LATENT), (loras, local, inter, r)]  # w13 A, B
        out += [(loras, local, r, inter), (loras, local, LATENT, r)]  # w2 A, B
        column(H, SHARED_INTER // t)  # shared_experts.up_proj
        row(SHARED_INTER // t, H)  # shared_experts.down_proj
        out += [(loras, 1, r, H), (loras, 1, LATENT, r)]  # fc1_latent_proj (replicated)
        out += [(loras, 1, r, LATENT), (loras, 1, H, r)]  # fc2_latent_proj
    out += [(loras, VOCAB, r), (loras, 1, H, r)]  # embed_tokens
    out += [(loras, 1, r, H), (loras, 1, VOCAB // t, r)]  # lm_head
    return out


@pytest.mark.parametrize(
    ("t", "loras", "rank", "ep"),
    [(1, 1, 16, False), (4, 4, 64, False), (8, 2, 8, True), (2, 8, 512, False)],
)
def test_buffers_match_vllms_tensor_shapes(t: int, loras: int, rank: int, ep: bool) -> None:
    expected = sum(math.prod(s) for s in shapes(t, loras, rank, ep)) * 2  # bfloat16
    got = lora_buffer_bytes(
        SUPER,
        Counter(SUPER.layer_pattern),
        tensor_parallel=t,
        expert_parallel=ep,
        first_stage=True,
        last_stage=True,
        limits=LoraLimits(loras, rank),
    )
    assert got == expected


def test_the_routed_experts_dominate_and_scale_with_loras_and_rank() -> None:
    def at(loras: int, rank: int) -> int:
        return lora_buffer_bytes(
            SUPER,
            Counter(SUPER.layer_pattern),
            tensor_parallel=4,
            expert_parallel=False,
            first_stage=True,
            last_stage=True,
            limits=LoraLimits(loras, rank),
        )

    assert at(2, 64) == 2 * at(1, 64)
    assert at(1, 64) == 4 * at(1, 16)
    # Super at TP4, one adapter of rank 64: 8.49 GiB per GPU, 40 MoE layers × 512 experts.
    assert at(1, 64) / GIB == pytest.approx(8.49, abs=0.01)


def _plan(engine: dict[str, Any], adapters: list[dict[str, Any]] | None = None) -> Any:
    spec: dict[str, Any] = {
        "model": {"id": SUPER.hf_id},
        "engine": {"maxModelLen": 131072, **engine},
        "capacity": {"gpu": {"products": ["NVIDIA-H200"], "count": 4}},
    }
    if adapters:
        spec["adapters"] = adapters
    deployment = parse_deployment(
        {
            "apiVersion": "serving.nemotron.io/v1alpha1",
            "kind": "NemotronDeployment",
            "metadata": {"name": "p", "namespace": "a"},
            "spec": spec,
        }
    )
    return plan_deployment(deployment.spec).plan


def test_the_plan_shows_the_term_and_the_pool_shrinks_by_it() -> None:
    base = _plan({})
    lora = _plan({"lora": {"maxLoras": 2, "maxLoraRank": 32}})
    parts = {c.name: c.bytes for c in lora.per_gpu.reserve_components}
    assert "loraBuffers" in parts
    assert "loraCudaGraphs" in parts
    assert not {"loraBuffers", "loraCudaGraphs"} & {c.name for c in base.per_gpu.reserve_components}
    added = parts["loraBuffers"] + parts["loraCudaGraphs"]
    assert lora.per_gpu.reserve_bytes - base.per_gpu.reserve_bytes == added
    # The pool loses the same bytes, rounded down to whole blocks.
    assert (
        0
        <= base.per_gpu.kv_pool_bytes - lora.per_gpu.kv_pool_bytes - added
        < (base.per_gpu.kv_pool_bytes / base.kv_cache_blocks)
    )


def test_adapters_alone_count_vllms_default_limits() -> None:
    adapter = {"name": "a", "rank": 8, "source": {"huggingFace": {"id": "o/a"}}}
    plan = _plan({}, [adapter])
    parts = {c.name: c.bytes for c in plan.per_gpu.reserve_components}
    expected = lora_buffer_bytes(
        SUPER,
        Counter(SUPER.layer_pattern),
        tensor_parallel=plan.tensor_parallel,
        expert_parallel=plan.expert_parallel,
        first_stage=True,
        last_stage=True,
        limits=LoraLimits(1, 16),
    )
    assert parts["loraBuffers"] == expected


def test_calibration_point_10_with_its_lora_buffers() -> None:
    """Ultra BF16 on 8×B200, TP8, max_loras 1, rank 64 (calibration point 10, docs/sizing.md §9):
    vLLM held 25.4 GiB per GPU besides weights and the 8.49 GiB pool. Without the LoRA term the
    planner's reserve was 11.7 GiB; with it the gap is the ≈3 GiB that §9 puts on that layout's
    FULL decode graphs, and the planner stays on the optimistic side of the log."""
    engine = {
        "maxModelLen": 262144,
        "gpuMemoryUtilization": 0.92,
        "maxNumSeqs": 512,
        "enablePrefixCaching": False,
        "speculativeDecoding": {"method": "none"},
        "lora": {"maxLoras": 1, "maxLoraRank": 64},
    }
    spec = {
        "model": {"id": "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16"},
        "engine": engine,
        "capacity": {
            "gpu": {"products": ["NVIDIA-B200"], "count": 8},
            "parallelism": {"tensor": 8, "expert": False},
        },
    }
    deployment = parse_deployment(
        {
            "apiVersion": "serving.nemotron.io/v1alpha1",
            "kind": "NemotronDeployment",
            "metadata": {"name": "p10", "namespace": "a"},
            "spec": spec,
        }
    )
    per_gpu = plan_deployment(deployment.spec).plan.per_gpu
    logged_besides = (per_gpu.usable_bytes - per_gpu.weights_bytes) / GIB - 8.49
    reserve = per_gpu.reserve_bytes / GIB
    assert logged_besides == pytest.approx(25.36, abs=0.01)
    assert reserve == pytest.approx(22.39, abs=0.01)
    assert 0 < logged_besides - reserve < 3.1
