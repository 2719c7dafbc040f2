"""The per-GPU reserve: memory vLLM holds besides weights and the KV/Mamba pool.

vLLM measures it at startup (model-facts.md §2.4 [P]): ``available_kv = requested − non_kv −
cudagraph_estimate``, where ``non_kv`` is weights + non-torch growth (NCCL, cuBLAS) + the transient
torch peak of a dummy forward of ``max_num_batched_tokens``, a dummy sampler pass
(``max_num_seqs`` × vocab logits) and, for multimodal models, one vision-encoder pass. There is no
fixed percentage; these components estimate each measured term from the shapes. The constants
marked [E] are our estimates; those marked [F] are fitted to vLLM's own startup logs (the
calibration table in docs/sizing.md §9 and tests/unit/sizing/test_calibration.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from nemotron_operator.catalog.gpus import GIB, MIB
from nemotron_operator.catalog.models import ModelEntry

ACTIVATION_DTYPE_BYTES = 2  # bfloat16 activations
LOGITS_BYTES_PER_ELEMENT = 8  # fp32 logits plus one fp32 working copy (probabilities) [E]
MAMBA_CHUNK_SIZE = 128  # chunk_size of every Nemotron-H config (model-facts.md §1.1) [S]
# Captured graphs' private pool. vLLM logs 0.44 GiB (Lightning, v0.27.1) and 0.48 GiB (Nano-3
# architecture, v0.20.1) for single-GPU 30B-A3B layouts [F]; older releases logged 0.58-1.00 GiB.
CUDA_GRAPHS_BYTES = 512 * MIB
# The profile run's torch peak exceeds the modelled activations + sampler logits by 0.41 GiB in
# both logs that print it (Lightning on GB10: 2.23 GiB logged vs 1.82 modelled; the 30B-A3B on an
# RTX 5090: 4.33 GiB measured vs 3.91 with non-torch) [F]: allocator rounding and workspaces.
PROFILE_BASE_BYTES = 410 * MIB
NON_TORCH_BYTES = 512 * MIB  # cuBLAS/cuDNN workspaces and allocator slack [E]
NCCL_BYTES = 768 * MIB  # NCCL channels and custom all-reduce buffers when ranks > 1 [E]
VIT_LIVE_TENSORS = 8  # ViT activations alive at once during the encoder pass [E]
UNKNOWN_VISION_BYTES = 1024 * MIB  # explicit architectures with a vision tower of unknown shape [E]

# vLLM 0.34's extensible KV cache (v1/worker/extensible_kv_cache.py ``measure_kv_cache_bytes``
# [P]): after warm-up and graph capture it gives the pool
# ``min(requested − non_kv_used, headroom − margin) − transient_peak`` with
# ``margin = max(KV_CACHE_MARGIN_FLOOR_BYTES, KV_CACHE_MARGIN_FRACTION × transient_peak)`` and
# ``headroom`` = the memory free at start-up (after the CUDA context) − non_kv_used.
KV_CACHE_MARGIN_FLOOR_BYTES = 1 * GIB  # CUDA's floor (ROCm: 3 GiB) [P]
KV_CACHE_MARGIN_FRACTION = 0.75  # [P]
# The CUDA context and driver allocations made before vLLM's start-up snapshot: outside the pool
# with the device bound. A GPU is needed to know it; 0.5 GiB is the usual size on Hopper and
# Blackwell with lazy module loading [E].
CUDA_CONTEXT_BYTES = 512 * MIB
# The reserve components that are the transient peak (freed before the pool is measured).
TRANSIENT = frozenset({"activations", "samplerLogits", "visionEncoder", "profileBase"})


@dataclass(frozen=True)
class ReserveInputs:
    tensor_parallel: int
    world_size: int
    expert_parallel: bool
    max_num_seqs: int
    max_num_batched_tokens: int
    speculative_tokens: int
    first_stage: bool
    last_stage: bool
    stage_kinds: frozenset[str]  # layer kinds present on the stage


def activation_bytes_per_token(model: ModelEntry, inputs: ReserveInputs) -> int:
    """Transient bytes per batched token on one rank: three hidden-size buffers (residual,
    hidden, normed) plus the widest layer's intermediates."""
    t = inputs.tensor_parallel
    dims = model.dims
    a = ACTIVATION_DTYPE_BYTES
    widest = 0
    if "M" in inputs.stage_kinds:
        in_proj = 2 * dims.mamba_d_inner + 2 * dims.mamba_n_groups * dims.ssm_state_size
        in_proj += dims.mamba_num_heads
        # in_proj output, fp32 scan output, chunk states (heads × head_dim × state per chunk).
        states = dims.mamba_num_heads * dims.mamba_head_dim * dims.ssm_state_size * 4
        mamba = in_proj * a // t + dims.mamba_d_inner * 4 // t + states // t // MAMBA_CHUNK_SIZE
        widest = max(widest, mamba)
    if "*" in inputs.stage_kinds:
        qkv = (dims.num_attention_heads + 2 * dims.num_key_value_heads) * dims.head_dim
        widest = max(widest, (qkv + dims.num_attention_heads * dims.head_dim) * a // t)
    if "E" in inputs.stage_kinds and dims.moe_intermediate_size:
        # fused_moe workspaces (M, topk, N), (M·topk, N), (M, topk, K); whole experts under EP.
        inter = dims.moe_intermediate_size
        inter_rank = inter if inputs.expert_parallel else inter // t
        expert_dim = dims.moe_latent_size or dims.hidden_size
        moe = dims.num_experts_per_tok * (2 * inter_rank + expert_dim) * a
        shared = dims.n_shared_experts * (dims.moe_shared_expert_intermediate_size or 0)
        widest = max(widest, moe + 2 * shared * a // t)
    elif "E" in inputs.stage_kinds:
        # Explicit architecture without expert sizes: assume hidden-sized experts.
        widest = max(widest, dims.num_experts_per_tok * 3 * dims.hidden_size * a)
    if "-" in inputs.stage_kinds and dims.intermediate_size:
        widest = max(widest, 2 * dims.intermediate_size * a // t)
    return 3 * dims.hidden_size * a + widest


def vision_encoder_bytes(model: ModelEntry, max_num_batched_tokens: int) -> int:
    """Encoder cache (one budget of image embeddings) plus the ViT pass over as many
    largest-size images as the budget holds."""
    tower = model.vision_tower
    if tower is None:
        return UNKNOWN_VISION_BYTES
    budget = max(max_num_batched_tokens, tower.max_tokens_per_image)
    cache = budget * model.hidden_size * ACTIVATION_DTYPE_BYTES
    images = max(1, budget // tower.max_tokens_per_image)
    vit = images * tower.max_patches_per_image * tower.width * ACTIVATION_DTYPE_BYTES
    return cache + vit * VIT_LIVE_TENSORS


def reserve_components(model: ModelEntry, inputs: ReserveInputs) -> tuple[tuple[str, int], ...]:
    """Named components, bytes on one GPU of the stage."""
    parts: list[tuple[str, int]] = [
        (
            "activations",
            inputs.max_num_batched_tokens * activation_bytes_per_token(model, inputs),
        )
    ]
    if inputs.last_stage:
        rows = inputs.max_num_seqs * (1 + inputs.speculative_tokens)
        parts.append(("samplerLogits", rows * model.vocab_size * LOGITS_BYTES_PER_ELEMENT))
    if inputs.first_stage and model.vision:
        parts.append(("visionEncoder", vision_encoder_bytes(model, inputs.max_num_batched_tokens)))
    parts.append(("profileBase", PROFILE_BASE_BYTES))
    parts.append(("cudaGraphs", CUDA_GRAPHS_BYTES))
    parts.append(("nonTorch", NON_TORCH_BYTES))
    if inputs.world_size > 1:
        parts.append(("nccl", NCCL_BYTES))
    return tuple(parts)


def extensible_margin(
    memory_bytes: int, usable_bytes: int, reserve: tuple[tuple[str, int], ...]
) -> int:
    """The ``kvCacheMargin`` component of vLLM 0.34's extensible KV cache: how far the device
    bound ``memory − CUDA context − margin`` lies below the requested budget (``usable``), so that
    ``usable − weights − reserve`` is the pool ``measure_kv_cache_bytes`` gives. Zero when an
    explicit ``gpuMemoryUtilization`` leaves more than the margin free."""
    transient = sum(b for name, b in reserve if name in TRANSIENT)
    margin = max(KV_CACHE_MARGIN_FLOOR_BYTES, int(transient * KV_CACHE_MARGIN_FRACTION))
    device_bound = memory_bytes - CUDA_CONTEXT_BYTES - margin
    return max(0, usable_bytes - device_bound)
